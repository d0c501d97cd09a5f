//! `ndpdb sql`: an interactive SQL shell on an embedded database, in the
//! manner of psql: line editing and history, statements end at `;`,
//! aligned output, `\timing`, `\d`, `\dt`, `\di`, `\dv`, `\i file`, `\q`;
//! `-c "SQL"` and `-f file.sql` run without a prompt.
//!
//! The shell owns no SQL logic: it splits input into complete statements
//! ([`split`]), hands them to one [`Session`] and prints what comes back
//! ([`print`]) or the error as psql does (`ERROR:  message`, then `HINT:`).

mod meta;
mod print;
mod split;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use ndpdb_bench::{errln, outln};
use ndpdb_device::ClockKind;
use ndpdb_sql::SqlError;
use ndpdb_sql::session::{Engine, EngineOptions, Session, StatementResult, TxnStatus};
use ndpdb_sql::types::format::pg_text;

#[derive(Args)]
pub struct SqlArgs {
    /// Database directory (created if missing)
    #[arg(long, default_value = "ndpdb-data")]
    pub db: PathBuf,
    /// Profile name or .toml path (default: the image's own; `default` for a new database)
    #[arg(long)]
    pub profile: Option<String>,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    pub clock: ClockKind,
    /// Run this SQL (one or more statements) and exit; exits 1 if a statement fails
    #[arg(short = 'c', long = "command")]
    pub command: Option<String>,
    /// Run the statements of this file and exit; goes on after a failed statement, as psql does,
    /// and exits 1 at the end if any failed
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
}

pub fn run(a: SqlArgs) -> Result<()> {
    let existed = a.db.join(ndpdb_device::IMAGE_FILE).exists();
    let opts = EngineOptions {
        dir: a.db.clone(),
        profile: a.profile.clone(),
        clock: a.clock,
        create_if_missing: true,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&opts).with_context(|| format!("opening database {}", a.db.display()))?;
    if !existed {
        errln!("created a new database in {} (profile {})", a.db.display(), engine.profile_name());
    }
    let mut shell = Shell { session: engine.session(), timing: false, failed: false };
    let outcome = match (&a.command, &a.file) {
        (Some(_), Some(_)) => Err(anyhow::anyhow!("give either -c or -f, not both")),
        (Some(sql), None) => {
            shell.run_text(sql);
            if shell.failed { Err(anyhow::anyhow!("the statement failed (see above)")) } else { Ok(()) }
        }
        (None, Some(f)) => shell.run_file(f),
        (None, None) => shell.interactive(&a.db),
    };
    drop(shell);
    engine.close().context("closing the database (checkpoint)")?;
    outcome?;
    Ok(())
}

struct Shell {
    session: Session,
    timing: bool,
    /// Whether any statement failed (the exit code of -c and -f).
    failed: bool,
}

impl Shell {
    fn interactive(&mut self, db: &Path) -> Result<()> {
        let mut rl = rustyline::DefaultEditor::new().context("starting the line editor")?;
        let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".ndpdb_history"));
        if let Some(h) = &history {
            let _ = rl.load_history(h);
        }
        outln!("ndpdb sql on {} (type \\? for help, \\q to quit)", db.display());
        let mut buf = String::new();
        loop {
            let prompt = self.prompt(!buf.is_empty());
            let line = match rl.readline(&prompt) {
                Ok(l) => l,
                Err(rustyline::error::ReadlineError::Interrupted) => {
                    buf.clear();
                    continue;
                }
                Err(rustyline::error::ReadlineError::Eof) => break,
                Err(e) => bail!("reading input: {e}"),
            };
            let _ = rl.add_history_entry(line.as_str());
            if buf.is_empty() && line.trim_start().starts_with('\\') {
                if !self.meta(line.trim())? {
                    break;
                }
                continue;
            }
            buf.push_str(&line);
            buf.push('\n');
            if split::complete(&buf) {
                let text = std::mem::take(&mut buf);
                self.run_text(&text);
            }
        }
        if let Some(h) = &history {
            let _ = rl.save_history(h);
        }
        Ok(())
    }

    fn prompt(&self, continuation: bool) -> String {
        let state = match self.session.txn_status() {
            TxnStatus::Idle => "",
            TxnStatus::InBlock => "*",
            TxnStatus::Failed => "!",
        };
        format!("ndpdb{}{state}> ", if continuation { "-" } else { "=" })
    }

    fn run_file(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut buf = String::new();
        for line in text.lines() {
            if buf.trim().is_empty() && line.trim_start().starts_with('\\') {
                self.meta(line.trim())?;
                continue;
            }
            buf.push_str(line);
            buf.push('\n');
            if split::complete(&buf) {
                let t = std::mem::take(&mut buf);
                self.run_text(&t);
            }
        }
        if !buf.trim().is_empty() {
            self.run_text(&buf);
        }
        if self.failed {
            bail!("statements of {} failed (see above)", path.display());
        }
        Ok(())
    }

    /// Runs the statements of `text` (up to the first that fails, as
    /// PostgreSQL's simple query protocol does), printing each result.
    fn run_text(&mut self, text: &str) {
        let t0 = Instant::now();
        for r in self.session.run(text) {
            match r {
                Ok(res) => print_result(&res),
                Err(e) => {
                    print_error(&e);
                    self.failed = true;
                }
            }
        }
        if self.timing {
            outln!("Time: {:.3} ms", t0.elapsed().as_secs_f64() * 1e3);
        }
    }

    /// A backslash command; false = quit.
    fn meta(&mut self, line: &str) -> Result<bool> {
        let mut parts = line.splitn(2, char::is_whitespace);
        let cmd = parts.next().unwrap_or("");
        let arg = parts.next().map(str::trim).filter(|s| !s.is_empty());
        match cmd {
            "\\q" => return Ok(false),
            "\\timing" => {
                self.timing = match arg {
                    Some("on") => true,
                    Some("off") => false,
                    _ => !self.timing,
                };
                outln!("Timing is {}.", if self.timing { "on" } else { "off" });
            }
            "\\i" => match arg {
                Some(f) => {
                    if let Err(e) = self.run_file(Path::new(f)) {
                        errln!("{e:#}");
                    }
                }
                None => errln!("\\i: missing required argument"),
            },
            "\\?" => outln!("{}", meta::HELP),
            "\\d" | "\\dt" | "\\di" | "\\dv" | "\\d+" => {
                let catalog = self.session.catalog();
                match meta::describe(&*catalog, cmd, arg) {
                    Ok(text) => outln!("{text}"),
                    Err(e) => errln!("{e}"),
                }
            }
            other => errln!("invalid command {other}\nTry \\? for help."),
        }
        Ok(true)
    }
}

fn print_result(r: &StatementResult) {
    for n in &r.notices {
        errln!("NOTICE:  {n}");
    }
    if r.columns.is_empty() {
        outln!("{}", r.tag);
        return;
    }
    let headings: Vec<String> = r.columns.iter().map(|c| c.name.clone()).collect();
    let right: Vec<bool> = r.columns.iter().map(|c| c.ty.is_numeric()).collect();
    let rows: Vec<Vec<Option<String>>> =
        r.rows.iter().map(|row| row.iter().map(|v| (!v.is_null()).then(|| pg_text(v))).collect()).collect();
    let text = print::aligned(&print::Table { headings: &headings, right_aligned: &right, rows: &rows });
    ndpdb_bench::out!("{text}");
}

fn print_error(e: &SqlError) {
    errln!("ERROR:  {}", e.message);
    if let Some(d) = &e.detail {
        errln!("DETAIL:  {d}");
    }
    if let Some(h) = &e.hint {
        errln!("HINT:  {h}");
    }
}
