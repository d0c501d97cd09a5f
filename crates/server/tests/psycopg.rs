//! psycopg 3 (the extended protocol: Parse/Bind/Describe/Execute, text and
//! binary parameters and results, prepared statements) against the server.

mod common;

use std::process::Command;

use common::{TestServer, have, script};

#[test]
fn psycopg_types_transactions_errors_and_prepared_statements() {
    if !have("python3", &["-c", "import psycopg"]) {
        return;
    }
    let s = TestServer::start(100);
    let out = Command::new("python3").arg(script("psycopg_client.py")).arg(s.addr.port().to_string()).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "psycopg client failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("psycopg ok"), "{stdout}");
}
