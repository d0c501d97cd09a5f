//! ndpdb as the fuzzer's engine: an embedded database in a temporary
//! directory, and a session that runs on its own thread so that a panic
//! or a hang in the engine becomes a finding instead of the fuzzer's end.
//!
//! ```text
//!  fuzzer ──sql──► channel ──► worker thread: catch_unwind(session.run(sql))
//!         ◄─Answer─ channel ◄──  (Rows | Error | Panic)
//!  no answer after the watchdog's time: the cancel flag is set; still none
//!  after as long again: Hang, and the worker (and its engine) is abandoned.
//! ```

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

use crate::ndpdb::{error, run_on};
use crate::{EngineError, QueryOutput};
use ndpdb_sql::session::{Engine, EngineOptions};

/// What an engine did with one statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Rows(QueryOutput),
    Error(EngineError),
    /// The engine panicked (the message).
    Panic(String),
    /// No answer within the watchdog's time, even after cancelling.
    Hang,
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic with a non-text payload".into())
}

/// One embedded ndpdb database with one session on a worker thread.
pub struct NdpdbWorker {
    requests: Sender<String>,
    answers: Receiver<Answer>,
    cancel: Arc<AtomicBool>,
    watchdog: Duration,
    _dir: tempfile::TempDir,
}

impl NdpdbWorker {
    /// A new empty database; `watchdog` bounds each statement's wait.
    pub fn open(watchdog: Duration) -> Result<NdpdbWorker, EngineError> {
        let dir = tempfile::Builder::new()
            .prefix("ndpdb-fuzz-")
            .tempdir()
            .map_err(|e| EngineError { sqlstate: "58030".into(), message: format!("temporary directory: {e}") })?;
        let opts = EngineOptions { dir: dir.path().to_path_buf(), capacity_mib: Some(64), ..EngineOptions::default() };
        let engine: Arc<Engine> = Engine::open(&opts).map_err(error)?;
        let mut session = engine.session();
        let cancel = session.cancel_flag();
        let (requests, inbox) = channel::<String>();
        let (outbox, answers) = channel::<Answer>();
        std::thread::Builder::new()
            .name("ndpdb-fuzz-session".into())
            .spawn(move || {
                for sql in inbox {
                    let answer = match catch_unwind(AssertUnwindSafe(|| run_on(&mut session, &sql))) {
                        Ok(Ok(out)) => Answer::Rows(out),
                        Ok(Err(e)) => Answer::Error(e),
                        Err(p) => Answer::Panic(panic_message(&*p)),
                    };
                    if outbox.send(answer).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| EngineError { sqlstate: "58000".into(), message: format!("starting a thread: {e}") })?;
        Ok(NdpdbWorker { requests, answers, cancel, watchdog, _dir: dir })
    }

    /// Runs `sql`. After a `Panic` or a `Hang` the worker should be
    /// replaced (the engine's state is unknown).
    pub fn run(&mut self, sql: &str) -> Answer {
        if self.requests.send(sql.to_string()).is_err() {
            return Answer::Panic("the session's thread is gone".into());
        }
        match self.answers.recv_timeout(self.watchdog) {
            Ok(a) => return a,
            Err(RecvTimeoutError::Disconnected) => return Answer::Panic("the session's thread is gone".into()),
            Err(RecvTimeoutError::Timeout) => self.cancel.store(true, Ordering::Relaxed),
        }
        self.answers.recv_timeout(self.watchdog).unwrap_or(Answer::Hang)
    }
}

impl Drop for NdpdbWorker {
    fn drop(&mut self) {
        // Dropping `requests` ends the worker's loop; a hung worker is
        // left behind (its thread still holds the engine).
        self.cancel.store(true, Ordering::Relaxed);
    }
}
