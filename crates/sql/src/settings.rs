//! Session settings: what `SET`, `RESET` and `SHOW` read and write.
//!
//! Two kinds of parameters. ndpdb's own change how statements run (`ndp`,
//! `work_mem`, `statement_timeout`, the NDP call's PEs and freshness, the
//! executor's workers, the default isolation level). The others are the
//! ones PostgreSQL clients set or read at connect (`client_encoding`,
//! `DateStyle`, `search_path`, ...): ndpdb accepts each one's value when it
//! is the one ndpdb behaves as, and says so when it is not, rather than
//! pretending to honour it. Names are case-insensitive, values are
//! validated with the error PostgreSQL gives (22023 with the allowed
//! values as the hint; 42704 for an unknown name).

use std::time::Duration;

use crate::error::{Result, SqlError, SqlState};
pub use crate::optimizer::NdpMode;
use crate::plan::statement::IsolationLevel;

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub ndp: NdpMode,
    /// Bytes each hash table or sort may use.
    pub work_mem: usize,
    /// None = no limit.
    pub statement_timeout: Option<Duration>,
    pub default_isolation: IsolationLevel,
    /// Executor threads per query.
    pub workers: usize,
    /// PEs of an NDP call; 0 = all the profile has.
    pub ndp_pes: u32,
    /// `ship`, `flush` or `cbm`.
    pub ndp_freshness: String,
    /// Client parameters accepted at their only supported value, and
    /// free-form ones (`application_name`).
    client: Vec<(&'static str, String)>,
}

/// Client parameters: name, the value ndpdb behaves as, whether any other
/// value is accepted as given (true: a label, no effect on results).
const CLIENT_PARAMS: &[(&str, &str, bool)] = &[
    ("application_name", "", true),
    ("client_encoding", "UTF8", false),
    ("datestyle", "ISO, MDY", false),
    ("extra_float_digits", "1", true),
    ("intervalstyle", "postgres", false),
    ("search_path", "\"$user\", public", true),
    ("standard_conforming_strings", "on", false),
    ("timezone", "UTC", false),
    ("server_encoding", "UTF8", false),
    ("server_version", "15.0", false),
    ("integer_datetimes", "on", false),
    ("is_superuser", "on", false),
    ("lc_collate", "C", false),
    ("lc_ctype", "C", false),
    ("max_parallel_workers_per_gather", "2", true),
    ("synchronous_commit", "on", false),
];

const DEFAULT_WORK_MEM: usize = 64 << 20;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ndp: NdpMode::Auto,
            work_mem: DEFAULT_WORK_MEM,
            statement_timeout: None,
            default_isolation: IsolationLevel::ReadCommitted,
            workers: 2,
            ndp_pes: 0,
            ndp_freshness: "ship".into(),
            client: CLIENT_PARAMS.iter().map(|(n, v, _)| (*n, v.to_string())).collect(),
        }
    }
}

fn invalid(name: &str, value: &str, hint: &str) -> SqlError {
    SqlError::new(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"{name}\": \"{value}\""))
        .with_hint(hint.to_string())
}

fn unknown(name: &str) -> SqlError {
    SqlError::new(SqlState::UNDEFINED_OBJECT, format!("unrecognized configuration parameter \"{name}\""))
}

impl Settings {
    /// `SET name = value`; `None` = `SET name TO DEFAULT` / `RESET name`.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<()> {
        let lname = name.to_ascii_lowercase();
        let Some(v) = value else { return self.reset(&lname) };
        let v = v.trim();
        match lname.as_str() {
            "ndp" => self.ndp = parse_ndp(v)?,
            "work_mem" => self.work_mem = parse_memory(&lname, v)?,
            "statement_timeout" => self.statement_timeout = parse_timeout(&lname, v)?,
            "default_transaction_isolation" | "transaction_isolation" => {
                self.default_isolation = parse_isolation(&lname, v)?
            }
            "ndp_workers" | "workers" => self.workers = parse_count(&lname, v, 1, 64)? as usize,
            "ndp_pes" => self.ndp_pes = parse_count(&lname, v, 0, 1024)? as u32,
            "ndp_freshness" => {
                let f = v.to_ascii_lowercase();
                if !["ship", "flush", "cbm"].contains(&f.as_str()) {
                    return Err(invalid(&lname, v, "Available values: ship, flush, cbm."));
                }
                self.ndp_freshness = f;
            }
            _ => self.set_client(&lname, v)?,
        }
        Ok(())
    }

    fn set_client(&mut self, name: &str, value: &str) -> Result<()> {
        let Some((_, only, free)) = CLIENT_PARAMS.iter().find(|(n, _, _)| *n == name) else {
            return Err(unknown(name));
        };
        let value = value.trim_matches('\'');
        let same = normalise(value) == normalise(only);
        // PostgreSQL spells these several ways; ndpdb behaves as one.
        let alias_ok = match name {
            "client_encoding" => ["utf8", "utf-8", "unicode"].contains(&value.to_ascii_lowercase().as_str()),
            "datestyle" => value.to_ascii_lowercase().contains("iso"),
            "timezone" => ["utc", "gmt", "etc/utc", "z"].contains(&value.to_ascii_lowercase().as_str()),
            _ => false,
        };
        if !(same || alias_ok || *free) {
            return Err(SqlError::unsupported(format!("ndpdb supports only {name} = '{only}', not '{value}'")));
        }
        if let Some(slot) = self.client.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = if *free { value.to_string() } else { only.to_string() };
        }
        Ok(())
    }

    fn reset(&mut self, name: &str) -> Result<()> {
        let d = Settings::default();
        match name {
            "all" => *self = d,
            "ndp" => self.ndp = d.ndp,
            "work_mem" => self.work_mem = d.work_mem,
            "statement_timeout" => self.statement_timeout = d.statement_timeout,
            "default_transaction_isolation" | "transaction_isolation" => self.default_isolation = d.default_isolation,
            "ndp_workers" | "workers" => self.workers = d.workers,
            "ndp_pes" => self.ndp_pes = d.ndp_pes,
            "ndp_freshness" => self.ndp_freshness = d.ndp_freshness,
            _ => {
                let i = self.client.iter().position(|(n, _)| *n == name).ok_or_else(|| unknown(name))?;
                self.client[i].1 = d.client[i].1.clone();
            }
        }
        Ok(())
    }

    /// `SHOW name` as PostgreSQL prints it.
    pub fn show(&self, name: &str) -> Result<String> {
        let lname = name.to_ascii_lowercase();
        Ok(match lname.as_str() {
            "ndp" => match self.ndp {
                NdpMode::On => "on",
                NdpMode::Off => "off",
                NdpMode::Auto => "auto",
            }
            .into(),
            "work_mem" => show_memory(self.work_mem),
            "statement_timeout" => match self.statement_timeout {
                None => "0".into(),
                Some(d) => show_duration(d),
            },
            "default_transaction_isolation" | "transaction_isolation" => isolation_name(self.default_isolation).into(),
            "ndp_workers" | "workers" => self.workers.to_string(),
            "ndp_pes" => self.ndp_pes.to_string(),
            "ndp_freshness" => self.ndp_freshness.clone(),
            _ => self.client.iter().find(|(n, _)| *n == lname).map(|(_, v)| v.clone()).ok_or_else(|| unknown(name))?,
        })
    }

    /// Every parameter with its value (`SHOW ALL`), by name.
    pub fn all(&self) -> Vec<(String, String)> {
        let mut names: Vec<&str> = vec![
            "ndp",
            "work_mem",
            "statement_timeout",
            "default_transaction_isolation",
            "ndp_workers",
            "ndp_pes",
            "ndp_freshness",
        ];
        names.extend(self.client.iter().map(|(n, _)| *n));
        names.sort_unstable();
        names.into_iter().map(|n| (n.to_string(), self.show(n).unwrap_or_default())).collect()
    }
}

fn normalise(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace() && *c != '"').collect::<String>().to_ascii_lowercase()
}

fn parse_ndp(v: &str) -> Result<NdpMode> {
    match v.trim_matches('\'').to_ascii_lowercase().as_str() {
        "on" | "true" | "1" => Ok(NdpMode::On),
        "off" | "false" | "0" => Ok(NdpMode::Off),
        "auto" => Ok(NdpMode::Auto),
        _ => Err(invalid("ndp", v, "Available values: on, off, auto.")),
    }
}

pub fn isolation_name(i: IsolationLevel) -> &'static str {
    match i {
        IsolationLevel::ReadCommitted => "read committed",
        IsolationLevel::RepeatableRead => "repeatable read",
        IsolationLevel::Serializable => "serializable",
    }
}

fn parse_isolation(name: &str, v: &str) -> Result<IsolationLevel> {
    match normalise(v).as_str() {
        "readcommitted" | "readuncommitted" => Ok(IsolationLevel::ReadCommitted),
        "repeatableread" => Ok(IsolationLevel::RepeatableRead),
        "serializable" => Ok(IsolationLevel::Serializable),
        _ => {
            Err(invalid(name, v, "Available values: serializable, repeatable read, read committed, read uncommitted."))
        }
    }
}

fn parse_count(name: &str, v: &str, lo: u64, hi: u64) -> Result<u64> {
    let n: u64 = v.trim_matches('\'').parse().map_err(|_| {
        SqlError::new(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"{name}\": \"{v}\""))
    })?;
    if !(lo..=hi).contains(&n) {
        return Err(SqlError::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("{n} is outside the valid range for parameter \"{name}\" ({lo} .. {hi})"),
        ));
    }
    Ok(n)
}

/// PostgreSQL's memory units; a bare number is kB.
fn parse_memory(name: &str, v: &str) -> Result<usize> {
    let s = v.trim_matches('\'').trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        invalid(name, v, "Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".")
    })?;
    let mult: u64 = match unit.trim() {
        "" | "kB" => 1 << 10,
        "B" => 1,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => {
            return Err(invalid(
                name,
                v,
                "Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".",
            ));
        }
    };
    let bytes = n.checked_mul(mult).filter(|b| (64 << 10..=1 << 40).contains(b)).ok_or_else(|| {
        SqlError::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("{v} is outside the valid range for parameter \"{name}\" (64kB .. 1TB)"),
        )
    })?;
    Ok(bytes as usize)
}

fn show_memory(bytes: usize) -> String {
    let b = bytes as u64;
    for (unit, m) in [("TB", 1u64 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)] {
        if b.is_multiple_of(m) {
            return format!("{}{unit}", b / m);
        }
    }
    format!("{b}B")
}

/// PostgreSQL's time units; a bare number is milliseconds; 0 = no limit.
fn parse_timeout(name: &str, v: &str) -> Result<Option<Duration>> {
    let s = v.trim_matches('\'').trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let hint = "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".";
    let n: u64 = num.parse().map_err(|_| invalid(name, v, hint))?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "us" => n / 1000,
        "s" => n * 1000,
        "min" => n * 60_000,
        "h" => n * 3_600_000,
        "d" => n * 86_400_000,
        _ => return Err(invalid(name, v, hint)),
    };
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, m) in [("d", 86_400_000u128), ("h", 3_600_000), ("min", 60_000), ("s", 1000)] {
        if ms.is_multiple_of(m) {
            return format!("{}{unit}", ms / m);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_show_reset_round_trip_as_postgresql_prints_them() {
        let mut s = Settings::default();
        assert_eq!(s.show("work_mem").unwrap(), "64MB");
        s.set("work_mem", Some("4096")).unwrap();
        assert_eq!(s.show("WORK_MEM").unwrap(), "4MB");
        s.set("statement_timeout", Some("'1500'")).unwrap();
        assert_eq!(s.show("statement_timeout").unwrap(), "1500ms");
        s.set("statement_timeout", Some("2min")).unwrap();
        assert_eq!(s.show("statement_timeout").unwrap(), "2min");
        s.set("ndp", Some("off")).unwrap();
        assert_eq!(s.ndp, NdpMode::Off);
        s.set("ndp", None).unwrap();
        assert_eq!(s.ndp, NdpMode::Auto);
        s.set("application_name", Some("'psql'")).unwrap();
        assert_eq!(s.show("application_name").unwrap(), "psql");
        s.set("client_encoding", Some("'utf8'")).unwrap();
        assert_eq!(s.show("client_encoding").unwrap(), "UTF8");
    }

    #[test]
    fn bad_names_and_values_get_postgresqls_errors() {
        let mut s = Settings::default();
        assert_eq!(s.set("no_such", Some("1")).unwrap_err().code, SqlState::UNDEFINED_OBJECT);
        let e = s.set("ndp", Some("maybe")).unwrap_err();
        assert_eq!(e.code, SqlState::INVALID_PARAMETER_VALUE);
        assert_eq!(e.message, "invalid value for parameter \"ndp\": \"maybe\"");
        assert_eq!(s.set("work_mem", Some("12XB")).unwrap_err().code, SqlState::INVALID_PARAMETER_VALUE);
        assert_eq!(s.set("work_mem", Some("1")).unwrap_err().code, SqlState::INVALID_PARAMETER_VALUE);
        assert_eq!(s.set("client_encoding", Some("LATIN1")).unwrap_err().code, SqlState::FEATURE_NOT_SUPPORTED);
        assert_eq!(s.show("nope").unwrap_err().code, SqlState::UNDEFINED_OBJECT);
    }
}
