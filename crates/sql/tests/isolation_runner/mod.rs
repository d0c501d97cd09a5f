//! The isolation scripts of `crates/txn/tests/scripts/` run as SQL through
//! the SQL engine, one [`Session`] per script session, each on its own
//! thread, all on one [`Engine`].
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
//! detector's waits-for graph ([`WaitProbe`]), the counterpart of the
//! transaction-API runner's `Database::is_waiting`: the runner waits until
//! the statement either finishes or waits, never for a fixed time. After a
//! session's transaction failed, its statements are not run ("ended"), as
//! PostgreSQL's harness does; COMMIT of the failed block rolls it back.

mod translate;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ndpdb_sql::SqlError;
use ndpdb_sql::session::{Engine, EngineOptions, StatementResult, WaitProbe};
use translate::{READ_MODES, Sql, Translator, outcome};

/// A statement neither finished nor waiting for a tuple lock after this
/// long is a bug in the engine, not a block.
const STUCK_AFTER: Duration = Duration::from_secs(60);

type Reply = Result<Vec<StatementResult>, SqlError>;

/// Where a session's transaction stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TxState {
    Open,
    /// A statement failed; only its end (COMMIT/ROLLBACK) runs.
    Failed,
    Ended,
}

/// A script session: a SQL session on its own thread, fed statements over
/// a channel, so that one can block while the script goes on.
struct ScriptSession {
    tx: Sender<Vec<String>>,
    rx: Receiver<Reply>,
    probe: WaitProbe,
    thread: JoinHandle<()>,
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
    fn begin(engine: &Arc<Engine>, level: &str) -> Result<(ScriptSession, String), String> {
        let sql_level = match level {
            "rc" => "READ COMMITTED",
            "rr" => "REPEATABLE READ",
            "serializable" => "SERIALIZABLE",
            other => return Err(format!("unknown isolation level {other}")),
        };
        let mut session = engine.session();
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
        let mut s = ScriptSession { tx, rx, probe, thread, state: TxState::Open, pending: None };
        let shown =
            s.run_now(vec![format!("BEGIN ISOLATION LEVEL {sql_level}"), "SHOW transaction_isolation".into()])?;
        let level = shown.last().and_then(|r| r.rows.first()).and_then(|row| row.first());
        let level = level.map(ndpdb_sql::types::format::pg_text).ok_or("SHOW returned no row")?;
        Ok((s, level))
    }

    /// Runs statements that cannot block; their results.
    fn run_now(&mut self, sqls: Vec<String>) -> Result<Vec<StatementResult>, String> {
        self.tx.send(sqls).map_err(|_| "the session's thread ended")?;
        match self.finish_or_block() {
            Some(r) => r.map_err(|e| format!("error: {}", e.message)),
            None => Err("a statement that cannot block waits for a lock".into()),
        }
    }

    /// Waits until the session's statements finish (Some) or wait for a
    /// tuple lock (None).
    fn finish_or_block(&self) -> Option<Reply> {
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

/// Runs one autocommitted statement on the admin session.
fn admin(s: &mut ndpdb_sql::session::Session, sql: &str) -> Result<StatementResult, String> {
    s.run(sql).pop().ok_or("no result")?.map_err(|e| format!("error: {}", e.message))
}

/// The script's sessions and its transcript so far.
struct Run {
    engine: Arc<Engine>,
    admin: ndpdb_sql::session::Session,
    translator: Translator,
    sessions: BTreeMap<String, ScriptSession>,
    out: String,
}

impl Run {
    /// One script line's result (after `  -> `).
    fn line(&mut self, line: &str) -> Result<String, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["table", name, cols @ ..] => {
                let sql = self.translator.create_table(name, cols);
                admin(&mut self.admin, &sql).map(|_| "ok".into())
            }
            ["insert", name, vals @ ..] => {
                let (sql, vid) = self.translator.insert(name, vals)?;
                admin(&mut self.admin, &sql).map(|_| format!("vid {vid}"))
            }
            ["begin", s, level] => {
                let (sess, shown) = ScriptSession::begin(&self.engine, level)?;
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
        sess.tx.send(sqls).map_err(|_| "the session's thread ended")?;
        match sess.finish_or_block() {
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
            if let Some(r) = sess.finish_or_block() {
                sess.pending = None;
                let words: Vec<&str> = line.split_whitespace().skip(1).collect();
                let result = sess.finished(&words, &how, r);
                self.out.push_str(&format!("  {name} unblocked: {line} -> {result}\n"));
            }
        }
    }
}

/// Runs a script through the SQL engine; returns its transcript in the
/// `.golden` files' format.
pub fn run_script(text: &str) -> String {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let opts = EngineOptions { dir: dir.path().to_path_buf(), capacity_mib: Some(32), ..EngineOptions::default() };
    let engine = Engine::open(&opts).expect("opening a new database");
    let admin = engine.session();
    let mut run =
        Run { engine, admin, translator: Translator::default(), sessions: BTreeMap::new(), out: String::new() };
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
    for (_, s) in std::mem::take(&mut run.sessions) {
        drop(s.tx);
        s.thread.join().expect("a session's thread panicked");
    }
    run.out
}
