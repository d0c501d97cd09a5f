//! The run end to end: the load, the cells, and their rows as a table, JSON
//! lines and plots in the style of the paper's Figs. 5-7.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use ndpdb_workload::ycsb::{self, Mix};
use serde::Serialize;

use super::freshness::fingerprint;
use super::offload::{Offload, StoreSpec};
use super::run::{CellSpec, Measured, RunState, run_cell};
use super::{Config, LOAD_VALUE_BYTES, Method};
use crate::late::{Lateness, warnings};
use crate::output::{Plot, Series, table};
use crate::report::{Report, progress_bar, scratch};

/// One cell's row (one JSON line).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub method: Method,
    pub mix: &'static str,
    pub distribution: &'static str,
    pub value_bytes: usize,
    pub keys: u64,
    pub frames: usize,
    pub host_ops: u64,
    /// On the virtual clock `host_ops_per_s_model`, on the real clock
    /// `host_ops_per_s_wall`; so are the host latencies below.
    pub host_ops_per_s: f64,
    /// OLTP operations per second of their model time: the modelled time of
    /// the commands the thread waited for plus its CPU time (`run.rs`).
    pub host_ops_per_s_model: f64,
    /// OLTP operations per wall second while the lookups ran.
    pub host_ops_per_s_wall: f64,
    /// The model time's two parts, per operation.
    pub host_cpu_us_per_op: f64,
    pub host_io_wait_us_per_op: f64,
    pub host_read_us_p50_wall: f64,
    pub host_update_us_p50_wall: f64,
    pub host_read_us_mean: f64,
    pub host_read_us_p50: f64,
    pub host_read_us_p99: f64,
    pub host_update_us_mean: f64,
    pub host_update_us_p50: f64,
    pub host_update_us_p99: f64,
    pub lookups: u64,
    /// Lookups that could not finish (a node that did not parse: a torn
    /// view of the tree on the medium); not in `lookups`.
    pub lookup_errors: u64,
    pub lookup_us_mean: f64,
    pub lookup_us_p50: f64,
    pub lookup_us_p90: f64,
    pub lookup_us_p99: f64,
    pub lookup_us_p999: f64,
    pub lookup_wall_us_p50: f64,
    /// The lookup latency measured the other way (`run.rs`): the model
    /// measure on the real clock, the device clock's span on the virtual.
    pub lookup_alt_us_p50: f64,
    pub lookup_alt_us_p99: f64,
    pub retries: u64,
    pub freshness_violations: u64,
    pub commands: u64,
    /// Commands the OLTP thread itself submitted, per operation (the same
    /// operation sequence under every method of a mix).
    pub host_commands_per_op: f64,
    /// All commands of the cell but the OLAP thread's, per operation (the
    /// earlier figure: includes the device traffic of nobody's thread, e.g.
    /// none today, and the lookups' reservations).
    pub cell_commands_per_op: f64,
    pub link_bytes_to_host: u64,
    pub link_bytes_to_device: u64,
    pub lookup_host_reads: u64,
    pub lookup_medium_reads: u64,
    pub flush_pages_written: u64,
    pub shadow_bytes_shipped: u64,
    pub shadow_flushes: u64,
    /// Checkpoints the store took during the cell (its log half full).
    pub checkpoints: u64,
    /// Dirty pages the pool evicted and wrote back during the cell.
    pub eviction_write_backs: u64,
    pub lookup_path: &'static str,
    pub profile: String,
    pub clock: &'static str,
    pub completions: u64,
    pub late_completions: u64,
}

/// One cell's lookup-latency CDF (`cdf.jsonl`).
#[derive(Debug, Clone, Serialize)]
pub struct CdfRow {
    pub method: Method,
    pub mix: &'static str,
    pub distribution: &'static str,
    pub value_bytes: usize,
    /// (latency µs on the model clock, cumulative probability)
    pub points: Vec<(f64, f64)>,
    pub profile: String,
    pub clock: &'static str,
}

fn row(cfg: &Config, m: &Measured, profile: &str, lookup_path: &'static str) -> Row {
    let h = &m.host;
    let virtual_clock = cfg.clock == ndpdb_device::ClockKind::Virtual;
    let (rw, uw) = (h.reads.summary(), h.updates.summary());
    let (r, u) = if virtual_clock { (h.reads_model.summary(), h.updates_model.summary()) } else { (rw, uw) };
    let l = m.olap.latency.summary();
    let alt = if virtual_clock { m.olap.latency_span.summary() } else { m.olap.latency_model.summary() };
    let commands: u64 = m.counters.commands.values().sum();
    let cell_commands = commands.saturating_sub(m.olap.commands);
    let per_op = |x: f64| if h.ops > 0 { x / h.ops as f64 } else { 0.0 };
    let per_s = |ops: u64, s: f64| if s > 0.0 { ops as f64 / s } else { 0.0 };
    let (model, wall) = (per_s(h.ops, h.model_ns as f64 / 1e9), per_s(h.ops, h.wall_s));
    Row {
        method: m.cell.method,
        mix: m.cell.mix.name(),
        distribution: m.cell.distribution.name(),
        value_bytes: m.cell.value_bytes,
        keys: cfg.keys,
        frames: cfg.pool_frames(),
        host_ops: h.ops,
        host_ops_per_s: if virtual_clock { model } else { wall },
        host_ops_per_s_model: model,
        host_ops_per_s_wall: wall,
        host_cpu_us_per_op: per_op(h.cpu_ns as f64 / 1e3),
        host_io_wait_us_per_op: per_op(h.waited_ns as f64 / 1e3),
        host_read_us_p50_wall: rw.p50_us,
        host_update_us_p50_wall: uw.p50_us,
        host_read_us_mean: r.mean_us,
        host_read_us_p50: r.p50_us,
        host_read_us_p99: r.p99_us,
        host_update_us_mean: u.mean_us,
        host_update_us_p50: u.p50_us,
        host_update_us_p99: u.p99_us,
        lookups: m.olap.done,
        lookup_errors: m.olap.errors,
        lookup_us_mean: l.mean_us,
        lookup_us_p50: l.p50_us,
        lookup_us_p90: l.p90_us,
        lookup_us_p99: l.p99_us,
        lookup_us_p999: l.p999_us,
        lookup_wall_us_p50: m.olap.latency_wall.summary().p50_us,
        lookup_alt_us_p50: alt.p50_us,
        lookup_alt_us_p99: alt.p99_us,
        retries: m.olap.retries,
        freshness_violations: m.violations,
        commands,
        host_commands_per_op: per_op(h.commands as f64),
        cell_commands_per_op: per_op(cell_commands as f64),
        link_bytes_to_host: m.counters.link_bytes_to_host,
        link_bytes_to_device: m.counters.link_bytes_to_device,
        lookup_host_reads: m.olap.host_reads,
        lookup_medium_reads: m.olap.medium_reads,
        flush_pages_written: m.olap.flush_pages_written,
        shadow_bytes_shipped: m.olap.shadow_bytes_shipped,
        shadow_flushes: m.shadow_flushes,
        checkpoints: m.checkpoints,
        eviction_write_backs: m.eviction_write_backs,
        lookup_path,
        profile: profile.to_string(),
        clock: cfg.clock.name(),
        completions: m.counters.completions,
        late_completions: m.counters.late_completions,
    }
}

/// Pairs per `put_many` batch of the load: one log write per batch, rather
/// than one per pair.
const LOAD_BATCH: usize = 1024;

/// Loads `cfg.keys` pairs in key order, in batches (`KvStore::put_many`),
/// then a checkpoint; the fingerprints of their values, by key number.
///
/// Key order: each put goes to the rightmost leaf, which stays in the pool,
/// so the load evicts each page once, full (the store's append splits leave
/// nodes 70 % full, about what random inserts leave). In YCSB's order
/// (hashed keys) nearly every put of a large load would read one page and
/// write back another.
fn load(off: &dyn Offload, cfg: &Config) -> Result<Vec<u64>> {
    let bar = progress_bar(cfg.keys, "    load [{bar:30}] {pos}/{len} pairs, {rate}/s, eta {eta}");
    let mut order: Vec<([u8; ycsb::KEY_BYTES], u64)> = (0..cfg.keys).map(|i| (ycsb::key(i), i)).collect();
    order.sort_unstable();
    let mut base = vec![0; cfg.keys as usize];
    let mut done = 0;
    for chunk in order.chunks(LOAD_BATCH) {
        let values: Vec<Vec<u8>> = chunk.iter().map(|&(_, i)| ycsb::value(i, 0, LOAD_VALUE_BYTES)).collect();
        off.store().put_many(chunk.iter().zip(&values).map(|((k, _), v)| (&k[..], &v[..])))?;
        for (&(_, i), v) in chunk.iter().zip(&values) {
            base[i as usize] = fingerprint(v);
        }
        done += chunk.len() as u64;
        bar.set_position(done);
    }
    off.store().checkpoint()?;
    bar.finish_and_clear();
    Ok(base)
}

/// The whole run: returns the rows, the CDFs and the notes for the table.
pub fn run(cfg: &Config, dir: &Path) -> Result<(Vec<Row>, Vec<CdfRow>, Vec<String>)> {
    cfg.validate()?;
    let (profile, profile_name) = cfg.profile_16k();
    let spec = StoreSpec { profile, clock: cfg.clock, frames: cfg.pool_frames(), file_pages: cfg.file_pages() };
    let off = spec.create(dir)?;
    let mut notes = Vec::new();
    let mut state = RunState { base: load(&off, cfg)?, seq: 0 };
    let pages = off.store().pool().pages();
    if cfg.frames.is_some_and(|f| f as u64 >= pages) {
        notes.push(format!(
            "the pool ({} frames) holds all {pages} pages of the store: nothing is evicted",
            cfg.pool_frames()
        ));
    }
    let cells = cfg.cells();
    let bar = progress_bar(cells.len() as u64 * cfg.lookups, "{msg:>40} [{bar:30}] {pos}/{len} lookups, {rate}/s");
    let (mut rows, mut cdfs) = (Vec::new(), Vec::new());
    let t0 = Instant::now();
    for (i, &cell) in cells.iter().enumerate() {
        bar.set_message(format!(
            "{} {} {} {} B",
            cell.method.name(),
            cell.mix.name(),
            cell.distribution.name(),
            cell.value_bytes
        ));
        let done = i as u64 * cfg.lookups;
        let progress = |n: u64| bar.set_position(done + n);
        let spec = CellSpec {
            cell,
            keys: cfg.keys,
            lookups: cfg.lookups,
            warmup_ops: cfg.warmup_ops,
            // Every method of a (value size, distribution, mix) runs the
            // same operation and lookup-key sequences.
            seed: cfg.seed + (i / cfg.methods.len()) as u64,
            progress: &progress,
        };
        let m = run_cell(&off, &spec, &mut state)?;
        // Each cell starts from a medium that holds every committed change.
        off.store().checkpoint()?;
        rows.push(row(cfg, &m, &profile_name, off.lookup_path()));
        let (mix, distribution) = (cell.mix.name(), cell.distribution.name());
        if let Some(e) = &m.olap.first_error {
            let (method, v) = (cell.method.name(), cell.value_bytes);
            notes
                .push(format!("{method} {mix} {distribution} {v} B: {} lookups failed; the first: {e}", m.olap.errors));
        }
        let points = m.olap.latency.cdf(50);
        let (profile, clock) = (profile_name.clone(), cfg.clock.name());
        cdfs.push(CdfRow {
            method: cell.method,
            mix,
            distribution,
            value_bytes: cell.value_bytes,
            points,
            profile,
            clock,
        });
    }
    bar.finish_and_clear();
    notes.push(format!(
        "{} pairs, {} pages, {} frames{}; {} cells in {:.1} s; lookups: {}",
        cfg.keys,
        pages,
        cfg.pool_frames(),
        if cfg.frames.is_none() { " (the whole file: no page is evicted, as in the paper)" } else { "" },
        cells.len(),
        t0.elapsed().as_secs_f64(),
        off.lookup_path()
    ));
    Ok((rows, cdfs, notes))
}

/// The table: one line per cell, each time beside its profile, clock and
/// late completions; the notes and lateness warnings under it.
pub fn render(rows: &[Row], notes: &[String]) -> String {
    let headers = [
        "method",
        "mix",
        "dist",
        "value B",
        "host ops/s",
        "read p50 µs",
        "upd p50 µs",
        "lookup p50 µs",
        "p99 µs",
        "lookups",
        "errors",
        "retries",
        "violations",
        "cmds/op",
        "MB to host",
        "MB to dev",
        "profile",
        "clock",
        "late",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.method.name().to_string(),
                r.mix.to_string(),
                r.distribution.to_string(),
                r.value_bytes.to_string(),
                format!("{:.0}", r.host_ops_per_s),
                format!("{:.1}", r.host_read_us_p50),
                format!("{:.1}", r.host_update_us_p50),
                format!("{:.1}", r.lookup_us_p50),
                format!("{:.1}", r.lookup_us_p99),
                r.lookups.to_string(),
                r.lookup_errors.to_string(),
                r.retries.to_string(),
                r.freshness_violations.to_string(),
                format!("{:.3}", r.host_commands_per_op),
                format!("{:.1}", r.link_bytes_to_host as f64 / 1e6),
                format!("{:.1}", r.link_bytes_to_device as f64 / 1e6),
                r.profile.clone(),
                r.clock.to_string(),
                Lateness { late: r.late_completions, completions: r.completions }.cell(),
            ]
        })
        .collect();
    let mut out = String::from(
        "host (ops/s, p50s): on the virtual clock the OLTP thread's model time (the modelled time of the commands \
         it waited for plus its CPU time), on the real clock its wall time; cmds/op: the OLTP thread's own; \
         lookup: dispatch (before Flush's write-back or Shadow's serialisation) to answer, on the virtual clock \
         the modelled time of the lookup thread's own commands plus its preparation's CPU time\n",
    );
    out.push_str(&table(&headers, &cells));
    for n in notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push_str(&warnings(rows.iter().map(|r| {
        (
            format!("{} {} {} {} B", r.method.name(), r.mix, r.distribution, r.value_bytes),
            Lateness { late: r.late_completions, completions: r.completions },
        )
    })));
    out
}

impl Method {
    fn label(self) -> &'static str {
        match self {
            Method::Baseline => "Baseline",
            Method::Flush => "Flush",
            Method::Shadow => "Shadow",
            Method::Cbm => "CBM",
        }
    }
}

/// Figs. 5-7: per distribution and value size, host throughput and mean
/// latencies over the mixes, and the lookup latency CDFs.
pub fn plots(dir: &Path, rows: &[Row], cdfs: &[CdfRow]) -> Result<Vec<PathBuf>> {
    let mut groups: Vec<(&str, usize)> = rows.iter().map(|r| (r.distribution, r.value_bytes)).collect();
    groups.sort();
    groups.dedup();
    let mix_x = |mix: &str| Mix::ALL.iter().position(|m| m.name() == mix).unwrap_or(0) as f64;
    let x_label = "mix: 0 read-only, 1 read-heavy (70/30), 2 update-heavy (30/70), 3 update-only";
    let mut paths = Vec::new();
    for (dist, vb) in groups {
        let in_group = |r: &&Row| r.distribution == dist && r.value_bytes == vb;
        let mut methods: Vec<Method> = rows.iter().filter(in_group).map(|r| r.method).collect();
        methods.sort();
        methods.dedup();
        let series = |f: &dyn Fn(&Row) -> Option<f64>, suffix: &str| -> Vec<Series> {
            methods
                .iter()
                .map(|&m| Series {
                    name: format!("{}{suffix}", m.label()),
                    points: rows
                        .iter()
                        .filter(in_group)
                        .filter(|r| r.method == m)
                        .filter_map(|r| f(r).map(|y| (mix_x(r.mix), y)))
                        .collect(),
                    reference: false,
                })
                .filter(|s| !s.points.is_empty())
                .collect()
        };
        let title5 = format!("Host throughput, {dist}, {vb} B updates (Fig. 5)");
        let thr = series(&|r| Some(r.host_ops_per_s / 1e3), "");
        let fig5 = Plot { title: &title5, x_label, y_label: "host kops/s", series: thr };
        paths.extend(fig5.write(dir, &format!("fig5-throughput-{dist}-{vb}"))?);
        let title6 = format!("Host operation latency, {dist}, {vb} B updates (Fig. 6)");
        let mut lat = series(&|r| (r.host_read_us_mean > 0.0).then_some(r.host_read_us_mean), " read");
        lat.extend(series(&|r| (r.host_update_us_mean > 0.0).then_some(r.host_update_us_mean), " update"));
        let fig6 = Plot { title: &title6, x_label, y_label: "mean latency µs", series: lat };
        paths.extend(fig6.write(dir, &format!("fig6-latency-{dist}-{vb}"))?);
        let cdf: Vec<Series> = cdfs
            .iter()
            .filter(|c| c.distribution == dist && c.value_bytes == vb && !c.points.is_empty())
            .map(|c| Series {
                name: format!("{} {}", c.method.label(), c.mix),
                // To p99: the tail would squeeze the rest (cdf.jsonl has it).
                points: c.points.iter().copied().filter(|p| p.1 <= 0.99).collect(),
                reference: false,
            })
            .collect();
        let title7 = format!("In-storage lookup latency CDF, {dist}, {vb} B updates (Fig. 7)");
        let fig7 = Plot {
            title: &title7,
            x_label: "lookup latency µs (model clock)",
            y_label: "cumulative probability",
            series: cdf,
        };
        paths.extend(fig7.write(dir, &format!("fig7-lookup-cdf-{dist}-{vb}"))?);
    }
    Ok(paths)
}

/// Runs on a scratch image and reports: table (and JSON lines), results
/// directory with `cbm.jsonl`, `cdf.jsonl`, `table.txt` and the plots.
pub fn run_and_report(cfg: &Config, report: &Report) -> Result<PathBuf> {
    let scratch = scratch()?;
    let (rows, cdfs, notes) = run(cfg, &scratch.path().join("db"))?;
    let text = render(&rows, &notes);
    report.print(&rows, &text)?;
    let results = report.results("cbm")?;
    results.jsonl("cbm.jsonl", &rows)?;
    results.jsonl("cdf.jsonl", &cdfs)?;
    results.text("table.txt", &text)?;
    let plots = results.plot(|d| plots(d, &rows, &cdfs));
    Ok(results.announce(&plots))
}
