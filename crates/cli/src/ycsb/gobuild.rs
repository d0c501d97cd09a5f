//! go-ycsb, built on first use with the Go toolchain and cached.
//!
//! ```text
//!  <out>/cache/go-ycsb-v1.0.3/
//!     src/        main.go client.go shell.go (go-ycsb's cmd/go-ycsb, with
//!                 only the pg and basic bindings imported), go.mod
//!     workloads/  go-ycsb's workload files a..f
//!     go-ycsb     the binary (present = built)
//! ```
//!
//! go-ycsb's own `cmd/go-ycsb` imports every binding it has, several of
//! which need C libraries (RocksDB, FoundationDB) that are not here; its
//! command code is package `main`, so it cannot be imported either. The
//! build therefore fetches the module (`go mod download`, through the
//! environment's GOPROXY), copies the command's three files with the
//! binding imports cut down to `db/pg` (lib/pq) and `db/basic`, and builds
//! that with `GOFLAGS=-mod=mod` (the requirements resolve from go-ycsb's
//! go.mod). About 35 s on two cores the first time; the binary is reused.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The go-ycsb release built (its PostgreSQL binding uses lib/pq 1.1.1).
pub const VERSION: &str = "v1.0.3";
const MODULE: &str = "github.com/pingcap/go-ycsb";

/// What is cached: the binary and the workload files.
pub struct GoYcsb {
    pub binary: PathBuf,
    pub workloads: PathBuf,
}

/// The cached go-ycsb under `cache`, building it when missing.
pub fn go_ycsb(cache: &Path) -> Result<GoYcsb> {
    let dir = cache.join(format!("go-ycsb-{VERSION}"));
    let found = GoYcsb { binary: dir.join("go-ycsb"), workloads: dir.join("workloads") };
    if found.binary.exists() && found.workloads.join("workloada").exists() {
        return Ok(found);
    }
    check_go()?;
    ndpdb_bench::errln!("building go-ycsb {VERSION} (first use; cached in {}) ...", dir.display());
    let module = download()?;
    let src = dir.join("src");
    std::fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
    write_sources(&module, &src)?;
    copy_workloads(&module.join("workloads"), &found.workloads)?;
    let tmp = dir.join("go-ycsb.tmp");
    let out = go(&src).args(["build", "-o"]).arg(&tmp).arg(".").output().context("running go build")?;
    if !out.status.success() {
        bail!("building go-ycsb failed:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::rename(&tmp, &found.binary).context("moving the go-ycsb binary into the cache")?;
    Ok(found)
}

/// `go` with `-mod=mod` added to the environment's GOFLAGS.
fn go(dir: &Path) -> Command {
    let flags = std::env::var("GOFLAGS").unwrap_or_default();
    let mut c = Command::new("go");
    c.current_dir(dir).env("GOFLAGS", format!("{flags} -mod=mod").trim());
    c
}

/// Fails with how to install Go when it is missing.
pub fn check_go() -> Result<()> {
    match Command::new("go").arg("version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!(
            "bench ycsb needs the Go toolchain to build go-ycsb on first use, and `go version` does not run: \
             install Go 1.21 or later (https://go.dev/doc/install, or Debian: apt-get install golang-go) and \
             make sure `go` is on PATH"
        ),
    }
}

/// `go mod download` of go-ycsb; returns the module's directory.
fn download() -> Result<PathBuf> {
    let tmp = tempfile::tempdir()?;
    let out = go(tmp.path())
        .args(["mod", "download", "-json", &format!("{MODULE}@{VERSION}")])
        .output()
        .context("running go mod download")?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    match json.get("Dir").and_then(|d| d.as_str()) {
        Some(dir) if out.status.success() => Ok(PathBuf::from(dir)),
        _ => bail!(
            "go mod download {MODULE}@{VERSION} failed (is GOPROXY reachable?): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The command's files, with the bindings cut down to pg and basic.
fn write_sources(module: &Path, src: &Path) -> Result<()> {
    let cmd = module.join("cmd/go-ycsb");
    for name in ["client.go", "shell.go"] {
        let text = std::fs::read_to_string(cmd.join(name)).with_context(|| format!("reading go-ycsb's {name}"))?;
        std::fs::write(src.join(name), text)?;
    }
    let main = std::fs::read_to_string(cmd.join("main.go")).context("reading go-ycsb's main.go")?;
    std::fs::write(src.join("main.go"), only_pg_bindings(&main))?;
    let go_mod = format!(
        "module ndpdb-go-ycsb\n\ngo 1.18\n\nrequire {MODULE} {VERSION}\n\n\
         replace github.com/apache/thrift => github.com/apache/thrift v0.0.0-20171203172758-327ebb6c2b6d\n"
    );
    std::fs::write(src.join("go.mod"), go_mod)?;
    Ok(())
}

/// main.go with every `_ ".../db/X"` import dropped but pg's and basic's.
pub fn only_pg_bindings(main: &str) -> String {
    main.lines()
        .filter(|l| {
            let l = l.trim();
            !l.starts_with(&format!("_ \"{MODULE}/db/"))
                || l == format!("_ \"{MODULE}/db/pg\"")
                || l == format!("_ \"{MODULE}/db/basic\"")
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

fn copy_workloads(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for w in ["a", "b", "c", "d", "e", "f"] {
        let name = format!("workload{w}");
        std::fs::copy(from.join(&name), to.join(&name)).with_context(|| format!("copying go-ycsb's {name}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_pg_and_basic_bindings_stay() {
        let main = "import (\n\t_ \"github.com/pingcap/go-ycsb/db/basic\"\n\t_ \"github.com/pingcap/go-ycsb/db/tikv\"\n\
                    \t_ \"github.com/pingcap/go-ycsb/db/pg\"\n\t\"github.com/pingcap/go-ycsb/pkg/client\"\n)\n";
        let out = super::only_pg_bindings(main);
        assert!(out.contains("db/basic") && out.contains("db/pg") && out.contains("pkg/client"));
        assert!(!out.contains("tikv"));
    }
}
