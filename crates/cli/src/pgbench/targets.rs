//! The two servers pgbench drives, each private to the run and stopped at
//! its end: `ndpdb serve` as a child process of this binary over a new
//! database in a temporary directory, and a private PostgreSQL with the
//! same durability (`fsync` and `synchronous_commit` on, as ndpdb's
//! commits are: each waits for its log flush to the device image).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use ndpdb_baseline::postgres::{PgOptions, PgServer};
use ndpdb_bench::report::Report;
use ndpdb_device::profile::DEFAULT_PROFILE;
use serde::Serialize;

/// The options `bench pgbench` and `bench ycsb` share: which servers run,
/// how ndpdb's device runs, where the results go.
#[derive(Args, Debug, Clone)]
pub struct ServerBenchArgs {
    /// Engines, comma separated: ndpdb, postgresql
    #[arg(long, value_delimiter = ',', default_value = "ndpdb,postgresql")]
    pub engines: Vec<String>,
    /// Profile of ndpdb's device (name or .toml path)
    #[arg(long, default_value = DEFAULT_PROFILE)]
    pub profile: String,
    /// ndpdb's clock: `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    pub clock: String,
    /// Print JSON lines on stdout (the table goes to stderr)
    #[arg(long)]
    pub json: bool,
    /// Directory under which the run's results directory is made (bench ycsb: and go-ycsb's cache)
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

impl ServerBenchArgs {
    /// Refuses an engine that is neither ndpdb nor postgresql.
    pub fn check_engines(&self) -> Result<()> {
        match self.engines.iter().find(|e| *e != "ndpdb" && *e != "postgresql") {
            Some(e) => bail!("unknown engine {e:?}: use ndpdb, postgresql or both (--engines ndpdb,postgresql)"),
            None => Ok(()),
        }
    }

    /// A fresh private server of `engine` (checked by [`Self::check_engines`]).
    pub fn start(&self, engine: &str) -> Result<Target> {
        if engine == "ndpdb" { Target::ndpdb(&self.profile, &self.clock) } else { Target::postgres() }
    }

    /// The profile and clock a row of `engine` names: ndpdb's, "-" for PostgreSQL.
    pub fn profile_clock(&self, engine: &str) -> (String, String) {
        if engine == "ndpdb" { (self.profile.clone(), self.clock.clone()) } else { ("-".into(), "-".into()) }
    }

    /// Prints `rows` (table or JSON lines), writes `<name>.jsonl`,
    /// `<name>.txt` and the plots `draw` makes into a new results directory.
    pub fn publish<R: Serialize>(
        &self,
        name: &str,
        rows: &[R],
        text: &str,
        draw: impl FnOnce(&Path) -> Result<Vec<PathBuf>>,
    ) -> Result<()> {
        let report = Report::new(self.json, self.out.clone())?;
        report.print(rows, text)?;
        let results = report.results(name)?;
        results.jsonl(&format!("{name}.jsonl"), rows)?;
        results.text(&format!("{name}.txt"), text)?;
        let plots = results.plot(draw);
        results.announce(&plots);
        Ok(())
    }
}

/// How a client reaches a server: pgbench's and psql's `-h -p -U -d`.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// A host name or a socket directory.
    pub host: String,
    pub port: u16,
    pub user: String,
    pub database: String,
}

impl Endpoint {
    /// The connection flags of pgbench and psql.
    pub fn args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.host.clone(),
            "-p".into(),
            self.port.to_string(),
            "-U".into(),
            self.user.clone(),
            "-d".into(),
            self.database.clone(),
        ]
    }
}

/// A running server under benchmark.
pub enum Target {
    Ndpdb { child: Child, endpoint: Endpoint, _dir: tempfile::TempDir, log: PathBuf },
    Postgres { server: Option<PgServer>, endpoint: Endpoint },
}

impl Target {
    /// `ndpdb serve` on a free loopback port over a new database in a
    /// temporary directory; waits until it accepts connections.
    pub fn ndpdb(profile: &str, clock: &str) -> Result<Target> {
        let dir = tempfile::Builder::new().prefix("ndpdb-pgbench-").tempdir().context("temporary directory")?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let exe = std::env::current_exe().context("finding the ndpdb binary")?;
        let log = dir.path().join("serve.log");
        let log_file = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new(exe)
            .args(["serve", "--log-level", "error", "--clock", clock, "--profile", profile, "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--db")
            .arg(dir.path().join("db"))
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .context("starting ndpdb serve")?;
        let endpoint = Endpoint { host: "127.0.0.1".into(), port, user: "ndpdb".into(), database: "ndpdb".into() };
        let mut target = Target::Ndpdb { child, endpoint, _dir: dir, log };
        target.wait_ready(SocketAddr::from(([127, 0, 0, 1], port)))?;
        Ok(target)
    }

    /// A private PostgreSQL with durable commits.
    pub fn postgres() -> Result<Target> {
        let server = PgServer::start_with(&PgOptions { durable: true }).context("starting PostgreSQL")?;
        let endpoint = Endpoint {
            host: server.socket_dir().display().to_string(),
            port: server.port(),
            user: "postgres".into(),
            database: "postgres".into(),
        };
        Ok(Target::Postgres { server: Some(server), endpoint })
    }

    pub fn endpoint(&self) -> &Endpoint {
        match self {
            Target::Ndpdb { endpoint, .. } | Target::Postgres { endpoint, .. } => endpoint,
        }
    }

    fn wait_ready(&mut self, addr: SocketAddr) -> Result<()> {
        let Target::Ndpdb { child, log, .. } = self else { return Ok(()) };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if let Some(status) = child.try_wait()? {
                let text = std::fs::read_to_string(&*log).unwrap_or_default();
                bail!("ndpdb serve exited ({status}) before accepting connections:\n{text}");
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(anyhow!("ndpdb serve did not accept connections on {addr} within 60 s (log: {})", log.display()))
    }

    /// Stops the server: SIGTERM and a wait for ndpdb (it checkpoints),
    /// `pg_ctl stop` for PostgreSQL.
    pub fn stop(mut self) -> Result<()> {
        match &mut self {
            Target::Ndpdb { child, log, .. } => {
                Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().context("kill -TERM")?;
                let status = child.wait()?;
                if !status.success() {
                    let text = std::fs::read_to_string(&*log).unwrap_or_default();
                    bail!("ndpdb serve stopped with {status}:\n{text}");
                }
            }
            Target::Postgres { server, .. } => {
                if let Some(s) = server.take() {
                    s.stop().map_err(|e| anyhow!("{e}"))?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Target::Ndpdb { child, .. } = self
            && child.try_wait().ok().flatten().is_none()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
