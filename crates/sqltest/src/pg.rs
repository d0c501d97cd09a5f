//! The PostgreSQL side: a minimal client of PostgreSQL's frontend/backend
//! protocol (version 3, simple query flow) over the private server's Unix
//! socket, and one database per `.slt` file.
//!
//! psql (what [`ndpdb_baseline::postgres::Session`] drives) prints NULL and
//! the empty string alike, has no way to say which statement returned rows
//! and which only a command tag, and does not give the SQLSTATE without
//! parsing its verbose output. The protocol gives all three directly, in
//! about two hundred lines and with no dependency:
//!
//! ```text
//!  client                          server
//!  StartupMessage(user, database) ─►
//!                                 ◄─ AuthenticationOk, ParameterStatus*, BackendKeyData
//!                                 ◄─ ReadyForQuery
//!  Query("sql") ──────────────────►
//!                                 ◄─ RowDescription   (statements that return rows)
//!                                 ◄─ DataRow*         (text format; length -1 = NULL)
//!                                 ◄─ CommandComplete("INSERT 0 3")   or ErrorResponse(C, M, ...)
//!                                 ◄─ ReadyForQuery
//! ```
//!
//! The server trusts local connections (`PgServer` initialises it with
//! `-A trust`), so no authentication exchange beyond AuthenticationOk is
//! needed; any other request is an error that says so.

use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use ndpdb_baseline::postgres::PgServer;

use crate::{Column, EngineError, QueryOutput, SqlEngine, TestDatabase};

/// Largest backend message accepted (a guard against a garbled stream).
const MESSAGE_BYTES_MAX: usize = 1 << 30;

/// Where and as whom to connect.
#[derive(Debug, Clone)]
pub struct PgAddress {
    /// The socket file: `<socket dir>/.s.PGSQL.<port>`.
    pub socket: PathBuf,
    pub user: String,
    pub database: String,
}

impl PgAddress {
    /// The `postgres` database of a private server.
    pub fn of(server: &PgServer, database: &str) -> PgAddress {
        PgAddress {
            socket: server.socket_dir().join(format!(".s.PGSQL.{}", server.port())),
            user: "postgres".into(),
            database: database.into(),
        }
    }
}

/// One connection (one backend, one session).
pub struct PgConnection {
    reader: BufReader<UnixStream>,
    writer: BufWriter<UnixStream>,
}

fn client_error(message: impl Into<String>) -> EngineError {
    EngineError { sqlstate: "08006".into(), message: message.into() }
}

fn io_error(e: std::io::Error) -> EngineError {
    client_error(format!("connection to PostgreSQL lost: {e}"))
}

impl PgConnection {
    pub fn connect(address: &PgAddress) -> Result<PgConnection, EngineError> {
        let stream = UnixStream::connect(&address.socket).map_err(|e| {
            client_error(format!(
                "cannot connect to PostgreSQL at {}: {e}; is the server running?",
                address.socket.display()
            ))
        })?;
        let reader = BufReader::new(stream.try_clone().map_err(io_error)?);
        let mut conn = PgConnection { reader, writer: BufWriter::new(stream) };
        let mut body = Vec::new();
        body.extend_from_slice(&196_608u32.to_be_bytes()); // protocol 3.0
        for (k, v) in [("user", address.user.as_str()), ("database", address.database.as_str())] {
            put_cstr(&mut body, k);
            put_cstr(&mut body, v);
        }
        body.push(0);
        conn.send(None, &body)?;
        loop {
            let (tag, msg) = conn.receive()?;
            match tag {
                b'R' if read_i32(&msg, 0)? == 0 => {}
                b'R' => {
                    return Err(client_error("PostgreSQL asks for a password; the harness needs trust authentication"));
                }
                b'E' => return Err(parse_error(&msg)),
                b'Z' => return Ok(conn),
                _ => {} // ParameterStatus, BackendKeyData, NoticeResponse
            }
        }
    }

    fn send(&mut self, tag: Option<u8>, body: &[u8]) -> Result<(), EngineError> {
        if let Some(t) = tag {
            self.writer.write_all(&[t]).map_err(io_error)?;
        }
        let len = u32::try_from(body.len() + 4).map_err(|_| client_error("statement too long"))?;
        self.writer.write_all(&len.to_be_bytes()).map_err(io_error)?;
        self.writer.write_all(body).map_err(io_error)?;
        self.writer.flush().map_err(io_error)
    }

    fn receive(&mut self) -> Result<(u8, Vec<u8>), EngineError> {
        let mut head = [0u8; 5];
        self.reader.read_exact(&mut head).map_err(io_error)?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if !(4..=MESSAGE_BYTES_MAX).contains(&len) {
            return Err(client_error(format!("garbled message from PostgreSQL (length {len})")));
        }
        let mut body = vec![0u8; len - 4];
        self.reader.read_exact(&mut body).map_err(io_error)?;
        Ok((head[0], body))
    }

    /// Reads messages up to ReadyForQuery; the result of the last statement
    /// of `sql` (or its first error) is returned.
    fn collect(&mut self) -> Result<Result<QueryOutput, EngineError>, EngineError> {
        let mut out = QueryOutput::default();
        let mut error = None;
        loop {
            let (tag, msg) = self.receive()?;
            match tag {
                b'T' => out = QueryOutput { columns: parse_row_description(&msg)?, ..QueryOutput::default() },
                b'D' => out.rows.push(parse_data_row(&msg)?),
                b'C' => out.tag = read_cstr(&msg, 0)?.0,
                b'I' => out = QueryOutput::default(),
                b'E' => error = Some(parse_error(&msg)),
                b'G' => self.send(Some(b'f'), b"COPY FROM STDIN is not supported by the harness\0")?,
                b'Z' => return Ok(error.map_or(Ok(out), Err)),
                _ => {} // NoticeResponse, ParameterStatus, CopyOut data
            }
        }
    }
}

impl SqlEngine for PgConnection {
    fn run(&mut self, sql: &str) -> Result<QueryOutput, EngineError> {
        if sql.contains('\0') {
            return Err(client_error("statement contains a NUL byte"));
        }
        let mut body = Vec::with_capacity(sql.len() + 1);
        put_cstr(&mut body, sql);
        self.send(Some(b'Q'), &body)?;
        self.collect()?
    }
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        let _ = self.send(Some(b'X'), &[]);
    }
}

fn put_cstr(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(s.as_bytes());
    buf.push(0);
}

fn garbled(what: &str) -> EngineError {
    client_error(format!("garbled {what} message from PostgreSQL"))
}

fn read_i16(msg: &[u8], at: usize) -> Result<i16, EngineError> {
    let b = msg.get(at..at + 2).ok_or_else(|| garbled("short"))?;
    Ok(i16::from_be_bytes([b[0], b[1]]))
}

fn read_i32(msg: &[u8], at: usize) -> Result<i32, EngineError> {
    let b = msg.get(at..at + 4).ok_or_else(|| garbled("short"))?;
    Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// A NUL-terminated string at `at`; returns it and the offset after the NUL.
fn read_cstr(msg: &[u8], at: usize) -> Result<(String, usize), EngineError> {
    let rest = msg.get(at..).ok_or_else(|| garbled("string"))?;
    let end = rest.iter().position(|&b| b == 0).ok_or_else(|| garbled("string"))?;
    Ok((String::from_utf8_lossy(&rest[..end]).into_owned(), at + end + 1))
}

fn parse_row_description(msg: &[u8]) -> Result<Vec<Column>, EngineError> {
    let n = read_i16(msg, 0)?;
    let mut at = 2;
    let mut columns = Vec::with_capacity(n.max(0) as usize);
    for _ in 0..n {
        let (name, next) = read_cstr(msg, at)?;
        // table oid (4), attnum (2), type oid (4), typlen (2), typmod (4), format (2)
        let type_oid = read_i32(msg, next + 6)? as u32;
        at = next + 18;
        if msg.len() < at {
            return Err(garbled("RowDescription"));
        }
        columns.push(Column { name, type_oid });
    }
    Ok(columns)
}

fn parse_data_row(msg: &[u8]) -> Result<Vec<Option<String>>, EngineError> {
    let n = read_i16(msg, 0)?;
    let mut at = 2;
    let mut row = Vec::with_capacity(n.max(0) as usize);
    for _ in 0..n {
        let len = read_i32(msg, at)?;
        at += 4;
        if len < 0 {
            row.push(None);
            continue;
        }
        let bytes = msg.get(at..at + len as usize).ok_or_else(|| garbled("DataRow"))?;
        row.push(Some(String::from_utf8_lossy(bytes).into_owned()));
        at += len as usize;
    }
    Ok(row)
}

/// ErrorResponse: (field type, string) pairs up to a zero byte; `C` is the
/// SQLSTATE and `M` the primary message.
fn parse_error(msg: &[u8]) -> EngineError {
    let mut e = EngineError { sqlstate: "XX000".into(), message: String::new() };
    let mut at = 0;
    while let Some(&field) = msg.get(at) {
        if field == 0 {
            break;
        }
        let Ok((value, next)) = read_cstr(msg, at + 1) else { break };
        match field {
            b'C' => e.sqlstate = value,
            b'M' => e.message = value,
            _ => {}
        }
        at = next;
    }
    e
}

/// The private PostgreSQL as the harness's engine: one fresh database per
/// `.slt` file, so that files do not see each other's tables.
pub struct PgTestServer {
    server: PgServer,
    admin: PgConnection,
    databases: u32,
}

impl PgTestServer {
    pub fn new(server: PgServer) -> Result<PgTestServer, EngineError> {
        let admin = PgConnection::connect(&PgAddress::of(&server, "postgres"))?;
        Ok(PgTestServer { server, admin, databases: 0 })
    }

    pub fn server(&self) -> &PgServer {
        &self.server
    }

    /// A new empty database (C collation, from template0).
    pub fn database(&mut self) -> Result<PgDatabase, EngineError> {
        self.databases += 1;
        let name = format!("slt_{}", self.databases);
        self.admin.run(&format!("CREATE DATABASE {name} TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'"))?;
        Ok(PgDatabase { address: PgAddress::of(&self.server, &name) })
    }
}

/// One database of the private server.
pub struct PgDatabase {
    address: PgAddress,
}

impl PgDatabase {
    pub fn address(&self) -> &PgAddress {
        &self.address
    }
}

impl TestDatabase for PgDatabase {
    fn connect(&self) -> Result<Box<dyn SqlEngine>, EngineError> {
        Ok(Box::new(PgConnection::connect(&self.address)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row_description(columns: &[(&str, u32)]) -> Vec<u8> {
        let mut m = (columns.len() as i16).to_be_bytes().to_vec();
        for (name, oid) in columns {
            put_cstr(&mut m, name);
            m.extend_from_slice(&[0; 6]); // table oid, attnum
            m.extend_from_slice(&oid.to_be_bytes());
            m.extend_from_slice(&[0; 8]); // typlen, typmod, format
        }
        m
    }

    fn data_row(values: &[Option<&str>]) -> Vec<u8> {
        let mut m = (values.len() as i16).to_be_bytes().to_vec();
        for v in values {
            match v {
                None => m.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(s) => {
                    m.extend_from_slice(&(s.len() as i32).to_be_bytes());
                    m.extend_from_slice(s.as_bytes());
                }
            }
        }
        m
    }

    #[test]
    fn decodes_row_description_data_row_and_error() {
        let cols = parse_row_description(&row_description(&[("a", 23), ("bee", 25)])).expect("valid");
        assert_eq!(cols, vec![Column { name: "a".into(), type_oid: 23 }, Column { name: "bee".into(), type_oid: 25 }]);
        let row = parse_data_row(&data_row(&[Some("1"), None, Some("")])).expect("valid");
        assert_eq!(row, vec![Some("1".into()), None, Some(String::new())]);
        let e = parse_error(b"SERROR\0C42P01\0Mrelation \"t\" does not exist\0P15\0\0");
        assert_eq!(e, EngineError { sqlstate: "42P01".into(), message: "relation \"t\" does not exist".into() });
    }

    #[test]
    fn truncated_messages_are_errors() {
        let desc = row_description(&[("a", 23)]);
        let row = data_row(&[Some("abc")]);
        for cut in 0..desc.len() {
            assert!(parse_row_description(&desc[..cut]).is_err(), "cut at {cut}");
        }
        for cut in 0..row.len() {
            assert!(parse_data_row(&row[..cut]).is_err(), "cut at {cut}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
        /// Decoders never trust the server's bytes: garbage gives an error, never a panic.
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_row_description(&bytes);
            let _ = parse_data_row(&bytes);
            let _ = parse_error(&bytes);
            let _ = read_cstr(&bytes, bytes.len() + 3);
        }
    }
}
