//! A connection's SCRAM-SHA-256 exchange on the wire, when the server has
//! a `--password-file` (`auth.rs`; the mechanism itself is `scram.rs`).
//!
//! ```text
//!  StartupMessage ──► AuthenticationSASL ["SCRAM-SHA-256"]        step: Initial
//!  SASLInitialResponse ──► AuthenticationSASLContinue (server-first)  step: Final
//!  SASLResponse ──► AuthenticationSASLFinal (v=…) ──► AuthenticationOk,
//!                   ParameterStatus…, BackendKeyData, ReadyForQuery
//!             └──► FATAL 28P01 password authentication failed for user "x"
//! ```
//!
//! pgwire decodes a password-family message only while the connection is
//! in `AuthenticationInProgress`, and leaves its meaning to the handler:
//! [`ScramStep`] says which SASL message comes next. A wrong password and
//! an unknown user both end in the same FATAL 28P01 (the unknown user's
//! exchange runs against a mock verifier, so it looks the same on the
//! wire); a malformed message is FATAL 08P01, as PostgreSQL answers.
//! Either way the connection closes after the error.

use std::fmt::Debug;

use bytes::Bytes;
use futures::{Sink, SinkExt};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::startup::{Authentication, PasswordMessageFamily};

use crate::conn::Conn;
use crate::errors::fatal;
use crate::scram::{self, ScramError, ServerFirst, Verifier};

/// Which SASL message a connection expects next.
#[derive(Debug, Default)]
pub enum ScramStep {
    /// No exchange (trust, or not started).
    #[default]
    None,
    /// AuthenticationSASL sent: the SASLInitialResponse comes next.
    Initial,
    /// Server-first sent: the client's final message comes next.
    Final(Box<(ServerFirst, Verifier, bool)>),
}

fn user<C: ClientInfo>(client: &C) -> String {
    client.metadata().get("user").cloned().unwrap_or_default()
}

/// Sends AuthenticationSASL offering SCRAM-SHA-256.
pub(crate) async fn ask_for_scram<C>(conn: &Conn, client: &mut C) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    *conn.scram.lock() = ScramStep::Initial;
    client.set_state(PgWireConnectionState::AuthenticationInProgress);
    client.send(PgWireBackendMessage::Authentication(Authentication::SASL(vec![scram::MECHANISM.into()]))).await?;
    Ok(())
}

/// Takes one SASL message; leaves the connection in
/// `AuthenticationInProgress` while the exchange goes on, and in
/// `AwaitingStartup` once it succeeded (the caller finishes the startup).
pub(crate) async fn scram_message<C>(conn: &Conn, client: &mut C, msg: PasswordMessageFamily) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let Some(passwords) = conn.passwords.clone() else {
        return Err(fatal("08P01", "unexpected password message: this server does not ask for passwords"));
    };
    let step = std::mem::take(&mut *conn.scram.lock());
    let user = user(client);
    match step {
        ScramStep::None => Err(fatal("08P01", "unexpected password message before the startup message")),
        ScramStep::Initial => {
            let initial = msg.into_sasl_initial_response()?;
            if initial.auth_method != scram::MECHANISM {
                return Err(fatal("08P01", "client selected an invalid SASL authentication mechanism"));
            }
            let data = initial.data.unwrap_or_default();
            let (verifier, known) = passwords.verifier(&user);
            let first = scram::client_first(&data, &verifier, &scram::server_nonce()).map_err(to_fatal(&user))?;
            let reply = Authentication::SASLContinue(Bytes::from(first.message.clone()));
            *conn.scram.lock() = ScramStep::Final(Box::new((first, verifier, known)));
            client.send(PgWireBackendMessage::Authentication(reply)).await?;
            Ok(())
        }
        ScramStep::Final(state) => {
            let (first, verifier, known) = *state;
            let response = msg.into_sasl_response()?;
            let outcome = scram::client_final(&first, &verifier, &response.data);
            let last = match outcome {
                Ok(_) if !known => Err(ScramError::Failed),
                other => other,
            }
            .map_err(to_fatal(&user))?;
            client.send(PgWireBackendMessage::Authentication(Authentication::SASLFinal(Bytes::from(last)))).await?;
            client.set_state(PgWireConnectionState::AwaitingStartup);
            crate::log::info(format_args!("connection {}: user \"{user}\" authenticated (SCRAM-SHA-256)", conn.id));
            Ok(())
        }
    }
}

/// The FATAL a failed exchange ends with (and the server's log line).
fn to_fatal(user: &str) -> impl Fn(ScramError) -> PgWireError + '_ {
    move |e| match e {
        ScramError::Failed => {
            crate::log::info(format_args!("password authentication failed for user \"{user}\""));
            fatal("28P01", format!("password authentication failed for user \"{user}\""))
        }
        ScramError::Malformed(detail) => {
            crate::log::info(format_args!("malformed SCRAM message from user \"{user}\": {detail}"));
            let mut info =
                pgwire::error::ErrorInfo::new("FATAL".into(), "08P01".into(), "malformed SCRAM message".into());
            info.detail = Some(detail);
            PgWireError::UserError(Box::new(info))
        }
    }
}
