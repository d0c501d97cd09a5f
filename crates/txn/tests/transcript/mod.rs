//! Transcripts of the golden isolation scripts, as the comparisons read
//! them: the runner's output (what a `.golden` file holds) parsed into one
//! line per statement with its outcome normalized, and two transcripts side
//! by side. Shared by `anomalies_vs_postgres.rs` (ndpdb vs PostgreSQL) and
//! the SQL engine's `crates/sql/tests/isolation.rs` (SQL vs golden, which
//! includes this file by path).

#![allow(dead_code)]

/// One line of a transcript: a statement and its normalized outcome, or a
/// blocked statement that a later line let finish.
pub type Transcript = Vec<String>;

/// A runner's transcript, normalized; a malformed one panics, saying how.
pub fn parse_transcript(out: &str) -> Transcript {
    let mut lines = out.lines();
    let mut t = Vec::new();
    while let Some(line) = lines.next() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("  -> ") {
            panic!("a result without a statement: {rest}");
        }
        if let Some(ev) = line.strip_prefix("  ") {
            let (who, rest) = ev.split_once(" unblocked: ").expect("an unblock line");
            let (stmt, result) = rest.split_once(" -> ").expect("an unblocked result");
            t.push(format!("  {who} unblocked: {stmt} -> {}", normalize(result)));
            continue;
        }
        let result = lines.next().and_then(|r| r.strip_prefix("  -> ")).expect("a result line");
        t.push(format!("{line} -> {}", normalize(result)));
    }
    t
}

/// One outcome in the words every side shares; error classes by SQLSTATE's
/// message.
pub fn normalize(raw: &str) -> String {
    let e = raw.strip_prefix("error: ").unwrap_or(raw);
    if e.starts_with("could not serialize access") {
        "serialization failure (40001)".into()
    } else if e.starts_with("deadlock detected") {
        "deadlock (40P01)".into()
    } else if e.starts_with("the transaction has ended")
        || e.starts_with("the session has ended")
        || e.starts_with("current transaction is aborted")
    {
        "ended".into()
    } else if e.contains("does not exist in this transaction's snapshot") {
        "not found".into()
    } else {
        raw.into()
    }
}

/// `left` and `right` in two columns, differing lines marked `!!!`.
pub fn side_by_side(left: &Transcript, right: &Transcript, left_name: &str, right_name: &str) -> String {
    let width = left.iter().map(|l| l.len()).max().unwrap_or(0).max(left_name.len());
    let mut s = format!("    {left_name:width$} | {right_name}\n");
    for i in 0..left.len().max(right.len()) {
        let a = left.get(i).map_or("", |l| l.as_str());
        let b = right.get(i).map_or("", |l| l.as_str());
        s.push_str(&format!("{} {a:width$} | {b}\n", if a == b { "   " } else { "!!!" }));
    }
    s
}
