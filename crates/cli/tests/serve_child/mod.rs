//! `ndpdb serve` as a child process of a test, on a free loopback port over
//! a database directory the test chose, and psql against it. (Each test
//! binary uses part of it.)
#![allow(dead_code)]

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `ndpdb serve`; dropped: killed (SIGKILL) if still running.
pub struct Serve {
    pub child: Child,
    pub addr: SocketAddr,
    pub log: PathBuf,
}

impl Serve {
    /// Starts `ndpdb serve --db db` (its log in `log`) and waits until it
    /// accepts connections.
    pub fn start(db: &Path, log: &Path) -> Serve {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let child = Command::new(env!("CARGO_BIN_EXE_ndpdb"))
            .args(["serve", "--log-level", "error", "--listen", &addr.to_string(), "--db"])
            .arg(db)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("starting ndpdb serve");
        let mut serve = Serve { child, addr, log: log.to_path_buf() };
        let start = Instant::now();
        loop {
            if let Some(status) = serve.child.try_wait().unwrap() {
                panic!("ndpdb serve exited ({status}) before accepting connections:\n{}", serve.log_text());
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return serve;
            }
            assert!(start.elapsed() < Duration::from_secs(120), "ndpdb serve did not start:\n{}", serve.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The connection flags of psql and pgbench.
    pub fn conn_args(&self) -> Vec<String> {
        let (host, port) = (self.addr.ip().to_string(), self.addr.port().to_string());
        ["-h", &host, "-p", &port, "-U", "ndpdb", "-d", "ndpdb"].iter().map(|s| s.to_string()).collect()
    }

    /// SIGTERM, and the exit status (the server checkpoints and exits 0).
    pub fn stop(mut self) -> std::process::ExitStatus {
        signal(&self.child, "-TERM");
        self.child.wait().unwrap()
    }

    /// SIGKILL: no shutdown, no checkpoint.
    pub fn kill(mut self) {
        signal(&self.child, "-KILL");
        self.child.wait().unwrap();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill").arg(sig).arg(child.id().to_string()).status().unwrap().success();
    assert!(ok, "kill {sig} {}", child.id());
}

/// Runs psql (`-X`, no `.psqlrc`) with `args` against the server, `stdin`
/// as its input; returns (stdout, stderr, success).
pub fn psql(serve: &Serve, args: &[&str], stdin: &str) -> (String, String, bool) {
    let mut child = Command::new("psql")
        .arg("-X")
        .args(serve.conn_args())
        .args(args)
        .env("PGCONNECT_TIMEOUT", "30")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running psql");
    let mut input = child.stdin.take().unwrap();
    let text = stdin.to_string();
    // A writer thread: psql's output may fill its pipe before it has read all of its input.
    let writer = std::thread::spawn(move || input.write_all(text.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    (String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into(), out.status.success())
}

/// Whether `program` runs; without it the test fails under
/// NDPDB_REQUIRE_POSTGRES (CI) and is skipped, saying so, elsewhere.
pub fn have(program: &str) -> bool {
    let ok = Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        ndpdb_baseline::require::skip_postgres(program, &format!("{program} is not installed"));
    }
    ok
}
