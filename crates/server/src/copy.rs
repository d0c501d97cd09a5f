//! `COPY t FROM STDIN` on the wire: the client's CopyData messages become
//! a reader the session's [`Session::copy_in`] consumes while they arrive.
//!
//! ```text
//!  Query "COPY t FROM STDIN" ─► Session::copy_in_target ─► CopyInResponse
//!                                    │ spawn_blocking: Session::copy_in(reader)
//!  CopyData ─► channel (16 messages: backpressure) ─► ChannelReader ─┘
//!  CopyDone ─► Done; the load's result ─► CommandComplete "COPY n"
//!  CopyFail, or the connection lost ─► the reader fails ─► rollback
//! ```
//!
//! The load runs as the data comes, so memory stays at the channel's 16
//! messages and one chunk of rows, whatever the data's size. An error in
//! the middle (a bad row) ends the load at once; the data still coming is
//! discarded, and CopyDone answers with the error, as PostgreSQL does. The
//! reader reports the end of the data only after CopyDone: a CopyFail or a
//! connection that closes mid-stream is an error, so the load rolls back
//! instead of committing a prefix.

use std::fmt::Debug;
use std::io::{self, BufReader, Read};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Buf, Bytes};
use futures::{Sink, SinkExt};
use ndpdb_sql::SqlError;
use ndpdb_sql::session::{CopyIn, Session, StatementResult};
use parking_lot::Mutex;
use pgwire::api::ClientInfo;
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::Tag;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use tokio::sync::mpsc;

use crate::conn::Conn;
use crate::errors::to_pgwire;

/// One message of the client's data stream.
pub(crate) enum Chunk {
    Data(Bytes),
    Done,
}

/// A load in progress: where the data goes and the load's outcome.
pub(crate) struct CopyTask {
    pub tx: mpsc::Sender<Chunk>,
    pub result: tokio::task::JoinHandle<Result<StatementResult, SqlError>>,
}

/// Starts loading `spec` on the blocking pool; the data follows on the
/// task's channel.
pub(crate) fn start(session: Arc<Mutex<Session>>, spec: CopyIn) -> CopyTask {
    let (tx, rx) = mpsc::channel(16);
    let result = tokio::task::spawn_blocking(move || {
        let mut s = session.lock();
        let mut reader = BufReader::with_capacity(256 << 10, ChannelReader { rx, cur: Bytes::new(), done: false });
        let r = s.copy_in(&spec, &mut reader);
        s.statement_finished();
        r
    });
    CopyTask { tx, result }
}

/// The CopyData payloads as bytes, blocking for the next message.
struct ChannelReader {
    rx: mpsc::Receiver<Chunk>,
    cur: Bytes,
    done: bool,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.cur.is_empty() {
            if self.done {
                return Ok(0);
            }
            match self.rx.blocking_recv() {
                Some(Chunk::Data(b)) => self.cur = b,
                Some(Chunk::Done) => self.done = true,
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the client ended COPY without CopyDone (CopyFail or connection lost)",
                    ));
                }
            }
        }
        let n = out.len().min(self.cur.len());
        out[..n].copy_from_slice(&self.cur[..n]);
        self.cur.advance(n);
        Ok(n)
    }
}

#[async_trait]
impl CopyHandler for Conn {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let tx = self.copy.lock().as_ref().map(|t| t.tx.clone());
        if let Some(tx) = tx {
            // A load that failed has dropped its receiver: the rest of the
            // data is discarded and CopyDone reports the error.
            let _ = tx.send(Chunk::Data(data.data)).await;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let task = self.copy.lock().take();
        let Some(task) = task else { return Err(protocol_violation("CopyDone without a COPY in progress")) };
        let _ = task.tx.send(Chunk::Done).await;
        drop(task.tx);
        let r =
            task.result.await.map_err(|e| PgWireError::ApiError(format!("the COPY's thread failed: {e}").into()))?;
        client.set_transaction_status(self.wire_status());
        match r {
            Ok(r) => {
                client.send(PgWireBackendMessage::CommandComplete(Tag::new(&r.tag).into())).await?;
                Ok(())
            }
            Err(e) => {
                crate::log::error(self.id, &e);
                Err(to_pgwire(&e))
            }
        }
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Without Done the reader fails and the load rolls back; wait for
        // it so the next statement sees the session idle again.
        let task = self.copy.lock().take();
        if let Some(task) = task {
            drop(task.tx);
            let _ = task.result.await;
        }
        client.set_transaction_status(self.wire_status());
        let e = SqlError::new(
            ndpdb_sql::error::SqlState::QUERY_CANCELED,
            format!("COPY from stdin failed: {}", fail.message),
        );
        to_pgwire(&e)
    }
}

fn protocol_violation(msg: &str) -> PgWireError {
    to_pgwire(&SqlError::new(ndpdb_sql::error::SqlState("08P01"), msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads what `msgs` carry; the sender is gone after them.
    fn read_all(msgs: Vec<Chunk>) -> io::Result<Vec<u8>> {
        let (tx, rx) = mpsc::channel(msgs.len() + 1);
        for m in msgs {
            tx.try_send(m).map_err(|_| io::Error::other("channel full"))?;
        }
        drop(tx);
        let mut r = ChannelReader { rx, cur: Bytes::new(), done: false };
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn data_ends_at_copydone_and_a_lost_stream_is_an_error() {
        let ok = read_all(vec![Chunk::Data("1\t".into()), Chunk::Data("x\n".into()), Chunk::Done]).unwrap();
        assert_eq!(ok, b"1\tx\n");
        let lost = read_all(vec![Chunk::Data("1\tx\n".into())]).unwrap_err();
        assert_eq!(lost.kind(), io::ErrorKind::ConnectionAborted);
    }
}
