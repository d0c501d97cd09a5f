//! The isolation-anomaly catalogue (Adya; Hermitage, github.com/ept/hermitage)
//! run on ndpdb and on a real PostgreSQL, statement by statement.
//!
//! Every `tests/scripts/anomaly_*.txt` script runs twice: on ndpdb through
//! the script runner (`scripts.rs`, included below), and translated to SQL
//! on a private PostgreSQL ([`PgServer`], started once for all scripts) with
//! one connection per session at the script's isolation level. Each
//! statement's outcome must agree: its result, whether it blocks, which
//! blocked statement a later line lets finish and how, and which transaction
//! fails with which error class (serialization failure 40001, deadlock
//! 40P01). A difference fails the test and prints both transcripts.
//!
//! The translation, for `table NAME COL TYPE ...`:
//!
//! ```text
//! table NAME COL int64            CREATE TABLE NAME (vid int PRIMARY KEY, COL bigint)
//! insert NAME V                   INSERT INTO NAME VALUES (vid, V) RETURNING vid   NAME's next VID, as ndpdb numbers them
//! begin S LEVEL                   BEGIN ISOLATION LEVEL ...; SHOW transaction_isolation
//! S: get NAME VID                 SELECT COL FROM NAME WHERE vid = VID
//! S: sum NAME COL | count NAME    SELECT sum(COL) FROM NAME | SELECT count(*) FROM NAME
//! S: rows NAME [where COL OP V]   SELECT vid, COL FROM NAME [WHERE COL OP V] ORDER BY vid
//! S: update NAME VID V            UPDATE NAME SET COL = V WHERE vid = VID RETURNING vid   no row: "not found"
//! S: delete NAME VID              DELETE FROM NAME WHERE vid = VID RETURNING vid
//! S: commit | abort               COMMIT | ROLLBACK
//! ```
//!
//! A PostgreSQL statement is blocked when its backend has a lock request
//! that is not granted (`pg_locks`, asked on a separate connection) — the
//! counterpart of the runner's `Database::is_waiting`, and as deterministic:
//! the harness waits until the statement either finishes or waits, never for
//! a fixed time. A transaction that failed is over: PostgreSQL's `COMMIT`
//! then rolls back silently, which counts as "ended", as ndpdb's does. No
//! script deadlocks: PostgreSQL finds a deadlock only after
//! `deadlock_timeout` (1 s), and until then both waiters look blocked, so
//! such a script would need the harness to wait for that timer.
//!
//! Where ndpdb's outcome knowingly differs, the script is listed in
//! [`KNOWN_DIFFERENCES`] with the reason, its `.txt` says so in a
//! `# DIFFERS FROM POSTGRESQL:` comment, and this test checks that it still
//! differs (so the list cannot go stale). Without PostgreSQL installed the
//! PostgreSQL half is skipped with a message.

mod script_runner;
mod transcript;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use ndpdb_baseline::postgres::{PgError, PgServer, Session};
use transcript::{Transcript, normalize, parse_transcript, side_by_side};

/// Scripts whose ndpdb outcome differs from PostgreSQL's, and why. Each is
/// checked to still differ; its script carries the same explanation.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

/// A statement neither finished nor waiting for a lock after this long is a
/// bug in the harness or the script.
const STUCK_AFTER: Duration = Duration::from_secs(20);

#[test]
fn anomalies_match_postgresql() {
    let t0 = Instant::now();
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e @ PgError::NotInstalled) => {
            ndpdb_baseline::require::skip_postgres("anomalies_match_postgresql", &e);
            return;
        }
        Err(e) => panic!("could not start PostgreSQL: {e}"),
    };
    let version = server.version().expect("server version");
    eprintln!("PostgreSQL {version} started in {:.1?}", t0.elapsed());
    let mut admin = server.session().expect("admin session");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("anomaly_"))
        .collect();
    scripts.sort();
    assert_eq!(scripts.len(), 30, "ten anomalies at three levels in {}", dir.display());
    let mut failures = Vec::new();
    for path in &scripts {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let ndpdb = parse_transcript(&script_runner::run_script(&text));
        let pg = run_on_postgres(&server, &mut admin, &text);
        let known = KNOWN_DIFFERENCES.iter().find(|(n, _)| *n == name);
        let marked = text.contains("# DIFFERS FROM POSTGRESQL:");
        let same = ndpdb == pg;
        let report = || format!("{name}:\n{}", side_by_side(&ndpdb, &pg, "ndpdb", "PostgreSQL"));
        match (same, known) {
            (true, None) if !marked => eprintln!("{name}: same as PostgreSQL\n    {}", pg.join("\n    ")),
            (true, None) => failures.push(format!("{name} matches PostgreSQL but its script says it differs")),
            (true, Some(_)) => failures.push(format!(
                "{name} now matches PostgreSQL: remove it from KNOWN_DIFFERENCES and its `# DIFFERS FROM POSTGRESQL:` comment"
            )),
            (false, None) => failures.push(format!("{} differs from PostgreSQL", report())),
            (false, Some(_)) if !marked => {
                failures.push(format!("{name} is a known difference; say so in its script (`# DIFFERS FROM POSTGRESQL:`)"))
            }
            (false, Some((_, why))) => eprintln!("known difference ({why}) {}", report()),
        }
    }
    drop(admin);
    server.stop().expect("stopping PostgreSQL");
    eprintln!("{} scripts on ndpdb and PostgreSQL in {:.1?}", scripts.len(), t0.elapsed());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Where a PostgreSQL session's transaction stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TxState {
    Open,
    /// A statement failed; PostgreSQL ignores all but the transaction's end.
    Failed,
    Ended,
}

/// A PostgreSQL connection on its own thread, fed SQL over a channel, so
/// that a statement can block while the script goes on.
struct PgSession {
    tx: Sender<Vec<String>>,
    rx: Receiver<Result<Vec<String>, String>>,
    pid: String,
    state: TxState,
    /// The script line of a blocked statement.
    pending: Option<String>,
}

impl PgSession {
    fn start(server: &PgServer) -> PgSession {
        let mut conn = server.session().expect("psql session");
        let pid = conn.query("SELECT pg_backend_pid()").expect("backend pid");
        let (tx, srx) = channel::<Vec<String>>();
        let (stx, rx) = channel();
        // Not joined: dropping `tx` ends the thread once its statement is
        // done, and a statement still blocked (only on a failing script)
        // ends when the server stops.
        std::thread::spawn(move || {
            for sqls in srx {
                let r = run_all(&mut conn, &sqls);
                if stx.send(r).is_err() {
                    break;
                }
            }
        });
        PgSession { tx, rx, pid, state: TxState::Open, pending: None }
    }
}

/// Runs statements in order; the rows of the last, or the first error.
fn run_all(conn: &mut Session, sqls: &[String]) -> Result<Vec<String>, String> {
    let mut rows = Vec::new();
    for sql in sqls {
        rows = conn.exec(sql).map_err(|e| match e {
            PgError::Sql(m) => m,
            other => format!("psql session broke: {other}"),
        })?;
    }
    Ok(rows)
}

/// Whether backend `pid` waits for a lock.
fn waits_for_lock(admin: &mut Session, pid: &str) -> bool {
    admin.query(&format!("SELECT count(*) FROM pg_locks WHERE pid = {pid} AND NOT granted")).expect("pg_locks") != "0"
}

/// Waits until the session's statement finishes (Some) or waits for a lock (None).
fn finish_or_block(admin: &mut Session, s: &PgSession) -> Option<Result<Vec<String>, String>> {
    let t0 = Instant::now();
    loop {
        match s.rx.recv_timeout(Duration::from_millis(1)) {
            Ok(r) => return Some(r),
            Err(RecvTimeoutError::Disconnected) => panic!("a PostgreSQL session's thread ended"),
            Err(RecvTimeoutError::Timeout) if waits_for_lock(admin, &s.pid) => return None,
            Err(RecvTimeoutError::Timeout) => {
                assert!(t0.elapsed() < STUCK_AFTER, "a PostgreSQL statement neither finished nor waited for a lock")
            }
        }
    }
}

/// A table of the script: its columns and the next VID an insert gets.
struct PgTable {
    columns: Vec<String>,
    next_vid: u64,
}

/// Runs a script on PostgreSQL; returns its transcript in the runner's
/// words, normalized.
fn run_on_postgres(server: &PgServer, admin: &mut Session, text: &str) -> Transcript {
    let mut tables: HashMap<String, PgTable> = HashMap::new();
    let mut sessions: BTreeMap<String, PgSession> = BTreeMap::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let result = match words.as_slice() {
            ["table", name, cols @ ..] => {
                let defs: Vec<String> = cols
                    .chunks(2)
                    .map(|c| format!("{} {}", c[0], if c.get(1) == Some(&"int32") { "int" } else { "bigint" }))
                    .collect();
                admin.exec(&format!("DROP TABLE IF EXISTS {name}")).expect("drop table");
                admin
                    .exec(&format!("CREATE TABLE {name} (vid int PRIMARY KEY, {})", defs.join(", ")))
                    .expect("create table");
                let columns = cols.chunks(2).map(|c| c[0].to_string()).collect();
                tables.insert(name.to_string(), PgTable { columns, next_vid: 0 });
                "ok".to_string()
            }
            ["insert", name, vals @ ..] => {
                let (sql, vid) = insert_sql(&mut tables, name, vals);
                let got = admin.query(&sql).expect("autocommitted insert");
                assert_eq!(got, vid.to_string());
                format!("vid {vid}")
            }
            ["begin", s, level] => {
                let (sql_level, shown) = match *level {
                    "rc" => ("READ COMMITTED", "read committed"),
                    "rr" => ("REPEATABLE READ", "repeatable read"),
                    _ => ("SERIALIZABLE", "serializable"),
                };
                let sess = PgSession::start(server);
                sess.tx
                    .send(vec![format!("BEGIN ISOLATION LEVEL {sql_level}"), "SHOW transaction_isolation".into()])
                    .unwrap();
                let got = sess.rx.recv().unwrap().expect("BEGIN");
                assert_eq!(got, [shown], "the session's isolation level");
                sessions.insert(s.to_string(), sess);
                got[0].clone()
            }
            [s, rest @ ..] if s.ends_with(':') => {
                let name = s.trim_end_matches(':');
                let sess = sessions.get_mut(name).expect("unknown session");
                assert!(sess.pending.is_none(), "{line}: session {name} is blocked");
                match sess.state {
                    TxState::Ended => "ended".to_string(),
                    TxState::Failed if !matches!(rest, ["commit"] | ["abort"]) => "ended".to_string(),
                    _ => {
                        let sql = session_sql(&mut tables, rest);
                        sess.tx.send(vec![sql]).unwrap();
                        let r = finish_or_block(admin, sess);
                        match r {
                            Some(r) => outcome(sess, rest, r),
                            None => {
                                sess.pending = Some(line.to_string());
                                "blocked".to_string()
                            }
                        }
                    }
                }
            }
            other => panic!("cannot translate script line {other:?}"),
        };
        out.push(format!("{line} -> {}", normalize(&result)));
        for (name, sess) in sessions.iter_mut() {
            if let Some(pending) = sess.pending.clone()
                && let Some(r) = finish_or_block(admin, sess)
            {
                sess.pending = None;
                let words: Vec<&str> = pending.split_whitespace().skip(1).collect();
                let result = outcome(sess, &words, r);
                out.push(format!("  {name} unblocked: {pending} -> {}", normalize(&result)));
            }
        }
    }
    for (name, s) in &sessions {
        assert!(s.pending.is_none(), "session {name} is still blocked at the end of the script");
    }
    out
}

/// `INSERT` of the next VID of `name`, and that VID.
fn insert_sql(tables: &mut HashMap<String, PgTable>, name: &str, vals: &[&str]) -> (String, u64) {
    let t = tables.get_mut(name).expect("insert into an unknown table");
    let vid = t.next_vid;
    t.next_vid += 1;
    (format!("INSERT INTO {name} VALUES ({vid}, {}) RETURNING vid", vals.join(", ")), vid)
}

/// The SQL of a session statement.
fn session_sql(tables: &mut HashMap<String, PgTable>, words: &[&str]) -> String {
    let cols = |name: &str| tables.get(name).expect("unknown table").columns.join(", ");
    match words {
        ["get", name, vid] => format!("SELECT {} FROM {name} WHERE vid = {vid}", cols(name)),
        ["sum", name, col] => format!("SELECT sum({col}) FROM {name}"),
        ["count", name, ..] => format!("SELECT count(*) FROM {name}"),
        ["rows", name] => format!("SELECT vid, {} FROM {name} ORDER BY vid", cols(name)),
        ["rows", name, "where", col, op, v] => {
            let op = if *op == "!=" { "<>" } else { op };
            format!("SELECT vid, {} FROM {name} WHERE {col} {op} {v} ORDER BY vid", cols(name))
        }
        ["insert", name, vals @ ..] => insert_sql(tables, name, vals).0,
        ["update", name, vid, vals @ ..] => {
            let t = tables.get(*name).expect("unknown table");
            let set: Vec<String> = t.columns.iter().zip(vals).map(|(c, v)| format!("{c} = {v}")).collect();
            format!("UPDATE {name} SET {} WHERE vid = {vid} RETURNING vid", set.join(", "))
        }
        ["delete", name, vid] => format!("DELETE FROM {name} WHERE vid = {vid} RETURNING vid"),
        ["commit"] => "COMMIT".into(),
        ["abort"] => "ROLLBACK".into(),
        other => panic!("cannot translate statement {other:?}"),
    }
}

/// A finished statement's outcome in the runner's words; tracks the
/// session's transaction state.
fn outcome(sess: &mut PgSession, words: &[&str], r: Result<Vec<String>, String>) -> String {
    let failed_before = sess.state == TxState::Failed;
    let rows = match r {
        Ok(rows) => rows,
        Err(e) => {
            sess.state = if matches!(words, ["commit"] | ["abort"]) { TxState::Ended } else { TxState::Failed };
            return format!("error: {e}");
        }
    };
    let cells = |row: &str| -> String {
        let c: Vec<&str> = row.split('|').map(|c| if c.is_empty() { "null" } else { c }).collect();
        format!("({})", c.join(", "))
    };
    match words {
        ["commit"] | ["abort"] => {
            sess.state = TxState::Ended;
            match (words[0], failed_before) {
                ("commit", true) => "ended".into(),
                ("commit", false) => "committed".into(),
                _ => "aborted".into(),
            }
        }
        ["get", ..] => rows.first().map_or("none".into(), |r| cells(r)),
        ["sum", ..] | ["count", ..] => {
            rows.first().map_or("null".into(), |v| if v.is_empty() { "null".into() } else { v.clone() })
        }
        ["rows", ..] if rows.is_empty() => "no rows".into(),
        ["rows", ..] => rows
            .iter()
            .map(|r| {
                let (vid, rest) = r.split_once('|').expect("vid and columns");
                format!("{vid}:{}", cells(rest))
            })
            .collect::<Vec<_>>()
            .join(" "),
        ["insert", ..] => format!("vid {}", rows.first().expect("RETURNING vid")),
        ["update", ..] | ["delete", ..] => {
            if rows.is_empty() {
                "not found".into()
            } else {
                "ok".into()
            }
        }
        other => panic!("no outcome for {other:?}"),
    }
}
