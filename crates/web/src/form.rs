//! The composer page's form, and the composer file it stands for.
//!
//! The page edits a workload as JSON ([`ComposerForm`]); the server turns
//! it into the text of a composer file (`docs/composer.md`) and checks that
//! text with the composer's own parser (`ndpdb_bench::compose::Workload::
//! parse`), so the page and `bench snapshot --workload` accept exactly the
//! same workloads. Errors come back addressed to a field of the form: the
//! file is written one key a line, and each line remembers the field it
//! came from, so the parser's `line N` names the field.
//!
//! ```text
//!  form (JSON) ──to_toml──► text + [field of each line] ──Workload::parse──► Workload
//!                                      ▲                          │ error "composer line 7: ..."
//!                                      └──────── line 7 ──────────┘  → {field: "steps.1.count", message}
//! ```
//!
//! The engines ([`EnginesForm`]) become `bench snapshot`'s `Config` and are
//! checked by `Config::validate`, the CLI's rules, the same way.

use ndpdb_bench::compose::{Choice, Level, Step, Workload};
use ndpdb_bench::snapshot;
use ndpdb_device::profile::BUILTIN;
use ndpdb_device::{ClockKind, Profile};
use ndpdb_format::text::aggregate_name;
use ndpdb_storage::Freshness;
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, FieldError};

/// The source name the parser puts before its messages.
const SOURCE: &str = "composer";

/// A workload as the page edits it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ComposerForm {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub steps: Vec<StepForm>,
    #[serde(default)]
    pub query: QueryForm,
}

/// One step: `action` is load, insert, update, delete or snapshot.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StepForm {
    #[serde(default)]
    pub action: String,
    /// Tuples (a number; an update also takes `"all"`), as the page sends
    /// it: the parser judges it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct QueryForm {
    #[serde(default)]
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    #[serde(rename = "where", default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
}

/// A TOML string literal of `s` (escaped).
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The text of a TOML value the page sent for a count: numbers as they
/// are, text quoted, anything else as text (for the parser to refuse).
fn count_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => match s.trim().parse::<i64>() {
            Ok(n) => n.to_string(),
            Err(_) => quoted(s.trim()),
        },
        other => quoted(&other.to_string()),
    }
}

fn blank(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl ComposerForm {
    /// The composer file, and for each of its lines the form field it holds.
    pub fn to_toml(&self) -> (String, Vec<String>) {
        let mut text = String::new();
        let mut fields = Vec::new();
        let mut line = |text: &mut String, l: String, field: String| {
            text.push_str(&l);
            text.push('\n');
            fields.push(field);
        };
        if !self.name.trim().is_empty() {
            line(&mut text, format!("name = {}", quoted(self.name.trim())), "name".into());
        }
        for (i, s) in self.steps.iter().enumerate() {
            let f = |k: &str| format!("steps.{i}.{k}");
            line(&mut text, "[[step]]".into(), format!("steps.{i}"));
            let action = s.action.trim();
            if action == "snapshot" {
                // A marker whose isolation level was left empty is given
                // one the parser refuses, so the message names the field.
                let level = blank(&s.level).unwrap_or("");
                line(&mut text, format!("snapshot = {}", quoted(level)), f("level"));
                if let Some(l) = blank(&s.label) {
                    line(&mut text, format!("label = {}", quoted(l)), f("label"));
                }
            } else if !action.is_empty() {
                let count = s.count.as_ref().map_or_else(|| quoted(""), count_text);
                line(&mut text, format!("{action} = {count}"), f("count"));
                if action == "update"
                    && let Some(c) = blank(&s.choice)
                {
                    line(&mut text, format!("choice = {}", quoted(c)), f("choice"));
                }
            }
        }
        line(&mut text, "[query]".into(), "query".into());
        line(&mut text, format!("op = {}", quoted(self.query.op.trim())), "query.op".into());
        if let Some(c) = blank(&self.query.column) {
            line(&mut text, format!("column = {}", quoted(c)), "query.column".into());
        }
        if let Some(p) = blank(&self.query.predicate) {
            line(&mut text, format!("where = {}", quoted(p)), "query.where".into());
        }
        (text, fields)
    }

    /// The workload, checked by the composer's parser; errors name the
    /// form's field.
    pub fn parse(&self) -> Result<(Workload, String), ApiError> {
        for (i, s) in self.steps.iter().enumerate() {
            if !["load", "insert", "update", "delete", "snapshot"].contains(&s.action.trim()) {
                let message =
                    format!("step {}: choose load, insert, update, delete or snapshot (not {:?})", i + 1, s.action);
                return Err(FieldError::new(format!("steps.{i}.action"), message).into());
            }
        }
        let (text, fields) = self.to_toml();
        Workload::parse(&text, SOURCE).map(|w| (w, text)).map_err(|e| field_error(&e.to_string(), &fields).into())
    }

    /// The form of a workload (a loaded file, a scenario).
    pub fn of(w: &Workload) -> ComposerForm {
        let steps = w
            .steps
            .iter()
            .map(|s| match s {
                Step::Insert(n) => StepForm { action: "load".into(), count: Some((*n).into()), ..StepForm::default() },
                Step::Update(n, c) => StepForm {
                    action: "update".into(),
                    count: Some(n.map_or_else(|| "all".into(), serde_json::Value::from)),
                    choice: Some(if *c == Choice::Zipfian { "zipfian" } else { "uniform" }.into()),
                    ..StepForm::default()
                },
                Step::Delete(n) => {
                    StepForm { action: "delete".into(), count: Some((*n).into()), ..StepForm::default() }
                }
                Step::Snapshot(l, label) => StepForm {
                    action: "snapshot".into(),
                    level: Some(if *l == Level::Serializable { "serializable" } else { "repeatable read" }.into()),
                    label: Some(label.clone()),
                    ..StepForm::default()
                },
            })
            .collect();
        let query = QueryForm {
            op: aggregate_name(w.query.op).to_string(),
            column: Some(w.query.column.clone()),
            predicate: w.query.predicate.clone(),
        };
        ComposerForm { name: w.name.clone(), steps, query }
    }
}

/// The form field a parser message concerns: the line it names, refined
/// by what it says when the line is a step's or the query's head.
pub fn field_error(message: &str, fields: &[String]) -> FieldError {
    let rest = message.strip_prefix(SOURCE).unwrap_or(message);
    let line =
        rest.strip_prefix(" line ").and_then(|r| r.split(':').next()).and_then(|n| n.trim().parse::<usize>().ok());
    let text = match rest.find(": ") {
        Some(i) => rest[i + 2..].to_string(),
        None => rest.trim_start_matches(':').trim().to_string(),
    };
    let Some(field) = line.and_then(|l| fields.get(l.wrapping_sub(1))) else {
        // No line: the workload as a whole (no marker at all).
        return FieldError::new("steps", text);
    };
    let field = refine(field, &text);
    FieldError::new(field, text)
}

fn refine(field: &str, text: &str) -> String {
    let parts: Vec<&str> = field.split('.').collect();
    match parts.as_slice() {
        ["steps", i] => {
            let key = if text.starts_with("snapshot =") {
                "level"
            } else if text.contains("choice") {
                "choice"
            } else if text.contains("label") {
                "label"
            } else {
                "count"
            };
            format!("steps.{i}.{key}")
        }
        ["query"] | ["query", _] => {
            let key = if text.starts_with("op =") {
                "op"
            } else if text.starts_with("column =") || text.contains("of a timestamp") {
                "column"
            } else if parts.len() == 2 {
                parts[1]
            } else {
                "where"
            };
            format!("query.{key}")
        }
        _ => field.to_string(),
    }
}

/// The engines, profile and clock of a run, as the page edits them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EnginesForm {
    /// PE counts for ndpdb NDP, comma separated.
    pub pes: String,
    /// Host worker counts for ndpdb's block stack, comma separated.
    pub workers: String,
    /// PostgreSQL with these parallel worker counts (empty: none).
    #[serde(default)]
    pub pg_workers: String,
    pub profile: String,
    pub clock: String,
    #[serde(default = "one")]
    pub repeat: u32,
    #[serde(default = "one_u64")]
    pub seed: u64,
}

fn one() -> u32 {
    1
}

fn one_u64() -> u64 {
    1
}

/// The most runs of each query the page asks for (the CLI's `--repeat` limit).
const REPEAT_MAX: u32 = 100;

/// A profile that ships with ndpdb, by name: the page names no files on
/// the server (`Profile::load` also takes a path).
fn builtin_profile(name: &str) -> Result<Profile, FieldError> {
    let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    if !names.contains(&name) {
        let message = format!("no built-in profile {name:?}: choose one of {}", names.join(", "));
        return Err(FieldError::new("engines.profile", message));
    }
    Profile::load(name).map_err(|e| FieldError::new("engines.profile", e.to_string()))
}

fn list<T: std::str::FromStr>(field: &str, text: &str) -> Result<Vec<T>, FieldError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse().map_err(|_| {
                FieldError::new(field, format!("{s:?} is not a count: give whole numbers, comma separated"))
            })
        })
        .collect()
}

impl EnginesForm {
    /// `bench snapshot`'s configuration, checked with the CLI's rules.
    pub fn config(&self) -> Result<snapshot::Config, ApiError> {
        let mut errors = Vec::new();
        let pes = list::<u32>("engines.pes", &self.pes).map_err(|e| errors.push(e)).unwrap_or_default();
        let workers = list::<usize>("engines.workers", &self.workers).map_err(|e| errors.push(e)).unwrap_or_default();
        let pg = list::<usize>("engines.pg_workers", &self.pg_workers).map_err(|e| errors.push(e)).unwrap_or_default();
        let clock = self.clock.parse::<ClockKind>().map_err(|e| errors.push(FieldError::new("engines.clock", e)));
        let profile = builtin_profile(self.profile.trim()).map_err(|e| errors.push(e));
        if !(1..=REPEAT_MAX).contains(&self.repeat) {
            errors.push(FieldError::new("engines.repeat", format!("runs of each query: 1..={REPEAT_MAX}")));
        }
        let (Ok(clock), Ok(profile), true) = (clock, profile, errors.is_empty()) else {
            return Err(ApiError::Fields(errors));
        };
        let cfg = snapshot::Config {
            profile,
            clock,
            pes,
            workers,
            postgres_workers: pg,
            seed: self.seed,
            repeat: self.repeat,
            freshness: vec![Freshness::Ship],
        };
        cfg.validate().map_err(|e| {
            let m = e.to_string();
            let field = if m.starts_with("--pes") {
                "engines.pes"
            } else if m.starts_with("--workers") {
                "engines.workers"
            } else if m.starts_with("--pg-workers") {
                "engines.pg_workers"
            } else {
                "engines"
            };
            ApiError::Fields(vec![FieldError::new(field, m)])
        })?;
        Ok(cfg)
    }
}
