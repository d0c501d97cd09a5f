//! The extended query protocol: Parse prepares on the session, Bind
//! decodes parameters, Describe reports types and columns, Execute runs.
//!
//! ```text
//!  Parse ─► Stmt ─┬─ Query:   Session::prepare (plan cached between runs)
//!                 ├─ Declare: DECLARE c CURSOR FOR q, q prepared ($n too)
//!                 └─ Text:    VACUUM, COPY, FETCH, CLOSE: run as a Query
//!  Execute(max_rows) ─► rows ─► pgwire's portal: max_rows at a time,
//!                               PortalSuspended between, as PostgreSQL
//! ```
//!
//! A portal's rows are computed at its first Execute; later Executes of a
//! suspended portal take the next `max_rows` of them. A SQL cursor is a
//! portal too for Describe (psycopg describes its server-side cursor by
//! name after DECLARE), answered from the connection's cursors.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use ndpdb_sql::SqlError;
use ndpdb_sql::plan::Field;
use ndpdb_sql::session::{Prepared, Session};
use ndpdb_sql::types::{DataType, Value};
use parking_lot::Mutex;
use pgwire::api::DEFAULT_NAME;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, send_describe_response};
use pgwire::api::results::{DescribePortalResponse, DescribeStatementResponse, FieldInfo, Response};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::extendedquery::{Describe, Parse, ParseComplete, TARGET_TYPE_BYTE_PORTAL};

use crate::conn::{Conn, classify, fields, with_session};
use crate::cursor::{CursorCmd, Cursors};
use crate::errors::to_pgwire;
use crate::wire;

/// A statement of the extended protocol: its text and how it runs.
#[derive(Clone)]
pub struct Stmt {
    pub sql: String,
    kind: Kind,
    param_types: Vec<DataType>,
    columns: Vec<Field>,
}

#[derive(Clone)]
enum Kind {
    /// Prepared on the session (its plan cached).
    Query(Arc<Mutex<Prepared>>),
    /// `DECLARE name CURSOR FOR q`, q prepared.
    Declare { name: String, hold: bool, query: Arc<Mutex<Prepared>> },
    /// Run as a simple Query at Execute (no parameters).
    Text,
}

/// Parses and binds a Parse message's statement on the session.
pub struct Parser {
    pub(crate) session: Arc<Mutex<Session>>,
    pub(crate) cursors: Arc<Mutex<Cursors>>,
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Stmt;

    async fn parse_sql<C>(&self, _client: &C, sql: &str, _types: &[Option<Type>]) -> PgWireResult<Option<Stmt>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let text = sql.to_string();
        let cursors = self.cursors.clone();
        let r = with_session(&self.session, move |s| prepare(s, &cursors, text)).await?;
        r.map(Some).map_err(|e| to_pgwire(&e))
    }

    fn get_parameter_types(&self, stmt: &Stmt) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types.iter().map(wire::pg_type).collect())
    }

    fn get_result_schema(&self, stmt: &Stmt, format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        Ok(fields(&stmt.columns, format.unwrap_or(&Format::UnifiedText)))
    }
}

/// Prepares `sql`. Statements the binder does not take (VACUUM, COPY,
/// cursors) are kept as text and run through the simple path at Execute;
/// DECLARE prepares its query, which may have parameters.
fn prepare(s: &mut Session, cursors: &Mutex<Cursors>, sql: String) -> Result<Stmt, SqlError> {
    let text = |sql, columns| Stmt { sql, kind: Kind::Text, param_types: vec![], columns };
    if crate::utility::is_utility(&sql) {
        return Ok(text(sql, vec![]));
    }
    if crate::utility::is_cursor(&sql) {
        let items = crate::utility::parse(&sql)?;
        return match items.as_slice() {
            [crate::utility::Item::Cursor(CursorCmd::Declare { name, hold, query })] => {
                let p = s.prepare(query)?;
                let param_types = p.param_types.clone();
                let (name, hold, query) = (name.clone(), *hold, Arc::new(Mutex::new(p)));
                Ok(Stmt { sql, kind: Kind::Declare { name, hold, query }, param_types, columns: vec![] })
            }
            [crate::utility::Item::Cursor(CursorCmd::Fetch { name, .. })] => {
                let columns = cursors.lock().columns(name).unwrap_or_default();
                Ok(text(sql, columns))
            }
            _ => Ok(text(sql, vec![])),
        };
    }
    let p = s.prepare(&sql)?;
    let (param_types, columns) = (p.param_types.clone(), p.columns.clone());
    Ok(Stmt { sql, kind: Kind::Query(Arc::new(Mutex::new(p))), param_types, columns })
}

#[async_trait]
impl ExtendedQueryHandler for Conn {
    type Statement = Stmt;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    /// pgwire's Parse, which also notes the statement's name for
    /// `DEALLOCATE ALL` (pgwire's store cannot list its statements).
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.clone().unwrap_or_else(|| DEFAULT_NAME.to_owned());
        match StoredStatement::parse(client, &message, self.parser.clone()).await? {
            Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
            None => client.portal_store().put_empty_statement(&name),
        }
        if name != DEFAULT_NAME {
            self.statement_names.lock().insert(name);
        }
        client.send(PgWireBackendMessage::ParseComplete(ParseComplete::new())).await?;
        Ok(())
    }

    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let cursor = match message.name.as_deref() {
            Some(name) if message.target_type == TARGET_TYPE_BYTE_PORTAL => {
                let is_portal = client.portal_store().get_portal(name).is_some();
                if is_portal { None } else { self.cursors.lock().columns(name) }
            }
            _ => None,
        };
        if let Some(columns) = cursor {
            let response = DescribePortalResponse::new(fields(&columns, &Format::UnifiedText));
            return send_describe_response(client, &response).await;
        }
        self._on_describe(client, message).await
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
        let (id, cursors) = (self.id, self.cursors.clone());
        if matches!(stmt.kind, Kind::Text) {
            return self.execute_text(stmt.sql.clone(), format).await;
        }
        self.with_session(move |s| {
            crate::log::statement(id, &stmt.sql);
            s.statement_started(&stmt.sql);
            let before = s.txn_status();
            let r = match &stmt.kind {
                Kind::Query(p) => s.execute_prepared(&mut p.lock(), &params),
                Kind::Declare { name, hold, query } => crate::utility::declare(s, &cursors, name, *hold, |s| {
                    s.execute_prepared(&mut query.lock(), &params)
                }),
                Kind::Text => Err(SqlError::internal("a text statement reached the prepared path")),
            };
            cursors.lock().after_statement(s.txn_status());
            s.statement_finished();
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

impl Conn {
    /// Executes a statement kept as text (VACUUM, COPY, FETCH, CLOSE): its
    /// last statement's response, or the first error.
    async fn execute_text(&self, sql: String, format: Format) -> PgWireResult<Response> {
        let (id, cursors) = (self.id, self.cursors.clone());
        let (mut out, copy) =
            self.with_session(move |s| crate::conn::run_simple(s, &cursors, &sql, id, &format)).await?;
        if let Some(spec) = copy {
            return Ok(self.start_copy(spec));
        }
        match out.pop() {
            Some(Response::Error(e)) => Err(PgWireError::UserError(e)),
            Some(r) => Ok(r),
            None => Ok(Response::EmptyQuery),
        }
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
