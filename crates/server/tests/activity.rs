//! `pg_stat_activity` lists the server's live sessions: through psql, one
//! connection sits idle in a transaction and another sees it, with its
//! pid (the backend key), user, application, client address, transaction
//! start and last statement; a closed connection leaves the list.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{TestServer, have, psql};

const QUERY: &str = "SELECT pid, usename, datname, application_name, client_addr, state, query, \
    xact_start IS NOT NULL, backend_start <= query_start FROM pg_stat_activity \
    WHERE application_name = 'holder'";

#[test]
fn a_session_idle_in_a_transaction_is_seen_by_another() {
    if !have("psql", &["--version"]) {
        return;
    }
    let s = TestServer::start(100);
    let mut holder = Command::new("psql")
        .args(["-X", "-q", "-h", "127.0.0.1", "-p", &s.addr.port().to_string(), "-U", "ndpdb", "-d", "ndpdb"])
        .env("PGAPPNAME", "holder")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    stdin.write_all(b"BEGIN;\nSELECT 41 + 1;\n").unwrap();
    stdin.flush().unwrap();
    // Wait (up to 30 s; no timing is asserted) until the holder's SELECT ran.
    let start = Instant::now();
    let row = loop {
        let (out, err, ok) = psql(s.addr, &["-A", "-t", "-c", QUERY], None);
        assert!(ok, "{err}");
        if out.contains("idle in transaction|SELECT 41 + 1;") || start.elapsed() > Duration::from_secs(30) {
            break out.trim().to_string();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let cols: Vec<&str> = row.split('|').collect();
    assert_eq!(cols.len(), 9, "{row}");
    assert!(cols[0].parse::<i32>().unwrap() > 0, "{row}");
    assert_eq!(
        &cols[1..],
        ["ndpdb", "ndpdb", "holder", "127.0.0.1", "idle in transaction", "SELECT 41 + 1;", "t", "t"]
    );
    // The observer sees itself as the active session running its query.
    let (me, _, _) =
        psql(s.addr, &["-A", "-t", "-c", "SELECT state, query FROM pg_stat_activity WHERE state = 'active'"], None);
    assert_eq!(me.trim(), "active|SELECT state, query FROM pg_stat_activity WHERE state = 'active'");
    // COMMIT: idle, no transaction; closing: gone from the list.
    stdin.write_all(b"COMMIT;\n").unwrap();
    stdin.flush().unwrap();
    let start = Instant::now();
    let row = loop {
        let (out, _, _) = psql(s.addr, &["-A", "-t", "-c", QUERY], None);
        if out.contains("|idle|") || start.elapsed() > Duration::from_secs(30) {
            break out;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(row.contains("|idle|COMMIT;|f|t"), "{row}");
    drop(stdin);
    assert!(holder.wait().unwrap().success());
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let (out, _, _) = psql(s.addr, &["-A", "-t", "-c", QUERY], None);
        if out.trim().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the holder's session is still listed after it closed");
}
