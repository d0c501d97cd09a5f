//! The isolation scripts of `crates/txn/tests/scripts/` run as SQL through
//! the SQL engine, one connection per script session, all on one database:
//! in process ([`InProcess`]: a [`Session`] of one [`Engine`] on its own
//! thread; `crates/sql/tests/isolation.rs`) or through `ndpdb serve` (a
//! psql process per session; `crates/server/tests/isolation_psql.rs`,
//! which includes this directory by path). Both go through
//! [`check_all_scripts`], with one list of [`KNOWN_DIFFERENCES`].
//!
//! ```text
//!  script line ──► Translator ──► SQL ──► session thread ──► Session::run
//!       │                                     │ waits for a tuple lock?
//!       │       WaitProbe::is_waiting ◄───────┘ (the waits-for graph)
//!       ▼
//!  transcript in the golden files' words: `-> ok`, `-> blocked`,
//!  `  t2 unblocked: t2: update test 0 12 -> ok`, `-> 0:(12) 1:(22)`, ...
//! ```
//!
//! A statement is blocked when its transaction has an edge in the deadlock
//! detector's waits-for graph ([`WaitProbe`], or `Database::is_waiting` of
//! the psql session's transaction), the counterpart of the
//! transaction-API runner's `Database::is_waiting`: the runner waits until
//! the statement either finishes or waits, never for a fixed time. After a
//! session's transaction failed, its statements are not run ("ended"), as
//! PostgreSQL's harness does; COMMIT of the failed block rolls it back.

#[path = "../../../txn/tests/transcript/mod.rs"]
mod transcript;
mod translate;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ndpdb_sql::SqlError;
use ndpdb_sql::session::{Engine, EngineOptions, Session, StatementResult, WaitProbe};
use std::path::{Path, PathBuf};

use transcript::{parse_transcript, side_by_side};
pub use translate::{READ_MODES, Sql, Translator, outcome};

/// A statement neither finished nor waiting for a tuple lock after this
/// long is a bug in the engine, not a block.
pub const STUCK_AFTER: Duration = Duration::from_secs(60);

pub type Reply = Result<Vec<StatementResult>, SqlError>;

/// Where a session's transaction stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TxState {
    Open,
    /// A statement failed; only its end (COMMIT/ROLLBACK) runs.
    Failed,
    Ended,
}

/// A connection a script session runs on: statements go in as a batch; the
/// batch's results come back, or the statement running waits for a tuple
/// lock. In process ([`InProcess`]) or through a client of `ndpdb serve`
/// (the server's tests run each session as a psql process).
pub trait ScriptConn {
    /// Sends statements to run in order up to the first error.
    fn send(&mut self, sqls: Vec<String>) -> Result<(), String>;
    /// Waits until the statements sent finish (Some) or one waits for a
    /// tuple lock (None): exactly, from the waits-for graph, never from
    /// elapsed time.
    fn finish_or_block(&mut self) -> Option<Reply>;
}

/// Where a script's sessions come from.
pub trait ScriptBackend {
    /// A new session (no transaction yet).
    fn open(&mut self) -> Box<dyn ScriptConn>;
    /// Runs one autocommitted statement (the script's `table` and `insert`
    /// lines).
    fn admin(&mut self, sql: &str) -> Result<StatementResult, String>;
}

/// A script session: a connection, its transaction's state, and its
/// blocked statement if any.
struct ScriptSession {
    conn: Box<dyn ScriptConn>,
    state: TxState,
    /// A blocked statement: its script line and how to render its result.
    pending: Option<(String, Pending)>,
}

/// What a statement's result becomes once it finishes.
#[derive(Clone)]
enum Pending {
    One,
    Insert(u64),
    EveryMode,
}

impl ScriptSession {
    /// A session that ran `BEGIN ISOLATION LEVEL ...`; returns it and
    /// `SHOW transaction_isolation`'s answer.
    fn begin(backend: &mut dyn ScriptBackend, level: &str) -> Result<(ScriptSession, String), String> {
        let sql_level = match level {
            "rc" => "READ COMMITTED",
            "rr" => "REPEATABLE READ",
            "serializable" => "SERIALIZABLE",
            other => return Err(format!("unknown isolation level {other}")),
        };
        let mut s = ScriptSession { conn: backend.open(), state: TxState::Open, pending: None };
        let shown =
            s.run_now(vec![format!("BEGIN ISOLATION LEVEL {sql_level}"), "SHOW transaction_isolation".into()])?;
        let level = shown.last().and_then(|r| r.rows.first()).and_then(|row| row.first());
        let level = level.map(ndpdb_sql::types::format::pg_text).ok_or("SHOW returned no row")?;
        Ok((s, level))
    }

    /// Runs statements that cannot block; their results.
    fn run_now(&mut self, sqls: Vec<String>) -> Result<Vec<StatementResult>, String> {
        self.conn.send(sqls)?;
        match self.conn.finish_or_block() {
            Some(r) => r.map_err(|e| format!("error: {}", e.message)),
            None => Err("a statement that cannot block waits for a lock".into()),
        }
    }

    /// The outcome of a finished statement; tracks the transaction's state.
    fn finished(&mut self, words: &[&str], how: &Pending, r: Reply) -> String {
        let end = matches!(words, ["commit"] | ["abort"]);
        let results = match r {
            Ok(results) => results,
            Err(e) => {
                self.state = if end { TxState::Ended } else { TxState::Failed };
                return format!("error: {}", e.message);
            }
        };
        if end {
            self.state = TxState::Ended;
        }
        let rendered = match how {
            Pending::Insert(vid) => Ok(format!("vid {vid}")),
            Pending::One => results.last().ok_or_else(|| "no result".to_string()).and_then(|r| outcome(words, r)),
            Pending::EveryMode => every_mode(words, &results),
        };
        rendered.unwrap_or_else(|e| format!("error: {e}"))
    }
}

#[allow(dead_code)]
/// The in-process backend: one [`Session`] of one [`Engine`] per script
/// session, each on its own thread, blocking told by its [`WaitProbe`].
pub struct InProcess {
    engine: Arc<Engine>,
    admin: Session,
    _dir: tempfile::TempDir,
}

#[allow(dead_code)]
impl InProcess {
    /// A new database in a temporary directory.
    pub fn new() -> InProcess {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let opts = EngineOptions { dir: dir.path().to_path_buf(), capacity_mib: Some(32), ..EngineOptions::default() };
        let engine = Engine::open(&opts).expect("opening a new database");
        let admin = engine.session();
        InProcess { engine, admin, _dir: dir }
    }
}

impl ScriptBackend for InProcess {
    fn open(&mut self) -> Box<dyn ScriptConn> {
        let mut session = self.engine.session();
        let probe = session.wait_probe();
        let (tx, srx) = channel::<Vec<String>>();
        let (stx, rx) = channel::<Reply>();
        let thread = std::thread::spawn(move || {
            for sqls in srx {
                let mut results = Vec::new();
                let mut reply = Ok(());
                for sql in &sqls {
                    match session.run(sql).pop() {
                        Some(Ok(r)) => results.push(r),
                        Some(Err(e)) => {
                            reply = Err(e);
                            break;
                        }
                        None => {}
                    }
                }
                if stx.send(reply.map(|()| results)).is_err() {
                    break;
                }
            }
        });
        Box::new(ThreadConn { tx: Some(tx), rx, probe, thread: Some(thread) })
    }

    fn admin(&mut self, sql: &str) -> Result<StatementResult, String> {
        self.admin.run(sql).pop().ok_or("no result")?.map_err(|e| format!("error: {}", e.message))
    }
}

/// A session on its own thread, fed statements over a channel, so that one
/// can block while the script goes on.
struct ThreadConn {
    tx: Option<Sender<Vec<String>>>,
    rx: Receiver<Reply>,
    probe: WaitProbe,
    thread: Option<JoinHandle<()>>,
}

impl ScriptConn for ThreadConn {
    fn send(&mut self, sqls: Vec<String>) -> Result<(), String> {
        self.tx.as_ref().ok_or("the session ended")?.send(sqls).map_err(|_| "the session's thread ended".into())
    }

    fn finish_or_block(&mut self) -> Option<Reply> {
        let t0 = Instant::now();
        loop {
            match self.rx.recv_timeout(Duration::from_millis(2)) {
                Ok(r) => return Some(r),
                Err(RecvTimeoutError::Disconnected) => panic!("a session's thread ended"),
                Err(RecvTimeoutError::Timeout) if self.probe.is_waiting() => return None,
                Err(RecvTimeoutError::Timeout) => {
                    assert!(t0.elapsed() < STUCK_AFTER, "a statement neither finished nor waited for a lock")
                }
            }
        }
    }
}

impl Drop for ThreadConn {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let joined = t.join();
            if !std::thread::panicking() {
                joined.expect("a session's thread panicked");
            }
        }
    }
}

/// The outcome of a query run in every [`READ_MODES`] mode: the same in
/// all, or a MISMATCH naming the modes.
fn every_mode(words: &[&str], results: &[StatementResult]) -> Result<String, String> {
    let queries: Vec<&StatementResult> = results.iter().filter(|r| r.tag.starts_with("SELECT")).collect();
    if queries.len() != READ_MODES.len() {
        return Err(format!("{} query results for {} modes", queries.len(), READ_MODES.len()));
    }
    let outs = queries.iter().map(|r| outcome(words, r)).collect::<Result<Vec<_>, _>>()?;
    for (o, (mode, _)) in outs.iter().zip(READ_MODES).skip(1) {
        if *o != outs[0] {
            return Ok(format!("MISMATCH {}={} {mode}={o}", READ_MODES[0].0, outs[0]));
        }
    }
    Ok(outs[0].clone())
}

/// The statements that run a query in every mode.
fn every_mode_sql(query: &str) -> Vec<String> {
    let mut sqls = Vec::new();
    for (_, sets) in READ_MODES {
        sqls.extend(sets.iter().map(|s| s.to_string()));
        sqls.push(query.to_string());
    }
    sqls
}

/// The script's sessions and its transcript so far.
struct Run<'a> {
    backend: &'a mut dyn ScriptBackend,
    translator: Translator,
    sessions: BTreeMap<String, ScriptSession>,
    out: String,
}

impl Run<'_> {
    /// One script line's result (after `  -> `).
    fn line(&mut self, line: &str) -> Result<String, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["table", name, cols @ ..] => {
                let sql = self.translator.create_table(name, cols);
                self.backend.admin(&sql).map(|_| "ok".into())
            }
            ["insert", name, vals @ ..] => {
                let (sql, vid) = self.translator.insert(name, vals)?;
                self.backend.admin(&sql).map(|_| format!("vid {vid}"))
            }
            ["begin", s, level] => {
                let (sess, shown) = ScriptSession::begin(&mut *self.backend, level)?;
                if let Some(old) = self.sessions.insert(s.to_string(), sess) {
                    return Err(format!("session {s} began twice (old state kept: {})", old.pending.is_some()));
                }
                Ok(shown)
            }
            [s, rest @ ..] if s.ends_with(':') => self.session_line(s.trim_end_matches(':'), line, rest),
            other => Err(format!("unknown line {other:?}")),
        }
    }

    /// `S: statement`: runs it, or reports it blocked.
    fn session_line(&mut self, name: &str, line: &str, words: &[&str]) -> Result<String, String> {
        let sess = self.sessions.get_mut(name).ok_or_else(|| format!("unknown session {name}"))?;
        if sess.pending.is_some() {
            return Err(format!("session {name} is blocked"));
        }
        match sess.state {
            TxState::Ended => return Ok("ended".into()),
            TxState::Failed if !matches!(words, ["commit"] | ["abort"]) => return Ok("ended".into()),
            _ => {}
        }
        let (sqls, how) = match self.translator.statement(words)? {
            Sql::One(sql) => (vec![sql], Pending::One),
            Sql::Insert(sql, vid) => (vec![sql], Pending::Insert(vid)),
            Sql::EveryMode(q) => (every_mode_sql(&q), Pending::EveryMode),
        };
        sess.conn.send(sqls)?;
        match sess.conn.finish_or_block() {
            Some(r) => Ok(sess.finished(words, &how, r)),
            None => {
                sess.pending = Some((line.to_string(), how));
                Ok("blocked".into())
            }
        }
    }

    /// Reports each blocked statement the last line let finish.
    fn unblocked(&mut self) {
        for (name, sess) in self.sessions.iter_mut() {
            let Some((line, how)) = sess.pending.clone() else { continue };
            if let Some(r) = sess.conn.finish_or_block() {
                sess.pending = None;
                let words: Vec<&str> = line.split_whitespace().skip(1).collect();
                let result = sess.finished(&words, &how, r);
                self.out.push_str(&format!("  {name} unblocked: {line} -> {result}\n"));
            }
        }
    }
}

/// Runs a script through the SQL engine in process; returns its
/// transcript in the `.golden` files' format.
#[allow(dead_code)]
pub fn run_script(text: &str) -> String {
    run_script_on(&mut InProcess::new(), text)
}

/// Runs a script on `backend`'s sessions; returns its transcript.
pub fn run_script_on(backend: &mut dyn ScriptBackend, text: &str) -> String {
    let mut run = Run { backend, translator: Translator::default(), sessions: BTreeMap::new(), out: String::new() };
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            run.out.push_str(line);
            run.out.push('\n');
            continue;
        }
        let result =
            run.line(line).unwrap_or_else(|e| if e.starts_with("error: ") { e } else { format!("error: {e}") });
        run.out.push_str(&format!("{line}\n  -> {result}\n"));
        run.unblocked();
    }
    let blocked: Vec<&String> = run.sessions.iter().filter(|(_, s)| s.pending.is_some()).map(|(n, _)| n).collect();
    assert!(blocked.is_empty(), "sessions {blocked:?} are still blocked at the end of the script");
    drop(std::mem::take(&mut run.sessions));
    run.out
}

/// Scripts whose outcome through SQL differs from their golden file, and
/// why. Each is checked to still differ.
pub const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

/// The golden scripts, `crates/txn/tests/scripts/*.txt`, sorted.
fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../txn/tests/scripts");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    names.sort();
    names
}

/// Runs every golden script (those whose name contains `ISOLATION_SCRIPT`
/// when it is set) with `run` and compares each transcript with its
/// golden file; panics listing every script that differs, or that matches
/// although [`KNOWN_DIFFERENCES`] lists it. `via` names the runner.
pub fn check_all_scripts(via: &str, run: &mut dyn FnMut(&str) -> String) {
    let scripts = scripts();
    assert!(scripts.len() >= 55, "scripts missing: {} found", scripts.len());
    let only = std::env::var("ISOLATION_SCRIPT").ok();
    let (mut failures, mut passed) = (Vec::new(), 0);
    for path in &scripts {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let golden = std::fs::read_to_string(path.with_extension("golden")).unwrap_or_default();
        let got = parse_transcript(&run(&text));
        let want = parse_transcript(&golden);
        let known = KNOWN_DIFFERENCES.iter().find(|(n, _)| *n == name);
        match (got == want, known) {
            (true, None) => passed += 1,
            (true, Some(_)) => {
                failures.push(format!("{name} now matches its golden file: remove it from KNOWN_DIFFERENCES"))
            }
            (false, None) => failures
                .push(format!("{name} differs from its golden file:\n{}", side_by_side(&got, &want, via, "golden"))),
            (false, Some((_, why))) => {
                eprintln!("known difference ({why}) {name}:\n{}", side_by_side(&got, &want, via, "golden"))
            }
        }
    }
    eprintln!("{passed} of {} isolation scripts pass whole through {via}", scripts.len());
    assert!(failures.is_empty(), "{}\n{} failed", failures.join("\n\n"), failures.len());
}
