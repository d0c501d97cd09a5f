//! One connection's message loop: pgwire's, plus the server's shutdown.
//!
//! ```text
//!  TCP ─► negotiate (SSLRequest → 'N') ─► loop ┬─ next message ─► pgwire's process_message
//!                                              └─ shutdown ─► FATAL 57P01, close
//! ```
//!
//! pgwire's `process_socket` owns its socket until the client leaves, so
//! a server stopping could only drop it: clients would see the connection
//! reset, not PostgreSQL's "terminating connection due to administrator
//! command". This loop is pgwire's (the same `process_message` and
//! `process_error`), with the shutdown watched between messages: a
//! connection waiting for its client gets the FATAL at once; one running
//! a statement gets it after the statement ends (the server cancels
//! running statements when it stops, so that is soon). A startup that
//! does not finish in 60 s ends the connection, as in pgwire.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::ErrorInfo;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::conn::Conn;
use crate::extended::Stmt;

/// How long a client may take to finish its startup.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves `tcp` with `conn` until the client leaves or `shutdown` turns true.
pub(crate) async fn serve(tcp: TcpStream, conn: Arc<Conn>, mut shutdown: watch::Receiver<bool>) -> io::Result<()> {
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        _ = stopped(&mut shutdown) => return Ok(()),
        s = negotiate_tls::<Stmt>(tcp, None) => s?,
    };
    let Some(mut socket) = negotiated else { return Ok(()) };
    let cancel = conn.registry();
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup | PgWireConnectionState::AuthenticationInProgress
        );
        let msg = tokio::select! {
            biased;
            _ = stopped(&mut shutdown) => None,
            _ = &mut startup_timeout, if starting => return Ok(()),
            m = socket.next() => Some(m),
        };
        let Some(msg) = msg else {
            let fatal = ErrorInfo::new(
                "FATAL".into(),
                "57P01".into(),
                "terminating connection due to administrator command".into(),
            );
            let _ = socket.send(PgWireBackendMessage::ErrorResponse(fatal.into())).await;
            let _ = socket.close().await;
            return Ok(());
        };
        let msg = match msg {
            Some(Ok(msg)) => msg,
            Some(Err(e)) => {
                crate::log::info(format_args!("connection {}: closing after a bad message: {e}", conn.id));
                return Ok(());
            }
            None => return Ok(()),
        };
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            return Ok(());
        }
        let extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended_query) => extended_query,
            _ => msg.is_extended_query(),
        };
        let is_cancel = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        let r =
            process_message(msg, &mut socket, conn.clone(), conn.clone(), conn.clone(), conn.clone(), cancel.clone())
                .await;
        if let Err(e) = r {
            if e.is_fatal() {
                // PostgreSQL sends a FATAL and closes; pgwire's
                // process_error would add a ReadyForQuery first.
                let info: ErrorInfo = e.into();
                let _ = socket.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
                let _ = socket.close().await;
                return Ok(());
            }
            process_error(&mut socket, e, extended_query).await?;
        }
        if is_cancel {
            return Ok(());
        }
    }
}

/// Completes when the server stops.
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
