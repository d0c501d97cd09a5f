//! The protocol features of issue 18 through real clients (psql, psycopg
//! 3): cancel requests and statement_timeout, COPY FROM STDIN, cursors.

mod common;

use std::process::Command;

use common::{TestServer, have, script};

/// Runs `psycopg_protocol.py PORT MODE` against `s`.
fn psycopg(s: &TestServer, mode: &str) {
    let out = Command::new("python3")
        .arg(script("psycopg_protocol.py"))
        .arg(s.addr.port().to_string())
        .arg(mode)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "psycopg {mode} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("{mode} ok")), "{stdout}");
}

#[test]
fn cancel_requests_and_statement_timeout_stop_a_long_cross_join() {
    if !have("python3", &["-c", "import psycopg"]) {
        return;
    }
    let s = TestServer::start(100);
    psycopg(&s, "cancel");
}

mod raw;

/// The long query the cancel tests stop: a three-way cross join whose
/// condition is never true (memory stays small, the executor polls).
const LONG: &str = "SELECT count(*) FROM big a, big b, big c WHERE a.x + b.x + c.x < 0";

#[test]
fn a_cancel_request_on_a_new_connection_stops_the_statement() {
    let s = TestServer::start(100);
    let mut a = raw::Raw::connect(s.addr);
    a.send_startup(raw::PROTOCOL_3_0);
    let key = a.until_ready().unwrap().into_iter().find(|m| m.tag == b'K').expect("BackendKeyData").body;
    let values: Vec<String> = (0..3000).map(|i| format!("({i})")).collect();
    a.rows("CREATE TABLE big (x integer)");
    a.rows(&format!("INSERT INTO big VALUES {}", values.join(",")));
    a.rows("SET statement_timeout = '60s'");
    assert!(a.query(LONG));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut c = raw::Raw::connect(s.addr);
    let mut req = 16i32.to_be_bytes().to_vec();
    req.extend_from_slice(&80_877_102i32.to_be_bytes());
    req.extend_from_slice(&key);
    c.write(&req);
    assert!(c.drain().is_empty(), "a cancel request gets no answer");
    let msgs = a.until_ready().unwrap();
    let e = msgs.iter().find(|m| m.tag == b'E').expect("the statement failed");
    assert_eq!(e.field(b'C').as_deref(), Some("57014"));
    assert_eq!(e.field(b'M').as_deref(), Some("canceling statement due to user request"));
    assert_eq!(a.rows("SELECT count(*) FROM big"), vec![vec![Some("3000".to_string())]]);
}
