//! Reading a table in a snapshot, two ways.
//!
//! - **NDP** ([`Store::ndp_aggregate`], [`Store::ndp_rows`]): the host ships
//!   the call block, the delta-buffer pages and the map deltas, and the
//!   device's PEs compute the snapshot in place (`ndp.snapshot`). Only the
//!   result crosses the link to the host.
//! - **Host-only block stack** ([`Store::host_aggregate`], [`Store::host_rows`]):
//!   as a conventional DBMS on a dumb SSD, the host reads every heap page of
//!   the table over the link (with `workers` threads, each with its own queue
//!   pair), then walks the version chains itself with the same workers.
//!
//! On the virtual clock a scan's modelled time is exact: the same scan of
//! the same pages takes the same modelled time in every run. Host work costs
//! no modelled time there, so what the model sees of the block stack's
//! workers is only how many page reads they keep outstanding; one thread
//! submits them all, in a fixed order, with that many outstanding, and takes
//! their completions in submission order. (Several threads, or taking
//! completions as the device finishes them, would reserve the device's
//! timeline in an order that changes from run to run.) The chain walk's host
//! CPU time is measured and reported beside the modelled time
//! ([`ScanStats::host_cpu_s`]), not added to it. On the real clock the
//! workers read in parallel, and the walk takes real time, so the modelled
//! time (the wall clock) includes it.
//!
//! Both apply `Snapshot::visible` from `ndpdb-format` and produce the same
//! `Partial`, so their results are directly comparable.

use std::collections::HashMap;
use std::time::Instant;

use ndpdb_device::{ClockKind, Command, Counters, QueuePair, RangeId, Reply};
use ndpdb_format::ndp::{
    Aggregate, MAX_AGGREGATES, MAX_OPERAND_BYTES, MAX_TERMS, NdpCall, Operand, Operation, PARTIAL_BYTES, Partial,
    Predicate, RANGE_CALL, RANGE_DELTA, RANGE_LAYOUT, RANGE_OUTPUT, RANGE_PAGES, RowsWriter, Snapshot, decode_rows,
};
use ndpdb_format::page::{self, RecordId};
use ndpdb_format::record::{HEADER_BYTES, VersionHeader};
use ndpdb_format::schema::{ColumnType, Value};

use crate::delta_frames::DeltaFrame;
use crate::error::StoreError;
use crate::page_read::{Order, PageList, READ_AHEAD};
use crate::store::Store;
use crate::table::{CHAIN_MAX, Table};

type Result<T> = std::result::Result<T, StoreError>;

/// How the device gets the shared state an NDP call needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Ship the delta buffer and map deltas with the call (neoDBMS).
    Ship,
    /// Write them to the device first; the call carries only the snapshot.
    Flush,
    /// Ship the map deltas only: the device reads the delta pages it
    /// reaches from host memory, through its mirror of the store's delta
    /// frames (the cooperative buffer manager, `delta_frames.rs`,
    /// `docs/cbm.md`).
    Cbm,
}

impl Freshness {
    /// The name `ndpdb bench snapshot --freshness` takes and reports.
    pub fn name(self) -> &'static str {
        match self {
            Freshness::Ship => "ship",
            Freshness::Flush => "flush",
            Freshness::Cbm => "cbm",
        }
    }

    /// The freshness called `name` ([`Freshness::name`]).
    pub fn from_name(name: &str) -> Option<Freshness> {
        [Freshness::Ship, Freshness::Flush, Freshness::Cbm].into_iter().find(|f| f.name() == name)
    }
}

/// What a scan cost, on the device's counters and clocks.
#[derive(Debug, Clone, Default)]
pub struct ScanStats {
    pub counters: Counters,
    pub modelled_s: f64,
    pub wall_s: f64,
    /// Versions visited while walking chains (0 for NDP rows calls, whose
    /// output has no room for it).
    pub visited: u64,
    /// The host-only block stack's chain walk: host CPU time of the slowest
    /// worker, measured (0 for NDP). Not part of `modelled_s` on the virtual
    /// clock (module docs); on the real clock `modelled_s` includes it.
    pub host_cpu_s: f64,
    /// The call's span on the model clock, `[start, end]` picoseconds:
    /// calls that ran at the same time on several threads overlap here, so
    /// a caller that adds up such calls takes the union of their spans.
    pub span_ps: (u64, u64),
}

/// What an `ndp.update` call carries besides an NDP call's own.
pub(crate) struct UpdateArgs {
    /// The program's parameters.
    pub params: Vec<u64>,
    /// Range 4: the pages for new versions and each PE's run of them.
    pub pages: Vec<u8>,
    /// VIDs the PEs split (those of the statement's counting call).
    pub vids: u64,
}

/// What every NDP call over a table names: the table, the snapshot, the
/// rows it reads (the predicate), how many PEs run it, and how the device
/// gets the shared state.
#[derive(Clone, Copy)]
pub struct NdpScan<'a> {
    pub table: &'a Table,
    pub snapshot: &'a Snapshot,
    /// A conjunction of terms (`Predicate`); None: every row.
    pub predicate: Option<&'a Predicate>,
    pub pes: u32,
    pub freshness: Freshness,
}

/// What one NDP call sends to the device and runs there: the call block
/// (range 0), the table's layout descriptor (range 1, which lives as long
/// as the table), the delta-buffer pages (range 2), an output range of
/// `out_bytes` (range 3) and, for `ndp.update`, its pages (range 4).
struct DeviceCall {
    slot: u32,
    pes: u32,
    params: Vec<u8>,
    block: Vec<u8>,
    layout: RangeId,
    delta: Vec<u8>,
    out_bytes: u64,
    extra: Option<Vec<u8>>,
    /// A rows call's share size: the host reads each PE's share header,
    /// then only the bytes it used, so the link carries the rows, not the
    /// room reserved for them (range 3 is sized for every VID qualifying).
    rows_share: Option<u64>,
}

/// The memory ranges a [`DeviceCall`] created.
#[derive(Clone, Copy)]
struct CallRanges {
    call: RangeId,
    delta: RangeId,
    out: RangeId,
    extra: Option<RangeId>,
}

/// A device memory range of `bytes` (at least 8).
fn create_range(qp: &mut QueuePair, bytes: u64) -> Result<RangeId> {
    match qp.call(Command::MemoryRangeCreate { bytes: bytes.max(8) })? {
        Reply::Range(r) => Ok(r),
        other => Err(StoreError::Corrupt(format!("device replied {other:?} to memory_range_create"))),
    }
}

impl DeviceCall {
    /// Creates the call's ranges, runs it, and deletes the ranges whether
    /// or not it succeeded; returns the output range's bytes.
    fn run(self, qp: &mut QueuePair) -> Result<Vec<u8>> {
        let ranges = CallRanges {
            call: create_range(qp, self.block.len() as u64)?,
            delta: create_range(qp, self.delta.len() as u64)?,
            out: create_range(qp, self.out_bytes)?,
            extra: match &self.extra {
                Some(pages) => Some(create_range(qp, pages.len() as u64)?),
                None => None,
            },
        };
        let result = self.execute(qp, ranges);
        for r in [ranges.call, ranges.delta, ranges.out].into_iter().chain(ranges.extra) {
            qp.call(Command::MemoryRangeDelete { range: r })?;
        }
        result
    }

    /// Writes the inputs to `r`, executes the program and reads the output.
    fn execute(self, qp: &mut QueuePair, r: CallRanges) -> Result<Vec<u8>> {
        qp.call(Command::MemoryWrite { range: r.call, offset: 0, data: self.block })?;
        if !self.delta.is_empty() {
            qp.call(Command::MemoryWrite { range: r.delta, offset: 0, data: self.delta })?;
        }
        // In the order `format::ndp` numbers the ranges.
        const _: () = assert!(RANGE_CALL == 0 && RANGE_LAYOUT == 1 && RANGE_DELTA == 2 && RANGE_OUTPUT == 3);
        const _: () = assert!(RANGE_PAGES == 4);
        let mut ranges = vec![r.call, self.layout, r.delta, r.out];
        if let (Some(range), Some(pages)) = (r.extra, self.extra) {
            qp.call(Command::MemoryWrite { range, offset: 0, data: pages })?;
            ranges.push(range);
        }
        qp.call(Command::Execute { slot: self.slot, pes: self.pes, params: self.params, ranges })?;
        let Some(share) = self.rows_share else {
            return Ok(qp.call(Command::MemoryRead { range: r.out, offset: 0, len: self.out_bytes })?.into_data());
        };
        // Each share's used bytes (`bytes_used`, checked against the share
        // by `decode_rows`); the rest stays zero.
        if share < 16 || share * u64::from(self.pes) > self.out_bytes {
            return Err(StoreError::Corrupt(format!("a rows call's shares of {share} bytes do not fit its output")));
        }
        let mut out = vec![0u8; self.out_bytes as usize];
        for pe in 0..u64::from(self.pes) {
            let at = pe * share;
            let head = qp.call(Command::MemoryRead { range: r.out, offset: at, len: 16 })?.into_data();
            let used = u64::from_le_bytes(head[0..8].try_into().expect("16 bytes read")).min(share).max(16);
            out[at as usize..at as usize + 16].copy_from_slice(&head);
            let rest = qp.call(Command::MemoryRead { range: r.out, offset: at + 16, len: used - 16 })?.into_data();
            out[at as usize + 16..(at + used) as usize].copy_from_slice(&rest);
        }
        Ok(out)
    }
}

#[derive(Debug, Clone)]
pub struct AggregateResult {
    pub partial: Partial,
    /// The SQL value (None = NULL); AVG is the quotient rounded toward zero.
    pub value: Option<i128>,
    pub stats: ScanStats,
}

#[derive(Debug, Clone)]
pub struct RowsResult {
    /// (VID, projected values), ordered by VID.
    pub rows: Vec<(u64, Vec<Value>)>,
    pub stats: ScanStats,
}

pub(crate) struct Measure {
    before: Counters,
    t0_ps: u64,
    wall: Instant,
}

impl Store {
    pub(crate) fn measure(&self) -> Measure {
        Measure { before: self.device().counters(), t0_ps: self.device().now_ps(), wall: Instant::now() }
    }

    pub(crate) fn stats(&self, m: Measure, visited: u64) -> ScanStats {
        let now = self.device().now_ps();
        ScanStats {
            counters: self.device().counters().since(&m.before),
            modelled_s: (now - m.t0_ps) as f64 / 1e12,
            wall_s: m.wall.elapsed().as_secs_f64(),
            visited,
            host_cpu_s: 0.0,
            span_ps: (m.t0_ps, now),
        }
    }

    /// Checks an operation's and a predicate's columns against the table
    /// before anything is read (the device's program checks the same).
    pub(crate) fn check_columns(&self, table: &Table, op: &Operation, predicate: Option<&Predicate>) -> Result<()> {
        let n = table.columns.len();
        let column = |c: u16, what: &str| {
            table
                .columns
                .get(usize::from(c))
                .ok_or_else(|| StoreError::InvalidInput(format!("{what}: column {c} of {n}")))
        };
        let numeric = |c: u16, what: &str| -> Result<()> {
            let col = column(c, what)?;
            if col.ty == ColumnType::Float64 {
                return Err(StoreError::InvalidInput(format!(
                    "{what}: column {} is double precision; the store compares and sums integer columns \
                     only (a float's bit pattern does not order as its value): evaluate it in the executor",
                    col.name
                )));
            }
            if !col.ty.is_numeric() {
                return Err(StoreError::InvalidInput(format!(
                    "{what}: column {} is {}, not numeric",
                    col.name,
                    col.ty.sql_name()
                )));
            }
            Ok(())
        };
        match op {
            Operation::Aggregate { aggregates } => {
                if aggregates.is_empty() || aggregates.len() > MAX_AGGREGATES {
                    return Err(StoreError::InvalidInput(format!(
                        "{} aggregates: one call computes 1 to {MAX_AGGREGATES}",
                        aggregates.len()
                    )));
                }
                for &(f, c) in aggregates {
                    if f != Aggregate::CountStar {
                        numeric(c, "aggregate")?;
                    }
                }
            }
            Operation::Rows { projection } => {
                if let Some(c) = projection.iter().find(|&&c| usize::from(c) >= n) {
                    return Err(StoreError::InvalidInput(format!("projection: column {c} of {n}")));
                }
            }
            Operation::Update { column, .. } => numeric(*column, "update")?,
        }
        let terms = predicate.map_or(&[][..], |p| &p.terms);
        if terms.len() > MAX_TERMS {
            return Err(StoreError::InvalidInput(format!(
                "a predicate of {} terms: the device takes at most {MAX_TERMS}; evaluate the rest in the executor",
                terms.len()
            )));
        }
        for t in terms {
            match &t.value {
                Operand::Int(_) => numeric(t.column, "predicate")?,
                Operand::Bytes(b) => {
                    let col = column(t.column, "predicate")?;
                    if !matches!(col.ty, ColumnType::Text(_) | ColumnType::Varchar(_)) {
                        return Err(StoreError::InvalidInput(format!(
                            "predicate: column {} is {}; a text constant needs a char, varchar or text column",
                            col.name,
                            col.ty.sql_name()
                        )));
                    }
                    if b.len() > MAX_OPERAND_BYTES {
                        return Err(StoreError::InvalidInput(format!(
                            "predicate: a text constant of {} bytes (at most {MAX_OPERAND_BYTES})",
                            b.len()
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs an aggregate on the device's PEs.
    pub fn ndp_aggregate(&self, scan: &NdpScan<'_>, func: Aggregate, column: u16) -> Result<AggregateResult> {
        let mut results = self.ndp_aggregates(scan, &[(func, column)])?;
        Ok(results.pop().expect("one aggregate, one result"))
    }

    /// Runs several aggregates of the same rows in one call on the device's
    /// PEs: one result per aggregate, in order. The walk's counters
    /// (`visited`, `extra_bytes`, `dram_visits`) and the stats are the
    /// call's, repeated in each result.
    pub fn ndp_aggregates(&self, scan: &NdpScan<'_>, aggregates: &[(Aggregate, u16)]) -> Result<Vec<AggregateResult>> {
        let m = self.measure();
        let (partials, _) = self.aggregate_partials(scan, aggregates)?;
        let mut merged = vec![Partial::default(); aggregates.len()];
        for pe in partials.chunks(aggregates.len()) {
            for (into, p) in merged.iter_mut().zip(pe) {
                into.merge(p);
            }
        }
        let (visited, extra_bytes, dram_visits) = (merged[0].visited, merged[0].extra_bytes, merged[0].dram_visits);
        let stats = self.stats(m, visited);
        Ok(merged
            .into_iter()
            .zip(aggregates)
            .map(|(p, &(func, _))| {
                let partial = Partial { visited, extra_bytes, dram_visits, ..p };
                AggregateResult { value: partial.result(func), partial, stats: stats.clone() }
            })
            .collect())
    }

    /// An aggregate call's partial results, `aggregates.len()` per PE in PE
    /// order, and the number of VIDs the call split among the PEs (PE `p`
    /// took `[n·p/P, n·(p+1)/P)`).
    pub(crate) fn aggregate_partials(
        &self,
        scan: &NdpScan<'_>,
        aggregates: &[(Aggregate, u16)],
    ) -> Result<(Vec<Partial>, u64)> {
        let op = Operation::Aggregate { aggregates: aggregates.to_vec() };
        let n = scan.pes as usize * aggregates.len();
        let out_bytes = (n * PARTIAL_BYTES) as u64;
        let (out, vids) = self.ndp_call(scan, op, out_bytes, None)?;
        let partials = (0..n)
            .map(|i| {
                Partial::decode(&out[i * PARTIAL_BYTES..]).map_err(|e| {
                    StoreError::Corrupt(format!("PE {}'s result {}: {e}", i / aggregates.len(), i % aggregates.len()))
                })
            })
            .collect::<Result<_>>()?;
        Ok((partials, vids))
    }

    /// Returns the visible rows, projected, computed on the device's PEs.
    pub fn ndp_rows(&self, scan: &NdpScan<'_>, projection: &[u16]) -> Result<RowsResult> {
        let (table, pes) = (scan.table, scan.pes);
        let op = Operation::Rows { projection: projection.to_vec() };
        let row_max: u64 = 8 + projection
            .iter()
            .map(|&c| table.columns.get(usize::from(c)).map_or(9, |c| RowsWriter::value_bytes_max(c.ty)))
            .sum::<u64>();
        let share = RowsWriter::share_bytes(table.vids() / u64::from(pes.max(1)) + 1, row_max);
        let m = self.measure();
        let (out, _) = self.ndp_call(scan, op, share * u64::from(pes), None)?;
        let mut rows = Vec::new();
        for pe in 0..pes as usize {
            let part = &out[pe * share as usize..(pe + 1) * share as usize];
            decode_rows(part, projection.len(), &mut rows)
                .map_err(|e| StoreError::Corrupt(format!("PE {pe}'s rows: {e}")))?;
        }
        Ok(RowsResult { rows, stats: self.stats(m, 0) })
    }

    /// An NDP call of `op` with an output range of `out_bytes`; `update`
    /// carries `ndp.update`'s parameters and its range 4, and the VIDs it
    /// covers. Returns the output range and the number of VIDs the PEs
    /// split: the table's length, or the update's `vids` (at most the
    /// length; tuples created after an update's counting call are not in
    /// its snapshot).
    pub(crate) fn ndp_call(
        &self,
        scan: &NdpScan<'_>,
        op: Operation,
        out_bytes: u64,
        update: Option<UpdateArgs>,
    ) -> Result<(Vec<u8>, u64)> {
        self.check_columns(scan.table, &op, scan.predicate)?;
        if scan.freshness == Freshness::Flush {
            self.flush(scan.table)?;
        }
        let cbm = scan.freshness == Freshness::Cbm;
        let frames = if cbm { Some(self.cbm_ready()?) } else { None };
        // The call carries physical page numbers until it ends.
        let _reading = self.page_reader();
        // Frames of delta pages written from here on wait for it (CBM).
        let _cbm_call = frames.map(|f| f.begin_call());
        let (call, delta) = self.call_block(scan, op, update.as_ref().map(|u| u.vids))?;
        if cbm {
            // The delta-page records of the pages the call reaches (usually
            // durable already: commits forced them).
            self.wal.flush_to(self.wal.end(), &self.wal_qp)?;
        }
        let vids = call.vids;
        // The mirror flag: ndp.snapshot's parameter 0, ndp.update's 2.
        let (slot, params, extra) = match update {
            Some(u) => {
                let mut params = u.params;
                params.extend(cbm.then_some(1));
                (self.ndp.update_slot, ndpdb_device::params(&params), Some(u.pages))
            }
            None => (self.ndp.snapshot_slot, if cbm { ndpdb_device::params(&[1]) } else { vec![] }, None),
        };
        let (block, layout, pes) = (call.encode(), scan.table.layout_range, scan.pes);
        let rows_share = matches!(call.op, Operation::Rows { .. }).then(|| out_bytes / u64::from(pes.max(1)) / 8 * 8);
        let device_call = DeviceCall { slot, pes, params, block, layout, delta, out_bytes, extra, rows_share };
        match device_call.run(&mut self.qp.lock()) {
            Ok(out) => Ok((out, vids)),
            Err(e) if cbm => Err(self.cbm_failure(e)),
            Err(e) => Err(e),
        }
    }

    /// The call block of an NDP call over the table's state and the maps at
    /// one moment, and the delta-buffer pages it names (range 2). A CBM
    /// call names none: it first writes the delta buffer if the device's
    /// mirror cannot find one of its pages (`cbm.rs`).
    fn call_block(&self, scan: &NdpScan<'_>, op: Operation, update_vids: Option<u64>) -> Result<(NdpCall, Vec<u8>)> {
        let mut s = scan.table.state.lock();
        let cbm = scan.freshness == Freshness::Cbm;
        if cbm {
            let lsn = self.mirror_lsn();
            if s.delta_frames.iter().any(|&f| !DeltaFrame::visible(f, lsn)) {
                self.write_delta(scan.table, &mut s, crate::alloc::AllocClass::Buffered)?;
            }
        }
        let m = self.maps.lock();
        let shipped = if cbm { &[][..] } else { &s.delta[..] };
        let mut delta_bytes = Vec::with_capacity(shipped.len() * self.page_bytes);
        for p in shipped {
            delta_bytes.extend_from_slice(p.bytes());
        }
        let call = NdpCall {
            op,
            predicate: scan.predicate.filter(|p| !p.terms.is_empty()).cloned(),
            snapshot: scan.snapshot.clone(),
            vids: update_vids.map_or(s.heads.len() as u64, |v| v.min(s.heads.len() as u64)),
            l2p_pages: m.l2p_pages.clone(),
            l2p_delta: m.l2p_dirty.iter().map(|&l| (l, m.l2p[l as usize])).collect(),
            vid_pages: s.vid_pages.clone(),
            vid_delta: s.vid_dirty.iter().map(|&v| (v, s.heads[v as usize].rid.0)).collect(),
            delta_pages: shipped.iter().map(|p| p.lpn()).collect(),
        };
        Ok((call, delta_bytes))
    }

    /// Runs an aggregate on the host after reading every page over the link.
    pub fn host_aggregate(
        &self,
        table: &Table,
        snapshot: &Snapshot,
        func: Aggregate,
        column: u16,
        predicate: Option<&Predicate>,
        workers: usize,
    ) -> Result<AggregateResult> {
        self.check_columns(table, &Operation::Aggregate { aggregates: vec![(func, column)] }, predicate)?;
        let m = self.measure();
        let view = HostView::of(table);
        let pages = self.read_all_pages(&view.lpns, workers)?;
        let (partials, host_cpu_s) = self.walk(snapshot, &view, &pages, workers, |rec, part: &mut Partial| {
            if !qualifies(table, rec, predicate)? {
                return Ok(());
            }
            let v = match func {
                Aggregate::CountStar => None,
                _ => int_value(table, rec, column)?,
            };
            part.add_row(v);
            Ok(())
        })?;
        let mut partial = Partial::default();
        for (p, visited) in partials {
            partial.merge(&p);
            partial.visited += visited;
        }
        let visited = partial.visited;
        let stats = ScanStats { host_cpu_s, ..self.stats(m, visited) };
        Ok(AggregateResult { value: partial.result(func), partial, stats })
    }

    /// Returns the visible rows, projected, computed on the host.
    pub fn host_rows(
        &self,
        table: &Table,
        snapshot: &Snapshot,
        projection: &[u16],
        predicate: Option<&Predicate>,
        workers: usize,
    ) -> Result<RowsResult> {
        self.check_columns(table, &Operation::Rows { projection: projection.to_vec() }, predicate)?;
        let m = self.measure();
        let view = HostView::of(table);
        let pages = self.read_all_pages(&view.lpns, workers)?;
        let (parts, cpu_s) =
            self.walk(snapshot, &view, &pages, workers, |rec, rows: &mut Vec<(u64, Vec<Value>)>| {
                if !qualifies(table, rec, predicate)? {
                    return Ok(());
                }
                let vals = projection
                    .iter()
                    .map(|&c| table.layout.column(rec.data, usize::from(c)))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| StoreError::Corrupt(format!("VID {}: {e}", rec.vid)))?;
                rows.push((rec.vid, vals));
                Ok(())
            })?;
        let mut rows = Vec::new();
        let mut visited = 0;
        for (r, v) in parts {
            rows.extend(r);
            visited += v;
        }
        rows.sort_by_key(|r| r.0);
        Ok(RowsResult { rows, stats: ScanStats { host_cpu_s: cpu_s, ..self.stats(m, visited) } })
    }

    /// The heap pages `lpns` (a [`HostView`]'s), read over the link and
    /// verified; pages GC has unmapped since the view was taken are left
    /// out (they hold no version a running snapshot can reach).
    fn read_all_pages(&self, lpns: &[u64], workers: usize) -> Result<HashMap<u64, Vec<u8>>> {
        let workers = workers.max(1);
        if self.device().clock() == ClockKind::Virtual {
            // One thread, a fixed order: the same modelled time every run (module docs).
            let mut qp = self.device().queue_pair();
            return Ok(self
                .read_pages_ahead(lpns, &mut qp, workers * READ_AHEAD, Order::Submission)?
                .into_iter()
                .collect());
        }
        let chunk = lpns.len().div_ceil(workers).max(1);
        let results: Vec<Result<PageList>> = std::thread::scope(|s| {
            let handles: Vec<_> = lpns
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        let mut qp = self.device().queue_pair();
                        self.read_pages_ahead(part, &mut qp, READ_AHEAD, Order::Completion)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("page reader panicked")).collect()
        });
        let mut pages = HashMap::with_capacity(lpns.len());
        for r in results {
            pages.extend(r?);
        }
        Ok(pages)
    }

    /// Walks every chain in the snapshot with `workers` threads; `visit` sees
    /// each visible, live version. Returns each worker's accumulator and the
    /// versions it visited, and the walk's host CPU time in seconds (the
    /// slowest worker's: they ran in parallel).
    fn walk<A: Default + Send>(
        &self,
        snapshot: &Snapshot,
        view: &HostView,
        pages: &HashMap<u64, Vec<u8>>,
        workers: usize,
        visit: impl Fn(&Rec<'_>, &mut A) -> Result<()> + Sync,
    ) -> Result<(Vec<(A, u64)>, f64)> {
        let (heads, delta) = (&view.heads, &view.delta);
        let workers = workers.max(1);
        let chunk = heads.len().div_ceil(workers).max(1);
        let visit = &visit;
        std::thread::scope(|s| {
            let handles: Vec<_> = heads
                .chunks(chunk)
                .enumerate()
                .map(|(i, part)| {
                    s.spawn(move || -> Result<(A, u64, u64)> {
                        let cpu0 = ndpdb_device::thread_cpu_ns();
                        let mut acc = A::default();
                        let mut visited = 0u64;
                        for (j, &head) in part.iter().enumerate() {
                            let vid = (i * chunk + j) as u64;
                            let mut rid = head;
                            let mut steps = 0usize;
                            while !rid.is_none() {
                                visited += 1;
                                steps += 1;
                                if steps > CHAIN_MAX {
                                    return Err(StoreError::Corrupt(format!(
                                        "VID {vid}: version chain does not end (a cycle?)"
                                    )));
                                }
                                let page =
                                    delta.get(&rid.lpn()).or_else(|| pages.get(&rid.lpn())).ok_or_else(|| {
                                        StoreError::Corrupt(format!(
                                            "VID {vid}: page {} of record {rid:?} is not in the table",
                                            rid.lpn()
                                        ))
                                    })?;
                                let (h, data) = record_in(page, rid, vid)?;
                                if snapshot.visible(h.create_ts) {
                                    if !h.tombstone {
                                        visit(&Rec { vid, data }, &mut acc)?;
                                    }
                                    break;
                                }
                                rid = h.prev;
                            }
                        }
                        Ok((acc, visited, ndpdb_device::thread_cpu_ns().saturating_sub(cpu0)))
                    })
                })
                .collect();
            let done: Vec<(A, u64, u64)> =
                handles.into_iter().map(|h| h.join().expect("chain walker panicked")).collect::<Result<_>>()?;
            let cpu_ns = done.iter().map(|d| d.2).max().unwrap_or(0);
            Ok((done.into_iter().map(|(a, v, _)| (a, v)).collect(), cpu_ns as f64 / 1e9))
        })
    }
}

/// What a host-only scan walks, taken at one moment under the table's lock:
/// the heads, the delta buffer's pages and the written heap pages. Every
/// version a head reaches is in one of those pages then: a delta page
/// becomes a heap page under the same lock. Taken apart (the pages first,
/// the heads later), a delta page written in between would be in neither.
pub(crate) struct HostView {
    pub(crate) heads: Vec<RecordId>,
    pub(crate) delta: HashMap<u64, Vec<u8>>,
    lpns: Vec<u64>,
    /// The table's epoch when the heads were copied (`zones.rs`).
    pub(crate) epoch: u64,
}

impl HostView {
    pub(crate) fn of(table: &Table) -> HostView {
        let s = table.state.lock();
        HostView {
            heads: s.heads.iter().map(|h| h.rid).collect(),
            delta: s.delta.iter().map(|p| (p.lpn(), p.bytes().to_vec())).collect(),
            lpns: s.heap_pages.clone(),
            epoch: s.epoch,
        }
    }
}

pub(crate) struct Rec<'a> {
    pub(crate) vid: u64,
    pub(crate) data: &'a [u8],
}

fn record_in(page: &[u8], rid: RecordId, vid: u64) -> Result<(VersionHeader, &[u8])> {
    let corrupt = |e: ndpdb_format::FormatError| StoreError::Corrupt(format!("VID {vid}, record {rid:?}: {e}"));
    let h = page::PageHeader::decode(page).map_err(corrupt)?;
    let rec = page::heap_record(page, &h, rid.slot()).map_err(corrupt)?;
    let vh = VersionHeader::decode(rec, rec.len()).map_err(corrupt)?;
    Ok((vh, &rec[HEADER_BYTES..HEADER_BYTES + usize::from(vh.data_len)]))
}

fn int_value(table: &Table, rec: &Rec<'_>, column: u16) -> Result<Option<i64>> {
    match table.layout.column(rec.data, usize::from(column)) {
        Ok(Value::Null) => Ok(None),
        Ok(Value::Int(v)) => Ok(Some(v)),
        Ok(Value::Text(_)) => Err(StoreError::InvalidInput(format!("column {column} is not numeric"))),
        Err(e) => Err(StoreError::Corrupt(format!("VID {}: {e}", rec.vid))),
    }
}

/// Whether a version meets the predicate: `Predicate::eval`, the function
/// the device's PEs use, on the record's columns.
pub(crate) fn qualifies(table: &Table, rec: &Rec<'_>, predicate: Option<&Predicate>) -> Result<bool> {
    let Some(p) = predicate else { return Ok(true) };
    p.eval(|t| {
        table
            .layout
            .column(rec.data, usize::from(t.column))
            .map_err(|e| StoreError::Corrupt(format!("VID {}: {e}", rec.vid)))
    })
}
