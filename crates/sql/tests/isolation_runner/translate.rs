//! Script lines as SQL, and SQL results in the script runner's words.
//!
//! The translation is the one `crates/txn/tests/anomalies_vs_postgres.rs`
//! uses for PostgreSQL (its module doc has the table), copied rather than
//! shared because two things differ: ndpdb has no RETURNING, so an UPDATE
//! or DELETE says whether it found its row by its command tag (`UPDATE 0`
//! is "not found") and an INSERT's VID is the one the translation chose;
//! and `sum`, `count` and `rows` run more than once (on the device's PEs,
//! with two freshness modes, and on the host), as the transaction-API
//! runner does, and must agree.

use std::collections::HashMap;

use ndpdb_sql::session::StatementResult;
use ndpdb_sql::types::Value;
use ndpdb_sql::types::format::pg_text;

/// A table of the script: its columns and the next VID an insert gets
/// (counted as ndpdb's store numbers tuples: an aborted insert uses one up).
struct ScriptTable {
    columns: Vec<String>,
    next_vid: u64,
}

/// The reads `sum`, `count` and `rows` make, in this order; all must agree.
/// CBM comes before flush because it reads the delta pages flush would
/// write (as in the transaction-API runner).
pub const READ_MODES: &[(&str, &[&str])] = &[
    ("ndp cbm", &["SET ndp = on", "SET ndp_freshness = cbm"]),
    ("ndp flush", &["SET ndp = on", "SET ndp_freshness = flush"]),
    ("ndp ship", &["SET ndp = on", "SET ndp_freshness = ship"]),
    ("host", &["SET ndp = off"]),
];

/// What a script line asks, as SQL.
pub enum Sql {
    /// One statement; its result is rendered by [`outcome`].
    One(String),
    /// An INSERT of the given VID.
    Insert(String, u64),
    /// The same query in every [`READ_MODES`] mode: the SET statements of
    /// a mode, then the query; every mode must give the same rows.
    EveryMode(String),
}

#[derive(Default)]
pub struct Translator {
    tables: HashMap<String, ScriptTable>,
}

impl Translator {
    /// `table NAME COL TYPE ...` as CREATE TABLE with a `vid` key.
    pub fn create_table(&mut self, name: &str, cols: &[&str]) -> String {
        let defs: Vec<String> = cols
            .chunks(2)
            .map(|c| format!("{} {}", c[0], if c.get(1) == Some(&"int32") { "int" } else { "bigint" }))
            .collect();
        let columns = cols.chunks(2).map(|c| c[0].to_string()).collect();
        self.tables.insert(name.to_string(), ScriptTable { columns, next_vid: 0 });
        format!("CREATE TABLE {name} (vid int PRIMARY KEY, {})", defs.join(", "))
    }

    /// `INSERT` of the next VID of `name`, and that VID.
    pub fn insert(&mut self, name: &str, vals: &[&str]) -> Result<(String, u64), String> {
        let t = self.tables.get_mut(name).ok_or_else(|| format!("insert into unknown table {name}"))?;
        let vid = t.next_vid;
        t.next_vid += 1;
        Ok((format!("INSERT INTO {name} VALUES ({vid}, {})", vals.join(", ")), vid))
    }

    fn cols(&self, name: &str) -> Result<String, String> {
        Ok(self.tables.get(name).ok_or_else(|| format!("unknown table {name}"))?.columns.join(", "))
    }

    /// The SQL of a session statement (the words after `S:`).
    pub fn statement(&mut self, words: &[&str]) -> Result<Sql, String> {
        Ok(match words {
            ["get", name, vid] => Sql::One(format!("SELECT {} FROM {name} WHERE vid = {vid}", self.cols(name)?)),
            ["sum", name, col] => Sql::EveryMode(format!("SELECT sum({col}) FROM {name}")),
            ["count", name, ..] => Sql::EveryMode(format!("SELECT count(*) FROM {name}")),
            ["rows", name] => Sql::EveryMode(format!("SELECT vid, {} FROM {name} ORDER BY vid", self.cols(name)?)),
            ["rows", name, "where", col, op, v] => {
                let op = if *op == "!=" { "<>" } else { op };
                Sql::EveryMode(format!(
                    "SELECT vid, {} FROM {name} WHERE {col} {op} {v} ORDER BY vid",
                    self.cols(name)?
                ))
            }
            ["insert", name, vals @ ..] => {
                let (sql, vid) = self.insert(name, vals)?;
                Sql::Insert(sql, vid)
            }
            ["update", name, vid, vals @ ..] => {
                let t = self.tables.get(*name).ok_or_else(|| format!("unknown table {name}"))?;
                let set: Vec<String> = t.columns.iter().zip(vals).map(|(c, v)| format!("{c} = {v}")).collect();
                Sql::One(format!("UPDATE {name} SET {} WHERE vid = {vid}", set.join(", ")))
            }
            ["delete", name, vid] => Sql::One(format!("DELETE FROM {name} WHERE vid = {vid}")),
            ["commit"] => Sql::One("COMMIT".into()),
            ["abort"] => Sql::One("ROLLBACK".into()),
            other => return Err(format!("cannot translate statement {other:?}")),
        })
    }
}

/// `(1, 100)`: a row's cells, NULL as `null`.
fn cells(row: &[Value]) -> String {
    let c: Vec<String> = row.iter().map(|v| if v.is_null() { "null".into() } else { pg_text(v) }).collect();
    format!("({})", c.join(", "))
}

/// The outcome of a finished statement in the runner's words, given the
/// script words and the statement's result (a query's in every mode once
/// they agreed).
pub fn outcome(words: &[&str], r: &StatementResult) -> Result<String, String> {
    let tag_count = || r.tag.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok());
    Ok(match words {
        ["commit"] if r.tag == "COMMIT" => "committed".into(),
        // COMMIT of a failed block rolls back: the transaction had ended.
        ["commit"] => "ended".into(),
        ["abort"] => "aborted".into(),
        ["get", ..] => r.rows.first().map_or("none".into(), |row| cells(row)),
        ["sum", ..] | ["count", ..] => match r.rows.first().and_then(|row| row.first()) {
            Some(v) if !v.is_null() => pg_text(v),
            _ => "null".into(),
        },
        ["rows", ..] if r.rows.is_empty() => "no rows".into(),
        ["rows", ..] => r
            .rows
            .iter()
            .map(|row| match row.split_first() {
                Some((vid, rest)) => format!("{}:{}", pg_text(vid), cells(rest)),
                None => "()".into(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        ["update", ..] | ["delete", ..] => match tag_count() {
            Some(0) => "not found".into(),
            Some(1) => "ok".into(),
            _ => return Err(format!("unexpected command tag {:?}", r.tag)),
        },
        other => return Err(format!("no outcome for {other:?}")),
    })
}
