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
use ndpdb_sql::session::{Prepared, Session, StatementResult, TxnStatus};
use ndpdb_sql::types::{DataType, Value};
use parking_lot::Mutex;
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    DescribePortalResponse, DescribeStatementResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::errors::{to_error_info, to_pgwire};
use crate::registry::Registry;
use crate::wire;

/// A connection's handlers (pgwire asks the factory for each).
pub struct Conn {
    session: Arc<Mutex<Session>>,
    registry: Arc<Registry>,
    /// The connection's number (its backend pid for cancel requests).
    pub id: i32,
    parser: Arc<Parser>,
}

impl Conn {
    pub fn new(session: Session, registry: Arc<Registry>, id: i32) -> Conn {
        let session = Arc::new(Mutex::new(session));
        Conn { parser: Arc::new(Parser { session: session.clone() }), session, registry, id }
    }

    /// Runs `f` on the session on the blocking pool.
    async fn with_session<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> PgWireResult<T> {
        with_session(&self.session, f).await
    }
}

async fn with_session<T: Send + 'static>(
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
}

#[async_trait]
impl StartupHandler for Conn {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let PgWireFrontendMessage::Startup(startup) = message else { return Ok(()) };
        protocol_negotiation(client, &startup).await?;
        save_startup_parameters_to_metadata(client, &startup);
        let secret = self.registry.secret_for(self.id);
        client.set_pid_and_secret_key(self.id, SecretKey::I32(secret));
        let flag = self.session.lock().cancel_flag();
        self.registry.register(self.id, secret, flag);
        let params = ServerParams;
        finish_authentication(client, &params).await
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
fn classify(r: Result<StatementResult, SqlError>, before: TxnStatus, after: TxnStatus, binary: &Format) -> Response {
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
    q.set_command_tag(&r.tag);
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
    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let sql = query.to_string();
        let id = self.id;
        self.with_session(move |s| run_simple(s, &sql, id)).await
    }
}

/// Runs the statements of one Query message up to the first error.
fn run_simple(s: &mut Session, sql: &str, id: i32) -> Vec<Response> {
    crate::log::statement(id, sql);
    let stmts = match crate::utility::parse(sql) {
        Ok(stmts) => stmts,
        Err(e) => return vec![Response::Error(Box::new(to_error_info(&e)))],
    };
    let mut out = Vec::with_capacity(stmts.len());
    for stmt in &stmts {
        let before = s.txn_status();
        let r = crate::utility::run_one(s, stmt);
        let failed = r.is_err();
        if let Err(e) = &r {
            crate::log::error(id, e);
        }
        out.push(classify(r, before, s.txn_status(), &Format::UnifiedText));
        if failed {
            break;
        }
    }
    out
}

/// A statement of the extended protocol: its text and, once prepared,
/// the session's plan-caching [`Prepared`].
#[derive(Clone)]
pub struct Stmt {
    pub sql: String,
    prepared: Option<Arc<Mutex<Prepared>>>,
    param_types: Vec<DataType>,
    columns: Vec<Field>,
}

/// Parses and binds a Parse message's statement on the session.
pub struct Parser {
    session: Arc<Mutex<Session>>,
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Stmt;

    async fn parse_sql<C>(&self, _client: &C, sql: &str, _types: &[Option<Type>]) -> PgWireResult<Option<Stmt>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let text = sql.to_string();
        let r = with_session(&self.session, move |s| prepare(s, text)).await?;
        r.map(Some).map_err(|e| to_pgwire(&e))
    }

    fn get_parameter_types(&self, stmt: &Stmt) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types.iter().map(wire::pg_type).collect())
    }

    fn get_result_schema(&self, stmt: &Stmt, format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        Ok(fields(&stmt.columns, format.unwrap_or(&Format::UnifiedText)))
    }
}

/// Prepares `sql`; a utility statement the binder does not take (pgbench's
/// VACUUM) is kept as text and runs through the simple path at Execute.
fn prepare(s: &mut Session, sql: String) -> Result<Stmt, SqlError> {
    if crate::utility::is_utility(&sql) {
        return Ok(Stmt { sql, prepared: None, param_types: vec![], columns: vec![] });
    }
    let p = s.prepare(&sql)?;
    let (param_types, columns) = (p.param_types.clone(), p.columns.clone());
    Ok(Stmt { sql, prepared: Some(Arc::new(Mutex::new(p))), param_types, columns })
}

#[async_trait]
impl ExtendedQueryHandler for Conn {
    type Statement = Stmt;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    async fn do_query<C>(&self, _client: &mut C, portal: &Portal<Stmt>, _max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let stmt = portal.statement.statement.clone();
        let declared = portal.statement.parameter_types.clone();
        let params = decode_params(portal, &stmt, &declared).map_err(|e| to_pgwire(&e))?;
        let format = portal.result_column_format.clone();
        let id = self.id;
        self.with_session(move |s| {
            crate::log::statement(id, &stmt.sql);
            let before = s.txn_status();
            let r = match &stmt.prepared {
                Some(p) => s.execute_prepared(&mut p.lock(), &params),
                None => crate::utility::run_text(s, &stmt.sql),
            };
            if let Err(e) = &r {
                crate::log::error(id, e);
                return Err(to_pgwire(e));
            }
            Ok(classify(r, before, s.txn_status(), &format))
        })
        .await?
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        stmt: &StoredStatement<Stmt>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let s = &stmt.statement;
        let types = s.param_types.iter().map(wire::pg_type).collect();
        Ok(DescribeStatementResponse::new(types, fields(&s.columns, &Format::UnifiedText)))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Stmt>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let columns = &portal.statement.statement.columns;
        Ok(DescribePortalResponse::new(fields(columns, &portal.result_column_format)))
    }
}

/// The Bind message's parameters as values of the statement's types.
fn decode_params(portal: &Portal<Stmt>, stmt: &Stmt, declared: &[Option<Type>]) -> Result<Vec<Value>, SqlError> {
    if portal.parameters.len() != stmt.param_types.len() {
        return Err(SqlError::new(
            ndpdb_sql::error::SqlState("08P01"),
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                portal.parameters.len(),
                stmt.param_types.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(stmt.param_types.len());
    for (i, ty) in stmt.param_types.iter().enumerate() {
        let v = match &portal.parameters[i] {
            None => Value::Null,
            Some(bytes) if portal.parameter_format.is_binary(i) => {
                let sent = declared.get(i).cloned().flatten().unwrap_or_else(|| wire::pg_type(ty));
                wire::param_from_binary(bytes, &sent, ty)?
            }
            Some(bytes) => wire::param_from_text(bytes, ty)?,
        };
        out.push(v);
    }
    Ok(out)
}
