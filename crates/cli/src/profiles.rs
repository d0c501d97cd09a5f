//! `ndpdb profiles ...`: the hardware profiles that ship with ndpdb, one
//! line each, or one's TOML to copy and edit.

use anyhow::Result;
use clap::Subcommand;
use ndpdb_bench::{out, outln, output};
use ndpdb_device::Profile;

#[derive(Subcommand)]
pub enum ProfilesCmd {
    /// One line per shipped profile
    List {
        /// Print one JSON object per profile (its name and parameters) instead of the table
        #[arg(long)]
        json: bool,
    },
    /// Print a profile's TOML (copy it, edit it, pass the file to --profile)
    Show {
        /// A shipped profile's name
        name: String,
    },
}

pub fn run(cmd: ProfilesCmd) -> Result<()> {
    match cmd {
        ProfilesCmd::List { json: false } => {
            out!("{}", table()?);
            Ok(())
        }
        ProfilesCmd::List { json: true } => {
            for (name, _) in ndpdb_device::profile::BUILTIN {
                outln!("{}", serde_json::to_string(&Profile::load(name)?)?);
            }
            Ok(())
        }
        ProfilesCmd::Show { name } => match Profile::builtin_text(&name) {
            Some(text) => {
                out!("{text}");
                Ok(())
            }
            None => Err(Profile::load(&name)
                .err()
                .map(anyhow::Error::from)
                .unwrap_or_else(|| anyhow::anyhow!("`{name}` is a file, not a shipped profile; print it with cat"))),
        },
    }
}

/// A line per shipped profile: medium, geometry, PEs, DRAM and links.
fn table() -> Result<String> {
    let mut rows = Vec::new();
    for (name, _) in ndpdb_device::profile::BUILTIN {
        let p = Profile::load(name)?;
        rows.push(vec![
            p.name.clone(),
            p.kind().name().to_string(),
            format!("{}x{}", p.channels(), p.chips_per_channel()),
            p.pe.count.to_string(),
            format!("{} MiB", p.dram.ndp_mib),
            p.link.name.clone(),
            p.coherent.as_ref().map(|c| c.name.clone()).unwrap_or_else(|| "-".into()),
        ]);
    }
    Ok(output::table(&["profile", "medium", "channels x chips", "PEs", "NDP DRAM", "link", "coherent"], &rows))
}
