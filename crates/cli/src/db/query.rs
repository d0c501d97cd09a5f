//! The database commands that run NDP calls: an aggregate in a snapshot
//! (on the device's PEs or the host's block stack), and update-NDP. Their
//! texts (aggregate names, `--where`, `--set`) are parsed by
//! `ndpdb_format::text`.

use anyhow::{Context, Result, bail};
use ndpdb_bench::late::Lateness;
use ndpdb_bench::limits::{check_pes, check_workers};
use ndpdb_bench::{err, out, outln};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::{ColumnType, format_timestamp};
use ndpdb_format::text::{self, decimal_scale, format_scaled};
use ndpdb_storage::{AggregateResult, Freshness, Table};
use ndpdb_txn::{Isolation, ReadMode};

use super::open::{close, open};
use super::{AggregateArgs, UpdateNdpArgs};

pub(super) fn aggregate(a: AggregateArgs) -> Result<()> {
    let db = open(&a.common)?;
    let t = db.table(&a.table)?;
    let func = text::parse_aggregate(&a.func)?;
    let col = if func == Aggregate::CountStar {
        0
    } else {
        t.column_index(&a.column).with_context(|| format!("table {} has no column {}", t.name, a.column))?
    };
    let timestamp = func != Aggregate::CountStar && t.columns[col].ty == ColumnType::Timestamp;
    if timestamp && matches!(func, Aggregate::Sum | Aggregate::Avg) {
        bail!(
            "{}({}): {} is a timestamp, and a timestamp has no sum or average (PostgreSQL: function {}(timestamp) \
             does not exist); use min, max or count",
            a.func,
            a.column,
            a.column,
            a.func
        );
    }
    let predicate = where_clause(&t, a.predicate.as_deref())?;
    let profile = db.store().device().profile().clone();
    let mode = match a.mode.as_str() {
        "ndp" => {
            check_pes("--pes", a.pes, &profile)?;
            ReadMode::Ndp { pes: a.pes, freshness: Freshness::Ship }
        }
        "host" => {
            check_workers("--workers", a.workers)?;
            ReadMode::Host { workers: a.workers }
        }
        other => bail!("--mode {other}: use ndp or host"),
    };
    for run in 1..=a.repeat {
        let mut txn = match a.snapshot {
            Some(id) => db.begin_at(id)?,
            None => db.begin(Isolation::RepeatableRead),
        };
        let r = txn.aggregate(&t, func, col as u16, predicate.as_ref(), mode)?;
        txn.commit()?;
        let sc =
            if matches!(func, Aggregate::CountStar | Aggregate::Count) { 0 } else { decimal_scale(t.columns[col].ty) };
        let result = r.value.map(|v| match i64::try_from(v) {
            Ok(us) if timestamp && func != Aggregate::Count => format_timestamp(us),
            _ => format_scaled(v, sc),
        });
        print_aggregate(&a, &t, func, run, result, &profile.name, &r);
    }
    close(db)
}

/// `--where`, parsed against the table's columns.
fn where_clause(t: &Table, predicate: Option<&str>) -> Result<Option<ndpdb_format::ndp::Predicate>> {
    predicate.map(|p| text::parse_predicate(&t.name, &t.columns, p).context("--where")).transpose()
}

/// One run's answer: a JSON object, or the call, its answer and its costs.
fn print_aggregate(
    a: &AggregateArgs,
    t: &Table,
    func: Aggregate,
    run: u32,
    result: Option<String>,
    profile: &str,
    r: &AggregateResult,
) {
    if a.json {
        let v = serde_json::json!({
            "table": t.name, "func": a.func, "column": a.column, "where": a.predicate, "snapshot": a.snapshot,
            "mode": a.mode, "pes": (a.mode == "ndp").then_some(a.pes), "workers": (a.mode == "host").then_some(a.workers),
            "profile": profile, "clock": a.common.clock.name(), "run": run, "result": result,
            "modelled_s": r.stats.modelled_s, "wall_s": r.stats.wall_s,
            "host_cpu_s": (a.mode == "host").then_some(r.stats.host_cpu_s), "versions_visited": r.partial.visited,
            "completions": r.stats.counters.completions, "late_completions": r.stats.counters.late_completions,
            "counters": r.stats.counters,
        });
        err!("{}", late_warning(&r.stats.counters));
        outln!("{v}");
        return;
    }
    if a.repeat > 1 {
        outln!("run {run} of {}", a.repeat);
    }
    let call = if func == Aggregate::CountStar { "count(*)".to_string() } else { format!("{}({})", a.func, a.column) };
    outln!("{call} = {}", result.as_deref().unwrap_or("NULL"));
    let host_cpu =
        if a.mode == "host" { format!(", {:.6} s host CPU (chain walk)", r.stats.host_cpu_s) } else { String::new() };
    outln!(
        "{} on profile {}, {} clock: {:.6} s modelled, {:.6} s wall{host_cpu}, {} of {} completions late; {} \
         versions visited",
        a.mode,
        profile,
        a.common.clock.name(),
        r.stats.modelled_s,
        r.stats.wall_s,
        r.stats.counters.late_completions,
        r.stats.counters.completions,
        r.partial.visited
    );
    outln!("{}", r.stats.counters.render());
    out!("{}", late_warning(&r.stats.counters));
}

/// The warning for a call whose times measure the emulator (`late.rs`),
/// or nothing.
fn late_warning(c: &ndpdb_device::Counters) -> String {
    ndpdb_bench::late::warnings([("this call".to_string(), Lateness::of(c))])
}

pub(super) fn update_ndp(a: UpdateNdpArgs) -> Result<()> {
    let db = open(&a.common)?;
    let t = db.table(&a.table)?;
    let (col, expr) = text::parse_update(&t.name, &t.columns, &a.set)?;
    let predicate = where_clause(&t, a.predicate.as_deref())?;
    let profile = db.store().device().profile();
    // Without a coherent interconnect nothing can run; the transaction says so first.
    if profile.coherent.is_some() {
        check_pes("--pes", a.pes, profile)?;
    }
    let isolation = match a.isolation.as_str() {
        "read-committed" => Isolation::ReadCommitted,
        "repeatable-read" => Isolation::RepeatableRead,
        "serializable" => Isolation::Serializable,
        other => bail!("--isolation {other}: use read-committed, repeatable-read or serializable"),
    };
    let mut txn = db.begin(isolation);
    let (updated, stats) = txn.ndp_update_stats(&t, col, expr, predicate.as_ref(), a.pes)?;
    txn.commit()?;
    let profile = db.store().device().profile().name.clone();
    if a.json {
        let v = serde_json::json!({
            "table": t.name, "set": a.set, "where": a.predicate, "isolation": a.isolation, "pes": a.pes,
            "profile": profile, "clock": a.common.clock.name(), "tuples_updated": updated,
            "modelled_s": stats.modelled_s, "wall_s": stats.wall_s, "completions": stats.counters.completions,
            "late_completions": stats.counters.late_completions, "counters": stats.counters,
        });
        outln!("{v}");
        err!("{}", late_warning(&stats.counters));
    } else {
        let filter = a.predicate.as_deref().map(|p| format!(" WHERE {p}")).unwrap_or_default();
        outln!("UPDATE {} SET {}{filter}: {updated} tuples updated, committed", t.name, a.set);
        outln!(
            "ndp on profile {profile}, {} clock, {} PEs: {:.6} s modelled, {:.6} s wall (counting and update calls), \
             {} of {} completions late",
            a.common.clock.name(),
            a.pes,
            stats.modelled_s,
            stats.wall_s,
            stats.counters.late_completions,
            stats.counters.completions
        );
        outln!("{}", stats.counters.render());
        out!("{}", late_warning(&stats.counters));
    }
    close(db)
}
