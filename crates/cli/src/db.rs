//! `ndpdb db ...`: a database in a directory, used one command at a time.
//! Each command opens the image, reopens the store from its checkpoint, does
//! its work and writes a new checkpoint (a clean close).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ndpdb_bench::orderline;
use ndpdb_bench::snapshot::{format_scaled, parse_predicate, parse_scaled, scale};
use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::{Aggregate, UpdateExpr};
use ndpdb_format::schema::{ColumnType, format_timestamp};
use ndpdb_storage::{Freshness, Store, StoreOptions};
use ndpdb_txn::{Database, Isolation, ReadMode};

#[derive(Args)]
pub struct Common {
    /// Database directory
    #[arg(long, default_value = "ndpdb-data")]
    db: PathBuf,
    /// Profile name or .toml path (default: the profile the image was created with)
    #[arg(long)]
    profile: Option<String>,
    /// `virtual` or `real`
    #[arg(long, default_value = "virtual")]
    clock: ClockKind,
}

#[derive(Subcommand)]
pub enum DbCmd {
    /// Create a database (a device image with an empty catalog)
    Create {
        #[command(flatten)]
        common: Common,
        /// Image capacity in MiB (default: the profile's capacity, at most 4096)
        #[arg(long)]
        capacity_mib: Option<u64>,
    },
    /// Load TPC-C ORDER_LINE tuples (population rules of TPC-C 4.3.3.1)
    LoadOrderline {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Update rounds: each gives every ORDER_LINE tuple a new ol_amount (one more version)
    Update {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 1)]
        rounds: u32,
        #[arg(long, default_value_t = 2)]
        seed: u64,
    },
    /// Pin the current snapshot (prints its id), list pinned snapshots, or drop one
    Snapshot {
        #[command(flatten)]
        common: Common,
        /// Drop this pinned snapshot instead of pinning a new one
        #[arg(long)]
        drop: Option<u64>,
        /// List pinned snapshots
        #[arg(long)]
        list: bool,
    },
    /// Run an aggregate in a snapshot, on the device (ndp) or the host (host)
    Aggregate(AggregateArgs),
    /// Update-NDP (ccSLT): `UPDATE table SET column = expr WHERE predicate` on
    /// the device's PEs, which lock and write the new versions; the host
    /// installs them and commits. Needs a profile with a coherent
    /// interconnect (u280-nvm, ideal)
    UpdateNdp(UpdateNdpArgs),
    /// Remove versions no pinned snapshot can see
    Gc {
        #[command(flatten)]
        common: Common,
    },
    /// Tables, tuples and pinned snapshots
    Info {
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Args)]
pub struct AggregateArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, default_value = "order_line")]
    table: String,
    /// count-star, count, sum, min, max or avg
    #[arg(long, default_value = "sum")]
    func: String,
    #[arg(long, default_value = "ol_amount")]
    column: String,
    /// A predicate `COLUMN OP VALUE` with OP one of = <> < <= > >=, e.g. "ol_quantity>=5"
    #[arg(long = "where")]
    predicate: Option<String>,
    /// Pinned snapshot id (default: the newest state)
    #[arg(long)]
    snapshot: Option<u64>,
    /// `ndp` (the device's PEs) or `host` (the block stack)
    #[arg(long, default_value = "ndp")]
    mode: String,
    #[arg(long, default_value_t = 16)]
    pes: u32,
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Run the query this many times in one process and report each run:
    /// the first run pays for mapping the image, later runs are warm
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Print one JSON object per run instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct UpdateNdpArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, default_value = "order_line")]
    table: String,
    /// `COLUMN = VALUE`, `COLUMN = COLUMN + VALUE`, `COLUMN = COLUMN - VALUE` or
    /// `COLUMN = COLUMN * INTEGER` on a numeric column, e.g. "ol_amount = ol_amount + 1.50"
    #[arg(long)]
    set: String,
    /// A predicate `COLUMN OP VALUE` with OP one of = <> < <= > >=, e.g. "ol_quantity>=5"
    #[arg(long = "where")]
    predicate: Option<String>,
    #[arg(long, default_value_t = 16)]
    pes: u32,
    /// read-committed, repeatable-read or serializable
    #[arg(long, default_value = "read-committed")]
    isolation: String,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

fn profile(c: &Common) -> Result<Profile> {
    let name = match &c.profile {
        Some(p) => p.clone(),
        None => Device::image_profile(&c.db)?,
    };
    Profile::load(&name).with_context(|| format!("loading profile `{name}` (pass --profile to choose another)"))
}

fn open(c: &Common) -> Result<Database> {
    let dev = Device::open(&c.db, profile(c)?, DeviceOptions::with_clock(c.clock))?;
    let (store, meta, rec) = Store::open_with_report(dev, StoreOptions::default())?;
    report_recovery(&rec);
    Ok(Database::open(store, meta))
}

/// Says on stderr what recovery did, when it did anything.
fn report_recovery(rec: &ndpdb_storage::Recovery) {
    if rec.records > 0 {
        eprintln!(
            "recovery: replayed {} log records ({} commits, {} bytes) in {:.3} s",
            rec.records, rec.commits, rec.log_bytes, rec.wall_s
        );
    }
    if let Some(t) = &rec.truncated {
        eprintln!("recovery: cut off the log's tail: {t}");
    }
    if let Some(n) = &rec.root_note {
        eprintln!("recovery: {n}");
    }
}

/// `ndpdb check DIR`: recovery, then the integrity check; fails when it
/// finds anything wrong.
pub fn check(dir: &std::path::Path, profile_name: Option<&str>, json: bool) -> Result<()> {
    let c = Common { db: dir.to_path_buf(), profile: profile_name.map(str::to_string), clock: ClockKind::Virtual };
    let dev = Device::open(&c.db, profile(&c)?, DeviceOptions::with_clock(c.clock))?;
    let (store, _meta, rec) = Store::open_with_report(dev, StoreOptions::default())?;
    report_recovery(&rec);
    let t0 = std::time::Instant::now();
    let r = store.check()?;
    let wall_s = t0.elapsed().as_secs_f64();
    if json {
        let v = serde_json::json!({
            "db": dir.display().to_string(), "tables": r.tables, "pages": r.pages, "vids": r.vids,
            "versions": r.versions, "integrity_errors": r.error_count(), "errors": r.errors,
            "log_records_replayed": rec.records, "log_truncated": rec.truncated, "root_note": rec.root_note,
            "wall_s": wall_s,
        });
        outln!("{v}");
    } else {
        for e in &r.errors {
            outln!("error: {e}");
        }
        if r.more_errors > 0 {
            outln!("... and {} more errors", r.more_errors);
        }
        outln!(
            "checked {} tables, {} pages, {} VIDs, {} versions in {:.3} s: {} errors",
            r.tables,
            r.pages,
            r.vids,
            r.versions,
            wall_s,
            r.error_count()
        );
    }
    if r.error_count() > 0 {
        bail!("{} integrity errors in {}", r.error_count(), dir.display());
    }
    Ok(())
}

fn close(db: Database) -> Result<()> {
    db.checkpoint().context("writing the checkpoint")
}

fn bar(len: u64, what: &str) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template("{msg:>16} [{bar:30}] {pos}/{len} tuples ({per_sec}, {eta})")
            .expect("template"),
    );
    b.set_message(what.to_string());
    b
}

pub fn run(cmd: DbCmd) -> Result<()> {
    match cmd {
        DbCmd::Create { common, capacity_mib } => {
            let p = Profile::load(common.profile.as_deref().unwrap_or(ndpdb_device::profile::DEFAULT_PROFILE))?;
            let capacity = capacity_mib.map(|m| m.saturating_mul(1 << 20));
            let dev = Device::create(&common.db, p, capacity, DeviceOptions::with_clock(common.clock))?;
            let db = Database::create(Store::new(dev, StoreOptions::default())?)?;
            close(db)?;
            outln!("created database {}", common.db.display());
            Ok(())
        }
        DbCmd::LoadOrderline { common, rows, seed } => {
            let db = open(&common)?;
            let t = match db.table("order_line") {
                Ok(t) => t,
                Err(_) => db.create_table("order_line", orderline::columns())?,
            };
            let b = bar(rows, "load");
            orderline::load(&db, &t, rows, seed, |n| b.set_position(n))?;
            b.finish_and_clear();
            close(db)?;
            outln!("loaded {rows} ORDER_LINE tuples; the table has {}", t.vids());
            Ok(())
        }
        DbCmd::Update { common, rounds, seed } => {
            let db = open(&common)?;
            let t = db.table("order_line").context("load ORDER_LINE first (ndpdb db load-orderline)")?;
            for r in 0..rounds {
                let b = bar(t.vids(), &format!("round {}", r + 1));
                orderline::update_round(&db, &t, seed + u64::from(r), |n| b.set_position(n))?;
                b.finish_and_clear();
            }
            close(db)?;
            outln!("{rounds} update rounds over {} tuples", t.vids());
            Ok(())
        }
        DbCmd::Snapshot { common, drop, list } => {
            let db = open(&common)?;
            if list {
                for (id, xmax) in db.pinned_snapshots() {
                    outln!("snapshot {id}: transactions below {xmax}");
                }
            } else if let Some(id) = drop {
                db.drop_snapshot(id)?;
                outln!("dropped snapshot {id}");
            } else {
                outln!("snapshot {}", db.pin_snapshot()?);
            }
            close(db)
        }
        DbCmd::Aggregate(a) => aggregate(a),
        DbCmd::UpdateNdp(a) => update_ndp(a),
        DbCmd::Gc { common } => {
            let db = open(&common)?;
            let s = db.gc()?;
            close(db)?;
            outln!(
                "removed {} versions: {} chains cut, {} tuples removed, {} pages rewritten, {} pages unmapped \
                 ({} of them compacted: {} tuples moved off them)",
                s.versions_removed,
                s.chains_cut,
                s.tuples_removed,
                s.pages_rewritten,
                s.pages_unmapped,
                s.pages_compacted,
                s.versions_moved
            );
            Ok(())
        }
        DbCmd::Info { common } => {
            let db = open(&common)?;
            outln!("database {} on profile {}", common.db.display(), db.store().device().profile().name);
            for t in db.store().tables() {
                let cols: Vec<String> = t.columns.iter().map(|c| format!("{} {}", c.name, c.ty.sql_name())).collect();
                outln!("table {} ({} tuples): {}", t.name, t.vids(), cols.join(", "));
            }
            for (id, xmax) in db.pinned_snapshots() {
                outln!("pinned snapshot {id}: transactions below {xmax}");
            }
            let info = db.store().device().info();
            let page = u64::from(info.page_bytes);
            let h = db.store().headroom();
            let r = db.store().page_reuse();
            outln!(
                "device: {} pages of {page} B; {} free for writes, {} held back for the next \
                 checkpoint, {} superseded pages waiting for a checkpoint ({} pages reused so far)",
                info.capacity_bytes / page,
                h.writes,
                h.reserve,
                r.superseded + r.awaiting + r.limbo,
                r.reused
            );
            Ok(())
        }
    }
}

fn parse_func(f: &str) -> Result<Aggregate> {
    Ok(match f {
        "count-star" | "count(*)" => Aggregate::CountStar,
        "count" => Aggregate::Count,
        "sum" => Aggregate::Sum,
        "min" => Aggregate::Min,
        "max" => Aggregate::Max,
        "avg" => Aggregate::Avg,
        other => bail!("unknown aggregate `{other}`: use count-star, count, sum, min, max or avg"),
    })
}

fn aggregate(a: AggregateArgs) -> Result<()> {
    let db = open(&a.common)?;
    let t = db.table(&a.table)?;
    let func = parse_func(&a.func)?;
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
    let predicate = a.predicate.as_deref().map(|p| parse_predicate(&t, p).context("--where")).transpose()?;
    let mode = match a.mode.as_str() {
        "ndp" => ReadMode::Ndp { pes: a.pes, freshness: Freshness::Ship },
        "host" => ReadMode::Host { workers: a.workers },
        other => bail!("--mode {other}: use ndp or host"),
    };
    for run in 1..=a.repeat {
        let mut txn = match a.snapshot {
            Some(id) => db.begin_at(id)?,
            None => db.begin(Isolation::RepeatableRead),
        };
        let r = txn.aggregate(&t, func, col as u16, predicate, mode)?;
        txn.commit()?;
        let sc = if matches!(func, Aggregate::CountStar | Aggregate::Count) { 0 } else { scale(&t, col) };
        let result = r.value.map(|v| match i64::try_from(v) {
            Ok(us) if timestamp && func != Aggregate::Count => format_timestamp(us),
            _ => format_scaled(v, sc),
        });
        let profile = db.store().device().profile().name.clone();
        if a.json {
            let v = serde_json::json!({
                "table": t.name, "func": a.func, "column": a.column, "where": a.predicate, "snapshot": a.snapshot,
                "mode": a.mode, "pes": (a.mode == "ndp").then_some(a.pes), "workers": (a.mode == "host").then_some(a.workers),
                "profile": profile, "clock": a.common.clock.name(), "run": run, "result": result,
                "modelled_s": r.stats.modelled_s, "wall_s": r.stats.wall_s, "versions_visited": r.partial.visited,
                "counters": r.stats.counters,
            });
            outln!("{v}");
        } else {
            if a.repeat > 1 {
                outln!("run {run} of {}", a.repeat);
            }
            let call =
                if func == Aggregate::CountStar { "count(*)".to_string() } else { format!("{}({})", a.func, a.column) };
            outln!("{call} = {}", result.as_deref().unwrap_or("NULL"));
            outln!(
                "{} on profile {}, {} clock: {:.6} s modelled, {:.6} s wall, {} versions visited",
                a.mode,
                profile,
                a.common.clock.name(),
                r.stats.modelled_s,
                r.stats.wall_s,
                r.partial.visited
            );
            outln!("{}", r.stats.counters.render());
        }
    }
    close(db)
}

/// `--set` of `ndpdb db update-ndp`: the column's index and the expression,
/// its value in the column's stored units.
fn parse_set(t: &ndpdb_storage::Table, set: &str) -> Result<(usize, UpdateExpr)> {
    const FORMS: &str = "COLUMN = VALUE, COLUMN = COLUMN + VALUE, COLUMN = COLUMN - VALUE or COLUMN = COLUMN * INTEGER";
    let (lhs, rhs) = set.split_once('=').with_context(|| format!("--set {set:?}: expected {FORMS}"))?;
    let name = lhs.trim();
    if name.is_empty() {
        bail!("--set {set:?}: no column before `=`; expected {FORMS}");
    }
    let col = t.column_index(name).with_context(|| format!("--set: table {} has no column {name}", t.name))?;
    let ty = t.columns[col].ty;
    if !matches!(ty, ColumnType::Int32 | ColumnType::Int64 | ColumnType::Decimal { .. }) {
        bail!("--set: column {name} is {}; update-NDP updates integer and decimal columns", ty.sql_name());
    }
    let sc = scale(t, col);
    let value = |text: &str| {
        parse_scaled(text.trim(), sc)
            .with_context(|| format!("--set: `{}` is not a number with at most {sc} decimals", text.trim()))
    };
    let rhs = rhs.trim();
    let Some(rest) = rhs.strip_prefix(name).map(str::trim_start).filter(|r| r.starts_with(['+', '-', '*'])) else {
        return Ok((col, UpdateExpr::Set(value(rhs)?)));
    };
    let (op, operand) = rest.split_at(1);
    let expr = match op {
        "+" => UpdateExpr::Add(value(operand)?),
        "-" => UpdateExpr::Add(value(operand)?.checked_neg().context("--set: the value is out of range")?),
        _ => UpdateExpr::Mul(operand.trim().parse::<i64>().with_context(|| {
            format!(
                "--set: `{}` is not an integer (a decimal column is stored scaled, so only integer factors are exact)",
                operand.trim()
            )
        })?),
    };
    Ok((col, expr))
}

fn update_ndp(a: UpdateNdpArgs) -> Result<()> {
    let db = open(&a.common)?;
    let t = db.table(&a.table)?;
    let (col, expr) = parse_set(&t, &a.set)?;
    let predicate = a.predicate.as_deref().map(|p| parse_predicate(&t, p).context("--where")).transpose()?;
    let isolation = match a.isolation.as_str() {
        "read-committed" => Isolation::ReadCommitted,
        "repeatable-read" => Isolation::RepeatableRead,
        "serializable" => Isolation::Serializable,
        other => bail!("--isolation {other}: use read-committed, repeatable-read or serializable"),
    };
    let mut txn = db.begin(isolation);
    let (updated, stats) = txn.ndp_update_stats(&t, col as u16, expr, predicate, a.pes)?;
    txn.commit()?;
    let profile = db.store().device().profile().name.clone();
    if a.json {
        let v = serde_json::json!({
            "table": t.name, "set": a.set, "where": a.predicate, "isolation": a.isolation, "pes": a.pes,
            "profile": profile, "clock": a.common.clock.name(), "tuples_updated": updated,
            "modelled_s": stats.modelled_s, "wall_s": stats.wall_s, "counters": stats.counters,
        });
        outln!("{v}");
    } else {
        let filter = a.predicate.as_deref().map(|p| format!(" WHERE {p}")).unwrap_or_default();
        outln!("UPDATE {} SET {}{filter}: {updated} tuples updated, committed", t.name, a.set);
        outln!(
            "ndp on profile {profile}, {} clock, {} PEs: {:.6} s modelled, {:.6} s wall (counting and update calls)",
            a.common.clock.name(),
            a.pes,
            stats.modelled_s,
            stats.wall_s
        );
        outln!("{}", stats.counters.render());
    }
    close(db)
}
