//! The workload composer of the neoDBMS demo (ICDE'22, section III), as a
//! file format.
//!
//! A workload is a list of steps run in order on ORDER_LINE, and one
//! analytical query. A `snapshot` step is a marker: it opens a transaction at
//! the given isolation level that takes its snapshot there and stays open;
//! the steps after it commit; at the end the query runs in every marker's
//! snapshot, on every engine. Example (TOML):
//!
//! ```toml
//! name = "versions"
//!
//! [[step]]
//! load = 100000              # ORDER_LINE tuples, TPC-C population rules
//!
//! [[step]]
//! snapshot = "repeatable read"   # or "serializable"
//! label = "before updates"
//!
//! [[step]]
//! update = "all"             # or a number of distinct live tuples
//! choice = "uniform"         # or "zipfian"
//!
//! [[step]]
//! insert = 1000
//!
//! [[step]]
//! delete = 500
//!
//! [query]
//! op = "sum"                 # count-star (or count(*)), count, sum, min, max, avg
//! column = "ol_amount"
//! where = "ol_quantity >= 5" # optional: COLUMN OP INTEGER
//! ```
//!
//! Unknown keys, a step with no or two actions, a step that cannot run
//! (an update before any load, more deletes than live tuples), two markers
//! with one label, and a query ORDER_LINE cannot answer (no such column, a
//! `where` that does not parse, the sum of a timestamp) are errors that name
//! the file and the line. [`Workload::plan`] turns a workload into concrete actions
//! (which tuples, which new values) once, so that every engine applies
//! exactly the same changes.

use anyhow::{Result, anyhow, bail};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::ColumnType;
use ndpdb_format::text;
use ndpdb_workload::{KeyChoice, KeyPicker, OL_AMOUNT, ORDER_LINE, ValueGen, order_line_columns};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: Option<String>,
    step: Vec<toml::Spanned<RawStep>>,
    query: toml::Spanned<RawQuery>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    load: Option<u64>,
    insert: Option<u64>,
    update: Option<toml::Value>,
    delete: Option<u64>,
    snapshot: Option<String>,
    label: Option<String>,
    choice: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    op: String,
    column: Option<String>,
    #[serde(rename = "where")]
    predicate: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    RepeatableRead,
    Serializable,
}

impl Level {
    pub fn sql(self) -> &'static str {
        match self {
            Level::RepeatableRead => "REPEATABLE READ",
            Level::Serializable => "SERIALIZABLE",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Choice {
    Uniform,
    Zipfian,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Insert this many new tuples (`load` and `insert` differ only in name).
    Insert(u64),
    /// Update this many distinct live tuples (None: all).
    Update(Option<u64>, Choice),
    Delete(u64),
    Snapshot(Level, String),
}

/// The names `op` is said to take in messages (it also takes `count(*)`:
/// [`text::parse_aggregate`]).
const QUERY_OPS: [&str; 6] = ["count", "count-star", "sum", "min", "max", "avg"];

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub op: Aggregate,
    pub column: String,
    pub predicate: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    pub steps: Vec<Step>,
    pub query: Query,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

impl RawStep {
    /// The step; `markers` snapshot steps came before it (for the default
    /// label). The error is the message, without the line.
    fn step(&self, markers: usize) -> std::result::Result<Step, String> {
        let r = self;
        let actions =
            [r.load.is_some(), r.insert.is_some(), r.update.is_some(), r.delete.is_some(), r.snapshot.is_some()];
        if actions.iter().filter(|&&a| a).count() != 1 {
            return Err("a step needs exactly one of load, insert, update, delete, snapshot".into());
        }
        if r.choice.is_some() && r.update.is_none() {
            return Err("`choice` belongs to an update step".into());
        }
        if r.label.is_some() && r.snapshot.is_none() {
            return Err("`label` belongs to a snapshot step".into());
        }
        Ok(if let Some(n) = r.load.or(r.insert) {
            Step::Insert(n)
        } else if let Some(n) = r.delete {
            Step::Delete(n)
        } else if let Some(u) = &r.update {
            let n = match u {
                toml::Value::String(s) if s == "all" => None,
                toml::Value::Integer(n) if *n >= 0 => Some(*n as u64),
                other => return Err(format!("update = {other}: give a number of tuples or \"all\"")),
            };
            let choice = match r.choice.as_deref() {
                None | Some("uniform") => Choice::Uniform,
                Some("zipfian") => Choice::Zipfian,
                Some(other) => return Err(format!("choice = {other:?}: use \"uniform\" or \"zipfian\"")),
            };
            Step::Update(n, choice)
        } else {
            let level = match r.snapshot.as_deref().map(str::to_ascii_lowercase).as_deref() {
                Some("repeatable read") | Some("rr") => Level::RepeatableRead,
                Some("serializable") => Level::Serializable,
                other => {
                    return Err(format!(
                        "snapshot = {:?}: use \"repeatable read\" or \"serializable\"",
                        other.unwrap_or("")
                    ));
                }
            };
            Step::Snapshot(level, r.label.clone().unwrap_or_else(|| format!("marker {}", markers + 1)))
        })
    }
}

impl RawQuery {
    /// The query, checked against ORDER_LINE's columns (`column` defaults
    /// to `ol_amount`); the error is the message, without the line.
    fn query(&self) -> std::result::Result<Query, String> {
        let op = text::parse_aggregate(&self.op)
            .map_err(|_| format!("op = {:?}: use one of {}", self.op, QUERY_OPS.join(", ")))?;
        let column = self.column.clone().unwrap_or_else(|| OL_AMOUNT.into());
        let columns = order_line_columns();
        if op != Aggregate::CountStar {
            let ty = columns
                .iter()
                .find(|c| c.name == column)
                .map(|c| c.ty)
                .ok_or_else(|| format!("column = {column:?}: ORDER_LINE has no such column"))?;
            match ty {
                ColumnType::Timestamp if matches!(op, Aggregate::Sum | Aggregate::Avg) => {
                    return Err(format!(
                        "{}({column}) of a timestamp is not defined (as in PostgreSQL); use min, max or count",
                        text::aggregate_name(op)
                    ));
                }
                ColumnType::Int32 | ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp => {}
                _ => return Err(format!("column = {column:?}: an integer, decimal or timestamp column")),
            }
        }
        if let Some(p) = &self.predicate {
            text::parse_predicate(ORDER_LINE, &columns, p).map_err(|e| e.to_string())?;
        }
        Ok(Query { op, column, predicate: self.predicate.clone() })
    }
}

impl Workload {
    /// Parses a composer file; errors name the file and line.
    pub fn parse(text: &str, source: &str) -> Result<Workload> {
        let raw: RawWorkload = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| format!(" line {}", line_of(text, s.start))).unwrap_or_default();
            anyhow!("{source}{at}: {}", e.message())
        })?;
        let mut steps = Vec::new();
        for s in &raw.step {
            let line = line_of(text, s.span().start);
            let markers = steps.iter().filter(|s| matches!(s, Step::Snapshot(..))).count();
            steps.push(s.get_ref().step(markers).map_err(|m| anyhow!("{source} line {line}: {m}"))?);
        }
        let qline = line_of(text, raw.query.span().start);
        let query = raw.query.get_ref().query().map_err(|m| anyhow!("{source} line {qline}: {m}"))?;
        let w = Workload { name: raw.name.unwrap_or_else(|| source.to_string()), steps, query };
        if !w.steps.iter().any(|s| matches!(s, Step::Snapshot(..))) {
            bail!("{source}: the workload has no snapshot step, so the query has no snapshot to run in");
        }
        // Results name a marker by its label: two alike could not be told apart.
        for (i, s) in w.steps.iter().enumerate() {
            if let Step::Snapshot(_, label) = s
                && w.marker_step(label) != Some(i + 1)
            {
                let line = line_of(text, raw.step[i].span().start);
                bail!(
                    "{source} line {line}: a snapshot step before this one has the label {label:?} too; give each a label of its own"
                );
            }
        }
        // Check that the steps can run, naming the line of the first that cannot.
        w.plan(0).map_err(|e| {
            let bad = e.step;
            let line = raw.step.get(bad).map(|s| line_of(text, s.span().start)).unwrap_or(0);
            anyhow!("{source} line {line}: {}", e.message)
        })?;
        Ok(w)
    }

    /// The step number (1-based, in file order) of the marker labelled
    /// `label`, the first one if two have it.
    pub fn marker_step(&self, label: &str) -> Option<usize> {
        self.steps.iter().position(|s| matches!(s, Step::Snapshot(_, l) if l == label)).map(|i| i + 1)
    }

    /// The workload as a composer file (for `--print-workload`).
    pub fn to_toml(&self) -> String {
        let mut out = format!("name = {:?}\n", self.name);
        for s in &self.steps {
            out.push_str("\n[[step]]\n");
            match s {
                Step::Insert(n) => out.push_str(&format!("load = {n}\n")),
                Step::Update(n, c) => {
                    out.push_str(&match n {
                        Some(n) => format!("update = {n}\n"),
                        None => "update = \"all\"\n".into(),
                    });
                    if *c == Choice::Zipfian {
                        out.push_str("choice = \"zipfian\"\n");
                    }
                }
                Step::Delete(n) => out.push_str(&format!("delete = {n}\n")),
                Step::Snapshot(l, label) => {
                    out.push_str(&format!("snapshot = {:?}\nlabel = {label:?}\n", l.sql().to_ascii_lowercase()))
                }
            }
        }
        out.push_str(&format!(
            "\n[query]\nop = {:?}\ncolumn = {:?}\n",
            text::aggregate_name(self.query.op),
            self.query.column
        ));
        if let Some(p) = &self.query.predicate {
            out.push_str(&format!("where = {p:?}\n"));
        }
        out
    }

    /// Concrete actions: which tuples each step touches and the values it
    /// writes, from `seed`.
    pub fn plan(&self, seed: u64) -> std::result::Result<Vec<Action>, PlanError> {
        let mut live: Vec<u64> = Vec::new();
        let mut next_vid = 0u64;
        let mut values = ValueGen::new(seed ^ 0x5eed);
        let mut actions = Vec::new();
        for (i, s) in self.steps.iter().enumerate() {
            let fail = |m: String| PlanError { step: i, message: m };
            actions.push(match s {
                Step::Insert(n) => {
                    let a = Action::Insert { first: next_vid, count: *n };
                    live.extend(next_vid..next_vid + n);
                    next_vid += n;
                    a
                }
                Step::Update(n, choice) => {
                    let k = n.unwrap_or(live.len() as u64);
                    let picks = pick(&live, k, *choice, seed.wrapping_add(i as u64)).map_err(fail)?;
                    let mut ups: Vec<(u64, i64)> = picks.into_iter().map(|v| (v, values.new_amount())).collect();
                    ups.sort_unstable();
                    Action::Update(ups)
                }
                Step::Delete(n) => {
                    let mut picks = pick(&live, *n, Choice::Uniform, seed.wrapping_add(i as u64)).map_err(fail)?;
                    picks.sort_unstable();
                    live.retain(|v| picks.binary_search(v).is_err());
                    Action::Delete(picks)
                }
                Step::Snapshot(level, label) => Action::Marker { level: *level, label: label.clone() },
            });
        }
        Ok(actions)
    }
}

fn pick(live: &[u64], k: u64, choice: Choice, seed: u64) -> std::result::Result<Vec<u64>, String> {
    if k == 0 {
        return Ok(vec![]);
    }
    if k > live.len() as u64 {
        return Err(format!("the step touches {k} tuples but only {} are live", live.len()));
    }
    if k == live.len() as u64 {
        return Ok(live.to_vec());
    }
    let kc = match choice {
        Choice::Uniform => KeyChoice::Uniform,
        Choice::Zipfian => KeyChoice::scrambled_zipfian_default(),
    };
    let mut p = KeyPicker::new(live.len() as u64, kc, seed).map_err(|e| e.to_string())?;
    Ok(p.distinct(k).map_err(|e| e.to_string())?.into_iter().map(|i| live[i as usize]).collect())
}

#[derive(Debug)]
pub struct PlanError {
    pub step: usize,
    pub message: String,
}

/// One concrete change or marker.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Tuples `first..first+count` of the ORDER_LINE generator, as VIDs `first..`.
    Insert {
        first: u64,
        count: u64,
    },
    /// (VID, new ol_amount in cents), sorted by VID.
    Update(Vec<(u64, i64)>),
    /// VIDs, sorted.
    Delete(Vec<u64>),
    Marker {
        level: Level,
        label: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
[[step]]
load = 100
[[step]]
snapshot = "repeatable read"
[[step]]
update = "all"
[[step]]
delete = 10
[[step]]
insert = 5
[[step]]
snapshot = "serializable"
label = "end"
[query]
op = "sum"
column = "ol_amount"
"#;

    #[test]
    fn parses_plans_and_roundtrips() {
        let w = Workload::parse(GOOD, "good.toml").unwrap();
        assert_eq!(w.steps.len(), 6);
        let plan = w.plan(7).unwrap();
        assert!(matches!(&plan[2], Action::Update(u) if u.len() == 100));
        assert!(matches!(&plan[3], Action::Delete(d) if d.len() == 10));
        assert_eq!(plan[4], Action::Insert { first: 100, count: 5 });
        assert_eq!(w.plan(7).unwrap(), plan, "plans are deterministic");
        assert_eq!(Workload::parse(&w.to_toml(), "again").unwrap().steps, w.steps);
    }

    /// `op` takes every name `ndpdb db aggregate --func` takes; count(*)
    /// needs no column and prints back as count-star.
    #[test]
    fn query_ops_are_the_aggregate_names() {
        let with_op = |op: &str| GOOD.replace("op = \"sum\"", &format!("op = {op:?}"));
        let no_column = |op: &str| with_op(op).replace("column = \"ol_amount\"\n", "");
        for op in ["count(*)", "count-star"] {
            assert_eq!(Workload::parse(&no_column(op), "w").unwrap().query.op, Aggregate::CountStar);
        }
        assert_eq!(Workload::parse(&with_op("avg"), "w").unwrap().query.op, Aggregate::Avg);
        let w = Workload::parse(&with_op("count(*)"), "w").unwrap();
        assert!(w.to_toml().contains("op = \"count-star\""), "{}", w.to_toml());
        assert_eq!(Workload::parse(&w.to_toml(), "again").unwrap().query, w.query);
        // `column` defaults to ol_amount, as docs/composer.md says.
        assert_eq!(Workload::parse(&no_column("count"), "w").unwrap().query.column, "ol_amount");
        assert_eq!(Workload::parse(&no_column("sum"), "w").unwrap().query.op, Aggregate::Sum);
        let e = Workload::parse(&with_op("median"), "w").unwrap_err().to_string();
        assert!(e.ends_with("op = \"median\": use one of count, count-star, sum, min, max, avg"), "{e}");
    }

    #[test]
    fn errors_point_at_the_line() {
        let e = |text: &str| Workload::parse(text, "w.toml").unwrap_err().to_string();
        let bad = GOOD.replace("delete = 10", "delete = 10\nupdate = 3");
        assert!(e(&bad).contains("w.toml line 9"), "{}", e(&bad));
        let bad = GOOD.replace("delete = 10", "delete = 1000");
        assert!(e(&bad).contains("line 9") && e(&bad).contains("only"), "{}", e(&bad));
        let bad = GOOD.replace("load = 100", "lod = 100");
        assert!(e(&bad).contains("line 4") && e(&bad).contains("lod"), "{}", e(&bad));
        let bad = GOOD.replace("op = \"sum\"", "op = \"median\"");
        assert!(e(&bad).contains("median"), "{}", e(&bad));
        let bad = GOOD.replace("\"repeatable read\"", "\"snapshot\"");
        assert!(e(&bad).contains("line 5"), "the step starting on line 5: {}", e(&bad));
        assert!(e("name = 1\n[[step]\n").contains("line"), "{}", e("name = 1\n[[step]\n"));
    }

    /// The query is checked when the file is read, and its errors name the
    /// file and the `[query]` line like every other composer error.
    #[test]
    fn query_errors_point_at_the_file_and_line() {
        let e = |text: String| Workload::parse(&text, "w.toml").unwrap_err().to_string();
        let query_line = GOOD.lines().position(|l| l == "[query]").unwrap() + 1;
        let at = format!("w.toml line {query_line}: ");
        let bad = e(GOOD.replace("column = \"ol_amount\"", "column = \"ol_amount\"\nwhere = \"ol_quantity >> 5\""));
        assert!(bad.starts_with(&at) && bad.contains("where: `> 5`"), "{bad}");
        let bad = e(GOOD.replace("column = \"ol_amount\"", "column = \"ol_amount\"\nwhere = \"nope = 1\""));
        assert!(bad.starts_with(&at) && bad.contains("no column nope"), "{bad}");
        let bad = e(GOOD.replace("column = \"ol_amount\"", "column = \"ol_amout\""));
        assert!(bad.starts_with(&at) && bad.contains("ol_amout"), "{bad}");
        let bad = e(GOOD.replace("column = \"ol_amount\"", "column = \"ol_delivery_d\""));
        assert!(bad.starts_with(&at) && bad.contains("timestamp"), "{bad}");
        let bad = e(GOOD.replace("label = \"end\"", "label = \"marker 1\""));
        assert!(bad.starts_with("w.toml line 13: ") && bad.contains("\"marker 1\""), "{bad}");
    }
}
