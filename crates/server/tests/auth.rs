//! SCRAM-SHA-256 with `--password-file`: psql and psycopg with the right
//! and a wrong password (and an unknown user: the same message), a raw
//! client whose final message is malformed (the refusal to listen on a
//! non-loopback address without passwords is `crates/cli/tests/serve_access.rs`).

mod common;

use std::process::Command;
use std::sync::Arc;

use common::{TestServer, have};
use ndpdb_server::auth::Passwords;

mod raw;

/// alice (and ndpdb, the raw client's user) by plaintext password; bob by
/// a verifier PostgreSQL 15 wrote for the password `pencil`.
const FILE: &str = "# test users\nalice:wonder land\nndpdb:raw client\n\
    bob:SCRAM-SHA-256$4096:Q9SRdZoHEl88zWU17cX4bA==$iL9Oc1DIc1yFp711PP5HwRYQOWlkR0eU7unamGUo0RQ=:\
    soFyRtuGXvTR+W0snItePifk/9oxXOuJ8nE1eRvG4Bk=\n";

fn server() -> TestServer {
    let passwords = Passwords::parse(FILE, std::path::Path::new("test")).unwrap();
    TestServer::start_with_passwords(100, Some(Arc::new(passwords)))
}

/// psql as `user` with `password`: (stdout, stderr, success).
fn psql(s: &TestServer, user: &str, password: &str, sql: &str) -> (String, String, bool) {
    let out = Command::new("psql")
        .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p", &s.addr.port().to_string(), "-U", user, "-d", "ndpdb"])
        .args(["-c", sql])
        .env("PGPASSWORD", password)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .unwrap();
    (String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into(), out.status.success())
}

#[test]
fn psql_with_the_right_password_connects_and_a_wrong_one_gets_28p01() {
    if !have("psql", &["--version"]) {
        return;
    }
    let s = server();
    let (out, err, ok) = psql(&s, "alice", "wonder land", "SELECT 1 + 1");
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "2");
    let (out, err, ok) = psql(&s, "bob", "pencil", "SELECT usename FROM pg_stat_activity");
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "bob");
    for (user, password) in [("alice", "wonderland"), ("bob", "Pencil"), ("carol", "pencil")] {
        let (_, err, ok) = psql(&s, user, password, "SELECT 1");
        assert!(!ok, "{user}/{password:?} must not connect");
        assert!(err.contains(&format!("password authentication failed for user \"{user}\"")), "{user}: {err}");
    }
}

#[test]
fn psycopg_with_the_right_password_connects_and_a_wrong_one_gets_28p01() {
    if !have("python3", &["-c", "import psycopg"]) {
        return;
    }
    let s = server();
    let script = r#"
import sys, psycopg
port = int(sys.argv[1])
def connect(user, password):
    return psycopg.connect(host="127.0.0.1", port=port, user=user, password=password, dbname="ndpdb", connect_timeout=10)
with connect("bob", "pencil") as c:
    assert c.execute("SELECT 40 + 2").fetchone()[0] == 42
for user, password in [("bob", "pencil!"), ("nobody", "pencil")]:
    try:
        connect(user, password)
        raise SystemExit(f"{user} connected with a wrong password")
    except psycopg.OperationalError as e:
        assert f'password authentication failed for user "{user}"' in str(e), str(e)
print("psycopg auth ok")
"#;
    let out = Command::new("python3").args(["-c", script, &s.addr.port().to_string()]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("psycopg auth ok"), "{stdout}\n{stderr}");
}

/// SASLInitialResponse: mechanism, then the client-first message with its length.
fn initial_response(client_first: &str) -> Vec<u8> {
    let mut body = b"SCRAM-SHA-256\0".to_vec();
    body.extend_from_slice(&(client_first.len() as i32).to_be_bytes());
    body.extend_from_slice(client_first.as_bytes());
    body
}

/// Runs the exchange up to the server-first message; returns it.
fn up_to_server_first(r: &mut raw::Raw) -> String {
    r.send_startup(raw::PROTOCOL_3_0);
    let m = r.read().expect("AuthenticationSASL");
    assert_eq!((m.tag, &m.body[..4]), (b'R', &10i32.to_be_bytes()[..]), "{m:?}");
    assert!(String::from_utf8_lossy(&m.body).contains("SCRAM-SHA-256"));
    assert!(r.send(b'p', &initial_response("n,,n=,r=rawclientnonce")));
    let m = r.read().expect("AuthenticationSASLContinue");
    assert_eq!((m.tag, &m.body[..4]), (b'R', &11i32.to_be_bytes()[..]), "{m:?}");
    String::from_utf8(m.body[4..].to_vec()).unwrap()
}

#[test]
fn a_malformed_client_final_message_is_08p01_and_closes_the_connection() {
    let s = server();
    let cases = [
        ("c=biws,r=WRONGNONCE,p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "08P01"),
        ("c=biws,r={nonce}", "08P01"),
        ("c=biws,r={nonce},p=not*base64", "08P01"),
        ("c=eSws,r={nonce},p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "08P01"),
        ("\u{0}\u{1}garbage", "08P01"),
        // Well-formed, wrong proof: the password is wrong.
        ("c=biws,r={nonce},p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "28P01"),
    ];
    for (final_message, code) in cases {
        let mut r = raw::Raw::connect(s.addr);
        let first = up_to_server_first(&mut r);
        let nonce = first.split(',').next().unwrap().strip_prefix("r=").unwrap();
        assert!(nonce.starts_with("rawclientnonce") && nonce.len() > "rawclientnonce".len());
        assert!(r.send(b'p', final_message.replace("{nonce}", nonce).as_bytes()));
        let m = r.read().expect("an ErrorResponse");
        assert_eq!(m.tag, b'E', "{final_message}: {m:?}");
        assert_eq!(m.field(b'S').as_deref(), Some("FATAL"));
        assert_eq!(m.field(b'C').as_deref(), Some(code), "{final_message}: {:?}", m.field(b'M'));
        if code == "28P01" {
            assert_eq!(m.field(b'M').as_deref(), Some("password authentication failed for user \"ndpdb\""));
        }
        let next = r.read();
        assert!(next.is_none(), "the connection must close after {final_message}: {next:?}");
    }
    // A query before authenticating is not run: FATAL 08P01, closed.
    let mut r = raw::Raw::connect(s.addr);
    r.send_startup(raw::PROTOCOL_3_0);
    assert_eq!(r.read().unwrap().tag, b'R');
    r.query("SELECT 1");
    let m = r.read().expect("an ErrorResponse");
    assert_eq!((m.tag, m.field(b'C').as_deref()), (b'E', Some("08P01")), "{m:?}");
    assert!(r.read().is_none());
}

#[test]
fn a_raw_exchange_with_tokio_postgres_scram_client_ends_in_ready_for_query() {
    use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};
    let s = server();
    let mut r = raw::Raw::connect(s.addr);
    r.send_startup(raw::PROTOCOL_3_0);
    assert_eq!(r.read().unwrap().tag, b'R');
    let mut client = ScramSha256::new(b"raw client", ChannelBinding::unsupported());
    assert!(r.send(b'p', &initial_response(std::str::from_utf8(client.message()).unwrap())));
    let m = r.read().unwrap();
    client.update(&m.body[4..]).unwrap();
    assert!(r.send(b'p', client.message()));
    let m = r.read().unwrap();
    assert_eq!((m.tag, &m.body[..4]), (b'R', &12i32.to_be_bytes()[..]), "AuthenticationSASLFinal: {m:?}");
    client.finish(&m.body[4..]).expect("the server's signature verifies");
    let m = r.read().unwrap();
    assert_eq!((m.tag, &m.body[..]), (b'R', &0i32.to_be_bytes()[..]), "AuthenticationOk: {m:?}");
    let rest = r.until_ready().unwrap();
    assert!(rest.iter().any(|m| m.tag == b'K') && rest.last().unwrap().tag == b'Z', "{rest:?}");
    assert_eq!(r.rows("SELECT 6 * 7"), vec![vec![Some("42".to_string())]]);
}
