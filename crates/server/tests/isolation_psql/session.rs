//! One script session as a psql process: statements written to its stdin,
//! each followed by `\echo @@n` and `\warn @@n`, so that its output on
//! stdout (rows, command tag) and on stderr (an error) ends with a marker.
//! psql runs unaligned (`-A`), tuples only (`-t`), not quiet (command tags
//! are printed), NULL printed as [`NULL`].

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use ndpdb_sql::SqlError;
use ndpdb_sql::error::SqlState;
use ndpdb_sql::session::{Engine, StatementResult};
use ndpdb_sql::types::Value;

use super::isolation_runner::{Reply, STUCK_AFTER, ScriptConn};

/// How psql prints NULL here.
const NULL: &str = "<NULL>";

pub struct PsqlSession {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<String>,
    err: Receiver<String>,
    engine: Arc<Engine>,
    /// The session's transaction, once its BEGIN made one.
    txn: Option<u64>,
    /// `Database::active` before the batch in flight, while `txn` is None.
    active_before: Vec<u64>,
    /// The batch in flight: each statement's marker number and SQL.
    batch: Vec<(u64, String)>,
    /// Results of the batch's statements finished so far.
    results: Vec<StatementResult>,
    /// The first error of the batch, once seen.
    error: Option<String>,
    /// Stdout lines of the statement running.
    lines: Vec<String>,
    next: u64,
}

/// A thread forwarding each line of `r` to the returned channel.
fn lines_of(r: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl PsqlSession {
    pub fn connect(addr: SocketAddr, engine: Arc<Engine>) -> PsqlSession {
        let mut child = Command::new("psql")
            .args(["-X", "-A", "-t", "-P", &format!("null={NULL}"), "-h", &addr.ip().to_string()])
            .args(["-p", &addr.port().to_string(), "-U", "ndpdb", "-d", "ndpdb"])
            .env("PGCONNECT_TIMEOUT", "10")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running psql");
        let out = lines_of(child.stdout.take().unwrap());
        let err = lines_of(child.stderr.take().unwrap());
        let stdin = child.stdin.take();
        PsqlSession {
            child,
            stdin,
            out,
            err,
            engine,
            txn: None,
            active_before: vec![],
            batch: vec![],
            results: vec![],
            error: None,
            lines: vec![],
            next: 0,
        }
    }

    /// Whether the session's transaction waits for a tuple lock now.
    fn waiting(&self) -> bool {
        self.txn.is_some_and(|id| self.engine.database().is_waiting(id))
    }

    /// The next line of `rx` (a panic if psql died or stays silent).
    fn recv(rx: &Receiver<String>, what: &str) -> String {
        rx.recv_timeout(STUCK_AFTER).unwrap_or_else(|e| panic!("psql's {what} ended or stayed silent: {e}"))
    }

    /// The result of the batch's first statement, whose stdout lines are
    /// all read: reads its stderr up to the marker.
    fn statement_done(&mut self) {
        let (n, sql) = self.batch.remove(0);
        let marker = format!("@@{n}");
        loop {
            let line = Self::recv(&self.err, "stderr");
            if line == marker {
                break;
            }
            if let Some((_, message)) = line.split_once("ERROR:  ") {
                self.error.get_or_insert_with(|| message.to_string());
            }
        }
        let lines = std::mem::take(&mut self.lines);
        if self.error.is_some() {
            return;
        }
        let query = ["SELECT", "SHOW"].iter().any(|k| sql.trim_start().to_uppercase().starts_with(k));
        let r = if query {
            let rows: Vec<Vec<Value>> = lines
                .iter()
                .map(|l| l.split('|').map(|c| if c == NULL { Value::Null } else { Value::Text(c.into()) }).collect())
                .collect();
            StatementResult { tag: format!("SELECT {}", rows.len()), columns: vec![], rows, notices: vec![] }
        } else {
            let tag = lines.last().cloned().unwrap_or_default();
            StatementResult { tag, columns: vec![], rows: vec![], notices: vec![] }
        };
        self.results.push(r);
    }

    /// The batch's reply, once every statement in it finished.
    fn reply(&mut self) -> Reply {
        if self.txn.is_none() {
            let active = self.engine.database().active();
            let new: Vec<u64> = active.into_iter().filter(|id| !self.active_before.contains(id)).collect();
            if let [id] = new.as_slice() {
                self.txn = Some(*id);
            }
        }
        let results = std::mem::take(&mut self.results);
        match self.error.take() {
            Some(message) => Err(SqlError::new(SqlState("XX000"), message)),
            None => Ok(results),
        }
    }
}

impl ScriptConn for PsqlSession {
    fn send(&mut self, sqls: Vec<String>) -> Result<(), String> {
        assert!(self.batch.is_empty(), "a batch is still running");
        if self.txn.is_none() {
            self.active_before = self.engine.database().active();
        }
        let mut text = String::new();
        for sql in sqls {
            self.next += 1;
            text.push_str(&format!("{sql};\n\\echo @@{n}\n\\warn @@{n}\n", n = self.next));
            self.batch.push((self.next, sql));
        }
        let stdin = self.stdin.as_mut().ok_or("psql's input is closed")?;
        stdin.write_all(text.as_bytes()).and_then(|()| stdin.flush()).map_err(|e| format!("writing to psql: {e}"))
    }

    fn finish_or_block(&mut self) -> Option<Reply> {
        let t0 = Instant::now();
        while let Some((n, _)) = self.batch.first() {
            let marker = format!("@@{n}");
            match self.out.recv_timeout(Duration::from_millis(2)) {
                Ok(line) if line == marker => self.statement_done(),
                Ok(line) => self.lines.push(line),
                Err(RecvTimeoutError::Disconnected) => panic!("psql ended: {:?}", self.child.try_wait()),
                Err(RecvTimeoutError::Timeout) if self.waiting() => return None,
                Err(RecvTimeoutError::Timeout) => {
                    assert!(t0.elapsed() < STUCK_AFTER, "a statement neither finished nor waited for a lock")
                }
            }
        }
        Some(self.reply())
    }
}

impl Drop for PsqlSession {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if std::thread::panicking() {
            // A statement may still wait for a lock: psql would wait with it.
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
