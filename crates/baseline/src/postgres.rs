//! A private PostgreSQL server for baselines and as a correctness oracle.
//!
//! [`PgServer::start`] makes its own cluster in a temporary directory
//! (`initdb`, trust authentication, a Unix socket in that directory, no TCP
//! listener), starts it on a free port, and stops it and removes everything
//! when dropped. Durability settings are off (`fsync`, `synchronous_commit`,
//! `full_page_writes`): the cluster is thrown away with the server, never
//! recovered, and the experiments time queries and lock calls, never
//! commits, so durable commits would only slow the loading and update steps
//! before the timed part. So is autovacuum (ndpdb runs no garbage collection
//! during an experiment either, and a background vacuum would compete for
//! the machine's cores while queries are timed). When ndpdb runs as root,
//! PostgreSQL (which refuses to run as root) runs as the `postgres` user and
//! the directory is handed to it.
//!
//! Sessions are `psql` processes driven over pipes ([`Session`]): a long-
//! running session can hold a REPEATABLE READ or SERIALIZABLE transaction
//! open while other sessions change the data, exactly as the neoDBMS
//! composer's snapshot markers need. Each statement is followed by an echo
//! marker, so the session knows where its output ends.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error(
        "PostgreSQL is not installed (no initdb/pg_ctl found); install it (Debian: apt-get install postgresql) to run the PostgreSQL baseline"
    )]
    NotInstalled,
    #[error(
        "running as root but there is no `postgres` user to run PostgreSQL as; create one or run ndpdb as another user"
    )]
    NoPostgresUser,
    #[error(
        "PostgreSQL's server headers are not installed (no storage/lock.h under {include}); install them (Debian: apt-get install {package}) to time PostgreSQL's lock manager"
    )]
    NoServerHeaders { include: PathBuf, package: String },
    #[error(
        "no C compiler to build the lock-timing function ({cc}: {detail}); install one (Debian: apt-get install gcc) or set CC"
    )]
    NoCompiler { cc: String, detail: String },
    #[error("{step} failed: {detail}")]
    Setup { step: &'static str, detail: String },
    #[error("PostgreSQL: {0}")]
    Sql(String),
    #[error("psql session: {0}")]
    Session(String),
}

type Result<T> = std::result::Result<T, PgError>;

/// Where PostgreSQL's server binaries are.
fn bin_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NDPDB_PG_BIN") {
        return Some(PathBuf::from(p));
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists())
        .collect();
    // The newest major version: by number (`9.6` is older than `15`).
    let version = |p: &PathBuf| -> Vec<u32> {
        let name = p.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned());
        name.unwrap_or_default().split('.').map(|part| part.parse().unwrap_or(0)).collect()
    };
    candidates.sort_by_key(version);
    if let Some(newest) = candidates.pop() {
        return Some(newest);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).find(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A running private server; stopped and removed on drop.
pub struct PgServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
    stopped: bool,
}

/// How a private server is configured beyond the defaults of the module doc.
#[derive(Debug, Clone, Default)]
pub struct PgOptions {
    /// `fsync`, `synchronous_commit` and `full_page_writes` on: commits as
    /// durable as ndpdb's (pgbench and other commit-timing baselines).
    pub durable: bool,
}

impl PgServer {
    /// A server with the module doc's settings (durability off).
    pub fn start() -> Result<PgServer> {
        PgServer::start_with(&PgOptions::default())
    }

    pub fn start_with(options: &PgOptions) -> Result<PgServer> {
        let bin = bin_dir().ok_or(PgError::NotInstalled)?;
        let as_postgres = is_root();
        if as_postgres && Command::new("id").arg("postgres").output().map(|o| !o.status.success()).unwrap_or(true) {
            return Err(PgError::NoPostgresUser);
        }
        let dir = tempfile::Builder::new()
            .prefix("ndpdb-pg-")
            .tempdir()
            .map_err(|e| PgError::Setup { step: "temporary directory", detail: e.to_string() })?;
        let port = free_port();
        let mut server = PgServer { bin, dir, port, as_postgres, stopped: true };
        if as_postgres {
            std::fs::set_permissions(server.dir.path(), std::fs::Permissions::from_mode(0o777))
                .map_err(|e| PgError::Setup { step: "chmod", detail: e.to_string() })?;
            server.run("chown", Command::new("chown").args(["postgres:postgres"]).arg(server.dir.path()))?;
        }
        let data = server.data();
        let initdb = server.bin.join("initdb");
        server.run_pg(
            "initdb",
            &initdb,
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"],
        )?;
        let durability = if options.durable { "on" } else { "off" };
        let opts = format!(
            "-p {port} -k {sock} -c listen_addresses='' -c fsync={durability} -c synchronous_commit={durability} \
             -c full_page_writes={durability} -c max_worker_processes=16 -c max_parallel_workers=16 -c autovacuum=off",
            sock = server.dir.path().display()
        );
        let log = server.dir.path().join("server.log").display().to_string();
        let pg_ctl = server.bin.join("pg_ctl");
        server.run_pg("pg_ctl start", &pg_ctl, &["-D", &data, "-o", &opts, "-l", &log, "-w", "-t", "60", "start"])?;
        server.stopped = false;
        Ok(server)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory of the server's binaries (`initdb`, `pg_config`, ...).
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }

    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's version string.
    pub fn version(&self) -> Result<String> {
        self.session()?.query("SHOW server_version")
    }

    fn wrap(&self, program: &Path, args: &[&str]) -> Command {
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program).args(args);
            c
        } else {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    }

    fn run_pg(&self, step: &'static str, program: &Path, args: &[&str]) -> Result<()> {
        let mut c = self.wrap(program, args);
        self.run(step, &mut c)
    }

    fn run(&self, step: &'static str, c: &mut Command) -> Result<()> {
        let out = c.output().map_err(|e| PgError::Setup { step, detail: e.to_string() })?;
        if !out.status.success() {
            let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            return Err(PgError::Setup {
                step,
                detail: format!(
                    "{}{}{}",
                    String::from_utf8_lossy(&out.stderr).trim(),
                    String::from_utf8_lossy(&out.stdout).trim(),
                    if log.is_empty() { String::new() } else { format!("\nserver log:\n{log}") }
                ),
            });
        }
        Ok(())
    }

    /// A new `psql` session on the `postgres` database.
    pub fn session(&self) -> Result<Session> {
        Session::connect(self)
    }

    pub fn stop(mut self) -> Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let data = self.data();
        let pg_ctl = self.bin.join("pg_ctl");
        self.run_pg("pg_ctl stop", &pg_ctl, &["-D", &data, "-m", "fast", "-w", "stop"])
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// A free TCP port number for the server's socket name (it listens on no TCP port).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(54329)
}

const MARKER: &str = "__NDPDB_END_OF_STATEMENT__";

/// One psql process: one PostgreSQL connection.
pub struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Session {
    fn connect(server: &PgServer) -> Result<Session> {
        let psql = server.bin.join("psql");
        let psql = if psql.exists() { psql } else { PathBuf::from("psql") };
        let port = server.port.to_string();
        let sock = server.dir.path().display().to_string();
        let args = ["-h", &sock, "-p", &port, "-U", "postgres", "-X", "-q", "-A", "-t", "-F", "|", "-d", "postgres"];
        let cmd = server.wrap(&psql, &args);
        // psql writes errors to stderr; merge them so that the reader sees them in order.
        let mut cmd = {
            let line = std::iter::once(cmd.get_program().to_string_lossy().into_owned())
                .chain(cmd.get_args().map(|a| format!("'{}'", a.to_string_lossy().replace('\'', "'\\''"))))
                .collect::<Vec<_>>()
                .join(" ");
            let mut sh = Command::new("sh");
            sh.args(["-c", &format!("exec {line} 2>&1")]);
            sh
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| PgError::Session(format!("starting psql: {e}")))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut s = Session { child, stdin, stdout };
        s.exec("SET client_min_messages = warning")?;
        Ok(s)
    }

    /// Runs one statement; returns its output rows (`|`-separated columns).
    pub fn exec(&mut self, sql: &str) -> Result<Vec<String>> {
        let sql = sql.trim().trim_end_matches(';');
        writeln!(self.stdin, "{sql};\n\\echo {MARKER}")
            .map_err(|e| PgError::Session(format!("writing to psql: {e}")))?;
        self.stdin.flush().map_err(|e| PgError::Session(e.to_string()))?;
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).map_err(|e| PgError::Session(e.to_string()))?;
            if n == 0 {
                return Err(PgError::Session("psql exited".into()));
            }
            let line = line.trim_end_matches('\n');
            if line == MARKER {
                break;
            }
            if let Some(e) = line.split_once("ERROR:").map(|(_, e)| e.trim().to_string()) {
                error = Some(e);
            } else if error.is_some() {
                // DETAIL/HINT lines of the error.
            } else if !line.is_empty() {
                rows.push(line.to_string());
            }
        }
        match error {
            Some(e) => Err(PgError::Sql(e)),
            None => Ok(rows),
        }
    }

    /// Runs a query that returns one value.
    pub fn query(&mut self, sql: &str) -> Result<String> {
        let rows = self.exec(sql)?;
        rows.into_iter().next().ok_or_else(|| PgError::Sql(format!("no row from {sql}")))
    }

    /// Runs a statement and returns its result with the time it took on the
    /// server's side of the session (wall time around the round trip).
    pub fn timed(&mut self, sql: &str) -> Result<(Vec<String>, Duration)> {
        let t = Instant::now();
        let rows = self.exec(sql)?;
        Ok((rows, t.elapsed()))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "\\q");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Session {
    /// `COPY table FROM STDIN` with the given tab-separated lines (`\N` for NULL).
    pub fn copy_in(&mut self, copy_sql: &str, lines: impl Iterator<Item = String>) -> Result<()> {
        writeln!(self.stdin, "{};", copy_sql.trim().trim_end_matches(';'))
            .map_err(|e| PgError::Session(e.to_string()))?;
        for l in lines {
            writeln!(self.stdin, "{l}").map_err(|e| PgError::Session(format!("writing COPY data: {e}")))?;
        }
        writeln!(self.stdin, "\\.").map_err(|e| PgError::Session(e.to_string()))?;
        self.exec("SELECT 1").map(|_| ())
    }
}
