//! The server's log on stderr: connections at `info`, every statement at
//! `statement`, errors always (`--log-level`).

use std::sync::atomic::{AtomicU8, Ordering};

use ndpdb_sql::SqlError;

/// How much the server logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Errors only.
    Error = 0,
    /// And connections, disconnections, startup and shutdown.
    Info = 1,
    /// And every statement.
    Statement = 2,
}

static LEVEL: AtomicU8 = AtomicU8::new(LogLevel::Info as u8);

pub fn set_level(level: LogLevel) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

fn enabled(level: LogLevel) -> bool {
    LEVEL.load(Ordering::Relaxed) >= level as u8
}

pub fn info(args: std::fmt::Arguments<'_>) {
    if enabled(LogLevel::Info) {
        eprintln!("ndpdb serve: {args}");
    }
}

pub fn statement(conn: i32, sql: &str) {
    if enabled(LogLevel::Statement) {
        eprintln!("ndpdb serve: [{conn}] statement: {}", sql.trim());
    }
}

pub fn error(conn: i32, e: &SqlError) {
    eprintln!("ndpdb serve: [{conn}] ERROR {}: {}", e.code.0, e.message);
}
