//! One client connection: its [`Session`] behind pgwire's handler traits.
//!
//! ```text
//!  socket ─► pgwire codec ─► StartupHandler   (trust, parameters, key data)
//!                        ├─► SimpleQueryHandler   Query: statements one by one
//!                        └─► ExtendedQueryHandler Parse/Bind/Describe/Execute
//!                                   │
//!                 spawn_blocking ───┴─► Session (sync; one per connection)
//! ```
//!
//! The session is synchronous (the engine blocks on the device, on locks,
//! on the CPU), so every call into it runs on tokio's blocking pool and
//! the connection's task awaits it; the runtime's worker threads only move
//! bytes. A connection runs one statement at a time, as PostgreSQL's
//! protocol does, so the session's mutex is never contended except by a
//! cancel request, which does not take it (it sets the session's cancel
//! flag).
//!
//! Transaction status. The `ReadyForQuery` byte must follow the session
//! (idle, in a block, in a failed block). pgwire derives it from the kind
//! of each response, so every result is classified from the session's
//! status before and after its statement: idle → block is a
//! `TransactionStart`, block → idle a `TransactionEnd`, an error an
//! `Error` (pgwire keeps idle idle and turns a block into a failed block,
//! which is what the session did).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, stream};
use ndpdb_sql::SqlError;
use ndpdb_sql::plan::Field;
use ndpdb_sql::session::{CopyIn, Session, StatementResult, TxnStatus};
use ndpdb_sql::types::Value;
use parking_lot::Mutex;
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::portal::Format;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::cursor::Cursors;
use crate::errors::to_error_info;
use crate::extended::Parser;
use crate::registry::Registry;
use crate::wire;

/// A connection's handlers (pgwire asks the factory for each).
pub struct Conn {
    pub(crate) session: Arc<Mutex<Session>>,
    /// A `COPY .. FROM STDIN` receiving data (`copy.rs`).
    pub(crate) copy: Mutex<Option<crate::copy::CopyTask>>,
    /// The connection's SQL cursors (`cursor.rs`).
    pub(crate) cursors: Arc<Mutex<Cursors>>,
    /// Names of the statements Parse made (for `DEALLOCATE ALL`).
    pub(crate) statement_names: Mutex<std::collections::BTreeSet<String>>,
    registry: Arc<Registry>,
    /// The connection's number (its backend pid for cancel requests).
    pub id: i32,
    pub(crate) parser: Arc<Parser>,
    /// `--password-file`'s users (None: trust).
    pub(crate) passwords: Option<Arc<crate::auth::Passwords>>,
    /// Where this connection's SCRAM exchange is (`startup.rs`).
    pub(crate) scram: Mutex<crate::startup::ScramStep>,
}

impl Conn {
    pub fn new(session: Session, registry: Arc<Registry>, id: i32) -> Conn {
        let session = Arc::new(Mutex::new(session));
        let cursors: Arc<Mutex<Cursors>> = Arc::default();
        let parser = Arc::new(Parser { session: session.clone(), cursors: cursors.clone() });
        let statement_names = Mutex::default();
        let (passwords, scram) = (None, Mutex::default());
        Conn { parser, session, copy: Mutex::new(None), cursors, statement_names, registry, id, passwords, scram }
    }

    /// Asks clients for a SCRAM-SHA-256 exchange against `passwords`.
    pub fn with_passwords(mut self, passwords: Option<Arc<crate::auth::Passwords>>) -> Conn {
        self.passwords = passwords;
        self
    }

    /// The server's table of backend keys (cancel requests).
    pub(crate) fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// Runs `f` on the session on the blocking pool.
    pub(crate) async fn with_session<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> PgWireResult<T> {
        with_session(&self.session, f).await
    }
}

pub(crate) async fn with_session<T: Send + 'static>(
    session: &Arc<Mutex<Session>>,
    f: impl FnOnce(&mut Session) -> T + Send + 'static,
) -> PgWireResult<T> {
    let s = session.clone();
    tokio::task::spawn_blocking(move || f(&mut s.lock()))
        .await
        .map_err(|e| PgWireError::ApiError(format!("the session's thread failed: {e}").into()))
}

/// The handlers pgwire takes for one connection.
pub struct Handlers(pub Arc<Conn>);

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.0.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.0.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.0.clone()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.0.registry.clone()
    }

    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        self.0.clone()
    }
}

#[async_trait]
impl StartupHandler for Conn {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(startup) => {
                protocol_negotiation(client, &startup).await?;
                save_startup_parameters_to_metadata(client, &startup);
                match &self.passwords {
                    None => self.finish_startup(client).await,
                    Some(_) => crate::startup::ask_for_scram(self, client).await,
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(m) => {
                crate::startup::scram_message(self, client, m).await?;
                if matches!(client.state(), pgwire::api::PgWireConnectionState::AuthenticationInProgress) {
                    return Ok(());
                }
                self.finish_startup(client).await
            }
            _ if self.passwords.is_some() => Err(crate::errors::fatal(
                "08P01",
                "expected a SASL response during authentication, got another message",
            )),
            _ => Ok(()),
        }
    }
}

impl Conn {
    /// Authenticated (or trusted): the backend key, ParameterStatus and
    /// ReadyForQuery.
    async fn finish_startup<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let secret = self.registry.secret_for(self.id);
        client.set_pid_and_secret_key(self.id, SecretKey::I32(secret));
        let flag = self.session.lock().cancel_flag();
        self.registry.register(self.id, secret, flag);
        self.note_client(client);
        finish_authentication(client, &ServerParams).await
    }

    /// The connection's row of `pg_stat_activity`: pid (backend key),
    /// the startup packet's user, database and application name, the
    /// client's address; listed once the startup is done.
    fn note_client<C: ClientInfo>(&self, client: &C) {
        let cell = self.session.lock().activity();
        {
            let meta = client.metadata();
            let get = |k: &str| meta.get(k).cloned().unwrap_or_default();
            let mut a = cell.lock();
            a.pid = self.id;
            a.usename = get("user");
            a.datname = meta.get("database").cloned().unwrap_or_else(|| get("user"));
            a.application_name = get("application_name");
            a.client_addr = Some(client.socket_addr().ip().to_string());
            a.client_port = Some(i32::from(client.socket_addr().port()));
        }
        self.registry.track(self.id, cell);
    }
}

/// The ParameterStatus messages sent at startup (what libpq and drivers read).
struct ServerParams;

impl ServerParameterProvider for ServerParams {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<std::collections::HashMap<String, String>> {
        let user = client.metadata().get("user").cloned().unwrap_or_else(|| "ndpdb".into());
        let app = client.metadata().get("application_name").cloned().unwrap_or_default();
        let pairs = [
            ("server_version", crate::SERVER_VERSION.to_string()),
            ("server_encoding", "UTF8".into()),
            ("client_encoding", "UTF8".into()),
            ("DateStyle", "ISO, MDY".into()),
            ("IntervalStyle", "postgres".into()),
            ("TimeZone", "UTC".into()),
            ("integer_datetimes", "on".into()),
            ("standard_conforming_strings", "on".into()),
            ("is_superuser", "on".into()),
            ("session_authorization", user),
            ("application_name", app),
            ("default_transaction_read_only", "off".into()),
            ("in_hot_standby", "off".into()),
        ];
        Some(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

/// The response for one statement's outcome, from the session's status
/// before and after it (see the module essay).
pub(crate) fn classify(
    r: Result<StatementResult, SqlError>,
    before: TxnStatus,
    after: TxnStatus,
    binary: &Format,
) -> Response {
    let result = match r {
        Ok(r) => r,
        Err(e) => return Response::Error(Box::new(to_error_info(&e))),
    };
    if !result.columns.is_empty() || result.tag.starts_with("SELECT") {
        return Response::Query(query_response(result, binary));
    }
    let tag = Tag::new(&result.tag);
    match (before, after) {
        (TxnStatus::Idle, TxnStatus::InBlock) => Response::TransactionStart(tag),
        (TxnStatus::InBlock | TxnStatus::Failed, TxnStatus::Idle) => Response::TransactionEnd(tag),
        _ => Response::Execution(tag),
    }
}

/// The row description of `columns` in the formats `format` asks for.
pub fn fields(columns: &[Field], format: &Format) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| FieldInfo::new(c.name.clone(), None, None, wire::pg_type(&c.ty), format.format_for(i)))
        .collect()
}

fn query_response(r: StatementResult, format: &Format) -> QueryResponse {
    let schema = Arc::new(fields(&r.columns, format));
    let rows: Vec<PgWireResult<DataRow>> = r.rows.iter().map(|row| Ok(data_row(row, &schema))).collect();
    let mut q = QueryResponse::new(schema, stream::iter(rows));
    // pgwire appends the row count it sent ("SELECT 3", "FETCH 2").
    q.set_command_tag(r.tag.split(' ').next().unwrap_or("SELECT"));
    q
}

fn data_row(row: &[Value], schema: &[FieldInfo]) -> DataRow {
    let mut buf = bytes::BytesMut::with_capacity(16 * row.len());
    for (i, v) in row.iter().enumerate() {
        let binary = schema.get(i).is_some_and(|f| f.format() == FieldFormat::Binary);
        let bytes = if binary { wire::binary(v) } else { wire::text(v) };
        match bytes {
            None => buf.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                buf.extend_from_slice(&(b.len() as i32).to_be_bytes());
                buf.extend_from_slice(&b);
            }
        }
    }
    DataRow::new(buf, row.len() as i16)
}

#[async_trait]
impl SimpleQueryHandler for Conn {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(target) = crate::utility::deallocate(query) {
            return Ok(vec![self.deallocate(client.portal_store(), target)]);
        }
        let sql = query.to_string();
        let (id, cursors) = (self.id, self.cursors.clone());
        let (mut out, copy) =
            self.with_session(move |s| run_simple(s, &cursors, &sql, id, &Format::UnifiedText)).await?;
        if let Some(spec) = copy {
            out.push(self.start_copy(spec));
        }
        Ok(out)
    }
}

impl Conn {
    /// `DEALLOCATE name | ALL` (psycopg sends it to drop statements it
    /// prepared): the statements leave pgwire's store.
    fn deallocate(&self, store: &impl PortalStore, target: Option<String>) -> Response {
        let mut names = self.statement_names.lock();
        match target {
            None => {
                for n in std::mem::take(&mut *names) {
                    store.rm_statement(&n);
                }
                Response::Execution(Tag::new("DEALLOCATE ALL"))
            }
            Some(n) if names.remove(&n) => {
                store.rm_statement(&n);
                Response::Execution(Tag::new("DEALLOCATE"))
            }
            Some(n) => Response::Error(Box::new(to_error_info(&SqlError::new(
                ndpdb_sql::error::SqlState("26000"),
                format!("prepared statement \"{n}\" does not exist"),
            )))),
        }
    }

    /// Starts a `COPY .. FROM STDIN`: its CopyInResponse.
    pub(crate) fn start_copy(&self, spec: CopyIn) -> Response {
        let columns = spec.column_count();
        *self.copy.lock() = Some(crate::copy::start(self.session.clone(), spec));
        Response::CopyIn(CopyResponse::new(0, columns, stream::empty()))
    }
}

/// Runs the statements of one Query message up to the first error (rows
/// in `format`); a `COPY .. FROM STDIN` (last) is returned to start.
pub(crate) fn run_simple(
    s: &mut Session,
    cursors: &Mutex<Cursors>,
    sql: &str,
    id: i32,
    format: &Format,
) -> (Vec<Response>, Option<CopyIn>) {
    crate::log::statement(id, sql);
    s.statement_started(sql);
    let (out, copy) = run_statements(s, cursors, sql, id, format);
    if copy.is_none() {
        s.statement_finished();
    }
    (out, copy)
}

/// [`run_simple`]'s statements; a COPY FROM STDIN ends the statement when its load does.
fn run_statements(
    s: &mut Session,
    cursors: &Mutex<Cursors>,
    sql: &str,
    id: i32,
    format: &Format,
) -> (Vec<Response>, Option<CopyIn>) {
    let stmts = match crate::utility::parse(sql) {
        Ok(stmts) => stmts,
        Err(e) => {
            s.statement_failed();
            return (vec![Response::Error(Box::new(to_error_info(&e)))], None);
        }
    };
    let mut out = Vec::with_capacity(stmts.len());
    for (i, stmt) in stmts.iter().enumerate() {
        let before = s.txn_status();
        let r = match crate::utility::copy_in(s, stmt) {
            Ok(Some(spec)) if i + 1 == stmts.len() => return (out, Some(spec)),
            Ok(Some(_)) => Err(SqlError::new(
                ndpdb_sql::error::SqlState::FEATURE_NOT_SUPPORTED,
                "COPY FROM STDIN must be the last statement of a query string",
            )
            .with_hint("Send the statements after it in a query of their own.")),
            Ok(None) => crate::utility::run_one(s, cursors, stmt),
            Err(e) => Err(e),
        };
        cursors.lock().after_statement(s.txn_status());
        let failed = r.is_err();
        if let Err(e) = &r {
            crate::log::error(id, e);
        }
        out.push(classify(r, before, s.txn_status(), format));
        if failed {
            break;
        }
    }
    (out, None)
}

impl Conn {
    /// The session's transaction status as the ReadyForQuery byte.
    pub(crate) fn wire_status(&self) -> TransactionStatus {
        match self.session.lock().txn_status() {
            TxnStatus::Idle => TransactionStatus::Idle,
            TxnStatus::InBlock => TransactionStatus::Transaction,
            TxnStatus::Failed => TransactionStatus::Error,
        }
    }
}
