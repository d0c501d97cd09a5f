//! What the browser tests share: Debian's `chromium` driven through
//! `chromedriver` (WebDriver) with fantoccini, and `ndpdb web` served
//! in-process on a free loopback port.
//!
//! fantoccini over npm's `playwright-core`: it is a Rust dev-dependency
//! (no node or npm in the build), speaks W3C WebDriver to the
//! `chromium-driver` package's `chromedriver`, which drives the
//! `chromium` package's binary, and builds without TLS
//! (`default-features = false`, plain HTTP to the driver on loopback).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use ndpdb_sql::session::Engine;
use ndpdb_web::{AppState, WebOptions};

/// The variable that makes a missing Chromium an error (`.ci/run` sets it).
pub const REQUIRE_VAR: &str = "NDPDB_REQUIRE_CHROMIUM";

const CHROMIUM: &str = "/usr/bin/chromium";
const DRIVER: &str = "/usr/bin/chromedriver";

/// How long the tests wait for the page (a bound on a hang, not a timing
/// assertion: a run of a few hundred tuples takes seconds).
pub const WAIT: Duration = Duration::from_secs(240);

/// Whether Chromium and its driver are installed; when they are not and
/// not required, says so (and the test passes without its browser half).
pub fn browser_available(test: &str) -> bool {
    let missing: Vec<&str> = [CHROMIUM, DRIVER].into_iter().filter(|p| !Path::new(p).exists()).collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!("{} not installed (apt-get install chromium chromium-driver)", missing.join(" and "));
    assert!(std::env::var(REQUIRE_VAR).as_deref() != Ok("1"), "{test}: {REQUIRE_VAR}=1 but {why}");
    eprintln!("SKIPPED {test}: {why} (set {REQUIRE_VAR}=1 to make this an error)");
    false
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A chromedriver process, killed when dropped.
pub struct Driver {
    child: Child,
    pub port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    pub fn start() -> Driver {
        let port = free_port();
        let child = Command::new(DRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let driver = Driver { child, port };
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        for _ in 0..400 {
            if TcpStream::connect(addr).is_ok() {
                return driver;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("chromedriver did not listen on {addr}");
    }

    /// A headless Chromium window of `width` x `height` pixels.
    pub async fn browser(&self, width: u32, height: u32) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         format!("--window-size={width},{height}")],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a Chromium session");
        client.set_window_size(width, height).await.expect("window size");
        client
    }
}

/// `ndpdb web` on a free port of its own runtime; its address.
pub struct Web {
    pub addr: SocketAddr,
    pub state: Arc<AppState>,
    _runtime: tokio::runtime::Runtime,
}

impl Web {
    pub fn start(results: &Path, engine: Option<Arc<Engine>>) -> Web {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let opts = WebOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            results: results.to_path_buf(),
            engine,
            db_name: Some("test".into()),
        };
        let state = AppState::new(&opts);
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let st = state.clone();
        runtime.spawn(async move { ndpdb_web::serve(listener, st, std::future::pending()).await });
        Web { addr, state, _runtime: runtime }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// The test's output directory (screenshots).
pub fn out_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-browser").join(test);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub async fn css(c: &Client, sel: &str) -> fantoccini::elements::Element {
    c.find(Locator::Css(sel)).await.unwrap_or_else(|e| panic!("{sel}: {e}"))
}

pub async fn wait_for(c: &Client, sel: &str) -> fantoccini::elements::Element {
    c.wait().at_most(WAIT).for_element(Locator::Css(sel)).await.unwrap_or_else(|e| panic!("waiting for {sel}: {e}"))
}

/// Replaces an input's text.
pub async fn fill(c: &Client, sel: &str, text: &str) {
    let e = css(c, sel).await;
    e.clear().await.unwrap();
    e.send_keys(text).await.unwrap();
}

/// The text of the error shown beside field `field`.
pub async fn error_beside(c: &Client, field: &str) -> String {
    let sel = format!(".err[data-for=\"{field}\"]");
    c.wait().at_most(WAIT).for_element(Locator::Css(&sel)).await.unwrap();
    for _ in 0..400 {
        let t = css(c, &sel).await.text().await.unwrap();
        if !t.is_empty() {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no error beside {field}");
}
