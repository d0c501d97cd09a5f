//! A server on a free loopback port over a fresh database, run on its own
//! runtime thread; dropped: shut down (sessions end, engine checkpoints).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use ndpdb_server::{Server, ServerOptions};
use ndpdb_sql::session::{Engine, EngineOptions};

pub struct TestServer {
    pub addr: SocketAddr,
    pub engine: Arc<Engine>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl TestServer {
    #[allow(dead_code)]
    pub fn start(max_connections: usize) -> TestServer {
        TestServer::start_with_passwords(max_connections, None)
    }

    /// A server that asks every client for SCRAM-SHA-256 against `passwords`.
    #[allow(dead_code)]
    pub fn start_with_passwords(
        max_connections: usize,
        passwords: Option<Arc<ndpdb_server::auth::Passwords>>,
    ) -> TestServer {
        TestServer::start_sized(max_connections, 256, passwords)
    }

    /// A server over a database image of `capacity_mib`.
    pub fn start_sized(
        max_connections: usize,
        capacity_mib: u64,
        passwords: Option<Arc<ndpdb_server::auth::Passwords>>,
    ) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let opts = EngineOptions {
            dir: dir.path().to_path_buf(),
            create_if_missing: true,
            capacity_mib: Some(capacity_mib),
            ..EngineOptions::default()
        };
        let engine = Engine::open(&opts).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let server_opts = ServerOptions { listen: "127.0.0.1:0".parse().unwrap(), max_connections };
        let server = rt.block_on(Server::bind_with(engine.clone(), server_opts, passwords)).unwrap();
        let addr = server.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            rt.block_on(server.run(async {
                let _ = rx.await;
            }))
            .unwrap();
        });
        TestServer { addr, engine, stop: Some(tx), thread: Some(thread), _dir: dir }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = self.engine.close();
    }
}

#[allow(dead_code)]
/// Whether `program` runs; without it the test fails under
/// NDPDB_REQUIRE_POSTGRES (CI) and is skipped, saying so, elsewhere.
pub fn have(program: &str, args: &[&str]) -> bool {
    let ok = Command::new(program).args(args).output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("NDPDB_REQUIRE_POSTGRES").is_none(),
            "{program} is needed (NDPDB_REQUIRE_POSTGRES is set): install it (.ci/run does)"
        );
        eprintln!("skipped: {program} is not installed");
    }
    ok
}

/// Runs psql against the server; returns (stdout, stderr, success).
#[allow(dead_code)]
pub fn psql(addr: SocketAddr, args: &[&str], stdin: Option<&str>) -> (String, String, bool) {
    use std::io::Write;
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-q", "-h", &addr.ip().to_string(), "-p", &addr.port().to_string(), "-U", "ndpdb", "-d", "ndpdb"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    } else {
        drop(child.stdin.take());
    }
    let out = child.wait_with_output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into(), out.status.success())
}

#[allow(dead_code)]
pub fn script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(name)
}
