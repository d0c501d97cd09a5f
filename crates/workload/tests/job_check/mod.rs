//! Loading generated JOB data into the private PostgreSQL and checking it:
//! shared by the test `job_postgres` and the example `job_postgres`.

use std::path::Path;
use std::time::{Duration, Instant};

use ndpdb_baseline::postgres::{PgServer, Session};
use ndpdb_workload::job::{FOREIGN_KEYS, JobData, TableFile};

/// One query's outcome: `Ok` when its row has every MIN(...) set.
pub struct QueryRun {
    pub name: String,
    pub time: Duration,
    pub result: Result<(), String>,
}

pub struct CheckReport {
    pub load_time: Duration,
    pub queries: Vec<QueryRun>,
    /// (`table.column -> target`, rows whose key names no row).
    pub orphans: Vec<(String, u64)>,
}

impl CheckReport {
    /// Every failure, one line each; empty when the data passed.
    pub fn failures(&self) -> Vec<String> {
        let q = self.queries.iter().filter_map(|r| r.result.as_ref().err().map(|e| format!("{}: {e}", r.name)));
        let o = self.orphans.iter().filter(|(_, n)| *n > 0).map(|(fk, n)| format!("{fk}: {n} orphan rows"));
        q.chain(o).collect()
    }
}

fn run_file(session: &mut Session, path: &Path) -> Result<(), String> {
    let sql = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        session.exec(statement).map_err(|e| format!("{}: {statement}: {e}", path.display()))?;
    }
    Ok(())
}

/// Creates the schema from `job_dir`, loads `files` with COPY, builds the
/// foreign-key indexes, then runs every query (each under `timeout`) and
/// counts the orphans of every foreign key.
pub fn load_and_check(
    server: &PgServer,
    job_dir: &Path,
    data: &JobData,
    files: &[TableFile],
    timeout: Duration,
) -> Result<CheckReport, String> {
    let started = Instant::now();
    let mut s = server.session().map_err(|e| e.to_string())?;
    run_file(&mut s, &job_dir.join("schema.sql"))?;
    for f in files {
        let text = std::fs::read_to_string(&f.path).map_err(|e| format!("{}: {e}", f.path.display()))?;
        s.copy_in(&format!("COPY {} FROM STDIN WITH (FORMAT csv)", f.table), text.lines().map(str::to_string))
            .map_err(|e| format!("COPY {}: {e}", f.table))?;
        let n = s.query(&format!("SELECT count(*) FROM {}", f.table)).map_err(|e| e.to_string())?;
        if n != f.rows.to_string() {
            return Err(format!("{}: {n} rows loaded, {} written", f.table, f.rows));
        }
    }
    run_file(&mut s, &job_dir.join("fkindexes.sql"))?;
    s.exec("ANALYZE").map_err(|e| e.to_string())?;
    s.exec(&format!("SET statement_timeout = '{}ms'", timeout.as_millis())).map_err(|e| e.to_string())?;
    let load_time = started.elapsed();
    let mut queries = Vec::new();
    for q in data.queries() {
        let body = q.sql.trim().trim_end_matches(';');
        let t = Instant::now();
        let result = match s.query(&format!("SELECT r IS NOT NULL FROM ({body}) AS r")) {
            Ok(v) if v == "t" => Ok(()),
            Ok(_) => Err("a MIN(...) is NULL: no witness joined".to_string()),
            Err(e) => Err(e.to_string()),
        };
        queries.push(QueryRun { name: q.name.clone(), time: t.elapsed(), result });
    }
    let mut orphans = Vec::new();
    for (table, column, target) in FOREIGN_KEYS {
        let n = s
            .query(&format!(
                "SELECT count(*) FROM {table} c WHERE c.{column} IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM {target} p WHERE p.id = c.{column})"
            ))
            .map_err(|e| e.to_string())?;
        orphans.push((format!("{table}.{column} -> {target}"), n.parse().map_err(|_| format!("count {n}"))?));
    }
    Ok(CheckReport { load_time, queries, orphans })
}
