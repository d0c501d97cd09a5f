//! Statements clients send that the SQL engine's parser does not take, run
//! here before it: pgbench's `VACUUM [ANALYZE] t` (ndpdb has no vacuum to
//! do: old versions are collected by the store's maintenance; ANALYZE
//! runs as asked).

use ndpdb_sql::SqlError;
use ndpdb_sql::session::{Session, StatementResult};

/// One statement of a Query message.
pub enum Item {
    Sql(Box<sqlparser::ast::Statement>),
    /// VACUUM, with the tables to ANALYZE (None: no ANALYZE).
    Vacuum(Option<String>),
}

/// Whether `sql` is one statement this module runs itself.
pub fn is_utility(sql: &str) -> bool {
    first_word(sql).eq_ignore_ascii_case("vacuum")
}

fn first_word(sql: &str) -> &str {
    sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("")
}

pub fn parse(sql: &str) -> Result<Vec<Item>, SqlError> {
    if is_utility(sql) {
        return Ok(vec![vacuum(sql)]);
    }
    Ok(ndpdb_sql::bind::parse(sql)?.into_iter().map(|s| Item::Sql(Box::new(s))).collect())
}

fn vacuum(sql: &str) -> Item {
    let words: Vec<&str> = sql.trim().trim_end_matches(';').split_whitespace().collect();
    let analyze = words.iter().any(|w| w.eq_ignore_ascii_case("analyze"));
    let tables: Vec<&str> = words[1..]
        .iter()
        .copied()
        .filter(|w| !["analyze", "verbose", "full", "freeze"].contains(&w.to_ascii_lowercase().as_str()))
        .collect();
    Item::Vacuum(analyze.then(|| tables.join(" ")))
}

pub fn run_one(s: &mut Session, item: &Item) -> Result<StatementResult, SqlError> {
    match item {
        Item::Sql(ast) => s.run_one(ast),
        Item::Vacuum(analyze) => {
            if let Some(tables) = analyze {
                let sql = format!("ANALYZE {tables}");
                for r in s.run(&sql) {
                    r?;
                }
            }
            Ok(StatementResult { tag: "VACUUM".into(), columns: vec![], rows: vec![], notices: vec![] })
        }
    }
}

/// Runs every statement of `sql`; the last one's result (an error stops).
pub fn run_text(s: &mut Session, sql: &str) -> Result<StatementResult, SqlError> {
    let mut last = StatementResult { tag: String::new(), columns: vec![], rows: vec![], notices: vec![] };
    for item in parse(sql)? {
        last = run_one(s, &item)?;
    }
    Ok(last)
}
