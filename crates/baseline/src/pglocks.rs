//! PostgreSQL's own lock manager, timed inside a private server: the
//! baseline the ccSLT paper measured in its Experiment 3 (Fig. 6), beside
//! the PostgreSQL-style lock manager that ndpdb builds itself
//! (`ndpdb_locktable::ConventionalLockTable`).
//!
//! A lock+unlock pair cannot be timed through SQL: parsing, planning and the
//! client round trip cost a thousand times more than the lock. So ndpdb
//! compiles a small C function (`crates/baseline/c/ndpdb_pglocks.c`) against
//! the server headers of the PostgreSQL it started, loads it into that
//! server by absolute path (`CREATE FUNCTION … LANGUAGE C`; nothing is
//! installed into PostgreSQL's directories), and lets the function time
//! `LockAcquire` + `LockRelease` of a tuple lock in the backend itself,
//! returning one latency per pair.
//!
//! What this needs beyond the server: its headers (Debian:
//! `postgresql-server-dev-<major>`) and a C compiler. Without them,
//! [`PgLockTimer::load`] says which package to install
//! ([`PgError::NoServerHeaders`], [`PgError::NoCompiler`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::postgres::{PgError, PgServer, Session};

/// The C source, compiled at run time against the server's headers.
const SOURCE: &str = include_str!("../c/ndpdb_pglocks.c");

/// The relation OID in the lock tags: no relation needs to exist for a
/// tuple lock tag, and this one is above PostgreSQL's reserved OIDs.
const REL_OID: u32 = 70_000;

/// The pair-timing function, loaded into one server.
pub struct PgLockTimer {
    /// What the backend was built as, e.g. `PostgreSQL 15.20`.
    pub server_version: String,
}

/// One thread's requests: the same parameters as ndpdb's `bench_host`.
#[derive(Debug, Clone, Copy)]
pub struct PgLockRun {
    pub requests: usize,
    pub random: bool,
    /// The key generator's state before the first request.
    pub rng: u64,
    /// The thread's first key.
    pub base: u64,
    pub keys: u64,
}

impl PgLockTimer {
    /// Compiles the timing function for `server` and creates it in the
    /// `postgres` database.
    pub fn load(server: &PgServer) -> Result<PgLockTimer, PgError> {
        let pg_config = server.bin_dir().join("pg_config");
        let config = |arg: &str| -> Result<String, PgError> {
            let out = Command::new(&pg_config)
                .arg(arg)
                .output()
                .map_err(|e| PgError::Setup { step: "pg_config", detail: format!("{}: {e}", pg_config.display()) })?;
            if !out.status.success() {
                return Err(PgError::Setup {
                    step: "pg_config",
                    detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let version = config("--version")?;
        let include = PathBuf::from(config("--includedir-server")?);
        if !include.join("storage").join("lock.h").exists() {
            let major = version.split_whitespace().nth(1).and_then(|v| v.split('.').next()).unwrap_or("<major>");
            return Err(PgError::NoServerHeaders { include, package: format!("postgresql-server-dev-{major}") });
        }
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let dir = server.socket_dir();
        let (src, lib) = (dir.join("ndpdb_pglocks.c"), dir.join("ndpdb_pglocks.so"));
        std::fs::write(&src, SOURCE)
            .map_err(|e| PgError::Setup { step: "writing ndpdb_pglocks.c", detail: e.to_string() })?;
        let out = Command::new(&cc)
            .args(["-O2", "-fPIC", "-shared", "-Wall", "-I"])
            .arg(&include)
            .arg("-o")
            .arg(&lib)
            .arg(&src)
            .output()
            .map_err(|e| PgError::NoCompiler { cc: cc.clone(), detail: e.to_string() })?;
        if !out.status.success() {
            return Err(PgError::Setup {
                step: "compiling ndpdb_pglocks.c",
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        let mut s = server.session()?;
        s.exec(&format!(
            "CREATE OR REPLACE FUNCTION ndpdb_tuple_lock_latencies(int4, bool, int8, int8, int8, oid) RETURNS bytea \
             AS '{}', 'ndpdb_tuple_lock_latencies' LANGUAGE C STRICT",
            sql_literal(&lib)
        ))?;
        Ok(PgLockTimer { server_version: version })
    }

    /// Times `run.requests` lock+unlock pairs in `session`'s backend; one
    /// latency (ns) per pair, in request order. Fails if a tuple lock is
    /// still held afterwards.
    pub fn time(&self, session: &mut Session, run: PgLockRun) -> Result<Vec<u64>, PgError> {
        let hex = session.query(&format!(
            "SELECT ndpdb_tuple_lock_latencies({}, {}, {}, {}, {}, {REL_OID})",
            run.requests, run.random, run.rng as i64, run.base as i64, run.keys as i64
        ))?;
        let samples = decode_latencies(&hex)?;
        if samples.len() != run.requests {
            return Err(PgError::Sql(format!(
                "ndpdb_tuple_lock_latencies returned {} latencies for {} requests",
                samples.len(),
                run.requests
            )));
        }
        Ok(samples)
    }

    /// Tuple locks held in the whole server (`pg_locks`): 0 after every run.
    pub fn tuple_locks_held(session: &mut Session) -> Result<u64, PgError> {
        let n = session.query("SELECT count(*) FROM pg_locks WHERE locktype = 'tuple'")?;
        n.trim().parse().map_err(|_| PgError::Sql(format!("pg_locks count {n:?} is not a number")))
    }
}

/// A path as the body of an SQL string literal.
fn sql_literal(p: &Path) -> String {
    p.display().to_string().replace('\'', "''")
}

/// psql's hex form of the bytea (`\x` then two digits per byte) as
/// little-endian 8-byte latencies.
fn decode_latencies(hex: &str) -> Result<Vec<u64>, PgError> {
    let bad = |why: &str| PgError::Sql(format!("ndpdb_tuple_lock_latencies returned {why}"));
    let digits = hex.trim().strip_prefix("\\x").ok_or_else(|| bad("no hex bytea (is bytea_output 'hex'?)"))?;
    if digits.len() % 16 != 0 {
        return Err(bad(&format!("{} hex digits, not a multiple of 16", digits.len())));
    }
    let nibble = |c: u8| -> Result<u64, PgError> {
        match c {
            b'0'..=b'9' => Ok(u64::from(c - b'0')),
            b'a'..=b'f' => Ok(u64::from(c - b'a' + 10)),
            _ => Err(bad(&format!("the character {:?} in its hex output", c as char))),
        }
    };
    digits
        .as_bytes()
        .chunks_exact(16)
        .map(|word| {
            let mut ns = 0u64;
            for (i, pair) in word.chunks_exact(2).enumerate() {
                ns |= (nibble(pair[0])? << 4 | nibble(pair[1])?) << (8 * i);
            }
            Ok(ns)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_decode_little_endian_words() {
        assert_eq!(decode_latencies("\\x0100000000000000ff01000000000000").unwrap(), vec![1, 511]);
        assert_eq!(decode_latencies("\\x").unwrap(), Vec::<u64>::new());
        assert!(decode_latencies("0100000000000000").is_err());
        assert!(decode_latencies("\\x01000000").is_err());
        assert!(decode_latencies("\\x010000000000000g").is_err());
    }
}
