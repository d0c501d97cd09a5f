//! The cost model's constants and the per-operator cost formulas.
//!
//! Every cost is `Cost { host, device }` in seconds; the hybridNDP split
//! needs the two parts apart, and plans are compared by their sum. Device
//! and link constants come from the hardware profile
//! ([`CostParams::from_profile`]); host per-row constants are the
//! placeholders below until the profiler measures them. `docs/optimizer.md`
//! lists every formula; the names here match it.
//!
//! ```text
//!  host scan:  medium ──(all pages)──► link ──► host decodes, checks visibility and filter
//!  NDP scan:   medium ──► PEs check visibility and filter, project ──(result)──► link ──► host
//! ```
//!
//! An NDP scan's device time is what the device model charges (`docs/device-model.md`):
//! on NVM the PEs are latency-bound, each transfer a PE reads (VID-map
//! entry, slot, header, every column a term or the projection reads) waits
//! `read_latency` on its critical path, and the PEs run side by side; the
//! channels bound the total. On flash the pages stream. The device here is
//! an emulator on the host's cores: its PEs' walk takes host CPU
//! (`emu_version_s`, `emu_read_s`), which every run's wall time includes
//! and which the host part of an NDP scan's cost carries, so `ndp = auto`
//! picks the device only where it is faster in the wall time too.

use ndpdb_device::profile::{MediumProfile, Profile};

use crate::plan::Cost;

/// The constants of the cost model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostParams {
    /// Medium streaming bandwidth over all channels, bytes/s.
    pub medium_bandwidth_bytes_s: f64,
    /// Latency before a page streams (NVM read latency, flash sense time), s.
    pub medium_page_latency_s: f64,
    /// Pages in flight at once on the medium (channels, or channels × chips).
    pub medium_parallelism: f64,
    pub page_bytes: f64,
    /// Link bandwidth per direction, bytes/s.
    pub link_bandwidth_bytes_s: f64,
    /// Command round trip, s.
    pub link_latency_s: f64,
    /// Commands the host keeps in flight (the queue depth).
    pub link_queue_depth: f64,
    /// Processing elements; 0 = no NDP possible.
    pub pe_count: f64,
    pub pe_clock_hz: f64,
    /// PE cycles to decode a version and check its visibility (0: the
    /// device model charges a version's reads, not its compute).
    pub pe_version_cycles: f64,
    /// PE cycles per pushed-down predicate term and version (the device's
    /// `TERM_CYCLES`).
    pub pe_predicate_cycles: f64,
    /// Bytes of one medium transfer (NVM: `transfer_bytes`; flash: the page).
    pub medium_transfer_bytes: f64,
    /// A PE's wait per transfer it reads (NVM `read_latency`), s; 0 on flash
    /// (pages stream: `medium_read_s`).
    pub pe_transfer_latency_s: f64,
    /// Channel occupancy per transfer (NVM `access_occupancy`), s.
    pub medium_transfer_occupancy_s: f64,
    /// Host CPU the emulated device spends per version a PE walks (VID-map
    /// entry, slot, header, visibility), s.
    pub emu_version_s: f64,
    /// Host CPU the emulated device spends per column value a PE reads, s.
    pub emu_read_s: f64,
    /// Host: decode one tuple version and check visibility, s.
    pub host_row_s: f64,
    /// Host: evaluate one predicate term or expression on one row, s.
    pub host_expr_s: f64,
    /// Host: receive one row of an NDP result (decode into a batch), s.
    pub host_recv_row_s: f64,
    /// Host: decode one value of a row into a batch (both scans), s.
    pub host_value_s: f64,
    pub hash_build_row_s: f64,
    pub hash_probe_row_s: f64,
    /// Host: emit one output row of a join or aggregate, s.
    pub output_row_s: f64,
    /// Host: aggregate one input row into its group, s.
    pub agg_row_s: f64,
    /// Host: one comparison of a sort, s.
    pub sort_compare_s: f64,
    /// Host: one B+-tree descent (CPU; the pages are counted apart), s.
    pub index_descent_s: f64,
    /// Host: the wall time of one synchronous page read the host's page
    /// cache missed (an index lookup's fetch): the command's submission,
    /// the emulated device's thread serving it, the completion and the
    /// wake-up. The link and medium time of the read are counted apart;
    /// this is the per-command cost a scan's batched reads amortise and a
    /// random fetch pays whole, less what an index lookup's read-ahead of a
    /// probe batch's pages (`Store::prefetch_versions`) overlaps. Measured on
    /// TPC-H SF 1 (docs/optimizer.md, "Index lookups"): 2-11 µs per fetched
    /// row of lineitem, which misses the cache 84 % of the time, s.
    pub host_page_read_s: f64,
    /// Host: fetch one row by VID from the heap cache (a page-table probe
    /// and latch, the VID map and the version's slot), s. Paid by every
    /// fetch, hit or miss.
    pub host_fetch_s: f64,
    /// Pages of the host's cache of heap pages (the engine's
    /// `HEAP_CACHE_PAGES`): a fetch from a table larger than it misses with
    /// probability `1 - cache / table pages` (`fetch_miss`).
    pub host_cache_pages: f64,
    /// Bytes of a stored version's header (VID, timestamps, chain).
    pub tuple_header_bytes: f64,
}

impl Default for CostParams {
    /// The `u280-nvm` profile's numbers (the default profile), so a context
    /// without a profile still costs something realistic.
    fn default() -> Self {
        CostParams {
            medium_bandwidth_bytes_s: 13.2e9,
            medium_page_latency_s: 142.857e-9,
            medium_parallelism: 2.0,
            page_bytes: 8192.0,
            link_bandwidth_bytes_s: 13.391e9,
            link_latency_s: 737e-9,
            link_queue_depth: 256.0,
            pe_count: 16.0,
            pe_clock_hz: 300e6,
            pe_version_cycles: 0.0,
            pe_predicate_cycles: 4.0,
            medium_transfer_bytes: 4.0,
            pe_transfer_latency_s: 142.857e-9,
            medium_transfer_occupancy_s: 142.857e-9,
            emu_version_s: 20e-9,
            emu_read_s: 5e-9,
            host_row_s: 40e-9,
            host_expr_s: 5e-9,
            host_recv_row_s: 60e-9,
            host_value_s: 25e-9,
            hash_build_row_s: 40e-9,
            hash_probe_row_s: 15e-9,
            output_row_s: 10e-9,
            agg_row_s: 25e-9,
            sort_compare_s: 8e-9,
            index_descent_s: 1e-6,
            host_page_read_s: 6e-6,
            host_fetch_s: 1e-6,
            host_cache_pages: 16_384.0,
            tuple_header_bytes: 24.0,
        }
    }
}

impl CostParams {
    /// The device and link constants of `profile`; host constants default.
    pub fn from_profile(profile: &Profile) -> CostParams {
        let mut p = CostParams::default();
        match &profile.medium {
            MediumProfile::Nvm(m) => {
                p.medium_bandwidth_bytes_s = f64::from(m.channels) * m.channel_bandwidth_mb_s * 1e6;
                p.medium_page_latency_s = m.read_latency_ns * 1e-9;
                p.medium_parallelism = f64::from(m.channels);
                p.page_bytes = f64::from(m.page_bytes);
                p.medium_transfer_bytes = f64::from(m.transfer_bytes.max(1));
                p.pe_transfer_latency_s = m.read_latency_ns * 1e-9;
                p.medium_transfer_occupancy_s = m.access_occupancy_ns * 1e-9;
            }
            MediumProfile::Flash(m) => {
                p.medium_bandwidth_bytes_s = f64::from(m.channels) * m.channel_bandwidth_mb_s * 1e6;
                p.medium_page_latency_s = m.read_latency_us * 1e-6;
                p.medium_parallelism = f64::from(m.channels * m.chips_per_channel.max(1));
                p.page_bytes = f64::from(m.page_bytes);
                p.medium_transfer_bytes = f64::from(m.page_bytes.max(1));
                p.pe_transfer_latency_s = 0.0;
                p.medium_transfer_occupancy_s = 0.0;
            }
        }
        p.link_bandwidth_bytes_s = profile.link.bandwidth_mb_s * 1e6;
        p.link_latency_s = profile.link.latency_ns * 1e-9;
        p.link_queue_depth = f64::from(profile.queues.depth.max(1));
        p.pe_count = f64::from(profile.pe.count);
        p.pe_clock_hz = profile.pe.clock_mhz * 1e6;
        p
    }

    /// Reading `bytes` in whole pages from the medium (device time):
    /// `pages · latency / parallelism + bytes / bandwidth`.
    pub fn medium_read_s(&self, bytes: f64) -> f64 {
        let pages = (bytes / self.page_bytes).ceil();
        pages * self.medium_page_latency_s / self.medium_parallelism.max(1.0)
            + bytes / self.medium_bandwidth_bytes_s.max(1.0)
    }

    /// Moving `bytes` over the link in `commands` commands, `queue_depth`
    /// of them in flight: `bytes / bandwidth + ⌈commands / depth⌉ · latency`.
    pub fn link_s(&self, bytes: f64, commands: f64) -> f64 {
        bytes / self.link_bandwidth_bytes_s.max(1.0)
            + (commands / self.link_queue_depth.max(1.0)).ceil() * self.link_latency_s
    }

    /// The chance that fetching one row by VID from a table of
    /// `table_bytes` misses the host's page cache: uniform random fetches
    /// over the table's pages, of which the cache holds `host_cache_pages`
    /// (pessimistic: the cache also holds other tables' pages).
    pub fn fetch_miss(&self, table_bytes: f64) -> f64 {
        let pages = (table_bytes / self.page_bytes).max(1.0);
        (1.0 - self.host_cache_pages / pages).clamp(0.0, 1.0)
    }

    /// Host time of fetching `rows` rows by VID from a table of
    /// `table_bytes`: each probes the cache, and misses it with
    /// `fetch_miss` and then waits for one page read.
    pub fn fetch_host_s(&self, rows: f64, table_bytes: f64) -> f64 {
        let miss = self.fetch_miss(table_bytes) * (self.host_page_read_s + self.link_s(self.page_bytes, 1.0));
        rows * (self.host_fetch_s + miss)
    }

    /// True when the device can run NDP scans at all.
    pub fn ndp_possible(&self) -> bool {
        self.pe_count >= 1.0 && self.pe_clock_hz > 0.0
    }
}

/// What a scan's cost depends on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScanShape {
    /// Versions stored (≈ the table's rows).
    pub table_rows: f64,
    /// Bytes of one stored version (header + every column).
    pub tuple_bytes: f64,
    /// Rows the whole filter keeps.
    pub out_rows: f64,
    /// Rows the part of the filter the device can evaluate keeps.
    pub device_out_rows: f64,
    /// Bytes of one output row (the projected columns).
    pub out_row_bytes: f64,
    /// Predicate terms in the filter (all; and the ones the device evaluates).
    pub predicate_terms: f64,
    pub device_predicate_terms: f64,
    /// Columns the scan outputs.
    pub out_columns: f64,
    /// Medium transfers a PE reads per visible tuple for the device terms'
    /// and the projection's columns (the whole tuple for a text column).
    pub column_bytes_read: f64,
    /// Column values a PE reads per visible tuple (terms and projection).
    pub column_reads: f64,
}

impl ScanShape {
    pub fn table_bytes(&self) -> f64 {
        self.table_rows * self.tuple_bytes
    }

    /// Bytes an NDP scan sends to the host.
    pub fn ndp_result_bytes(&self) -> f64 {
        self.device_out_rows * self.out_row_bytes
    }

    /// Link bytes an NDP scan saves over a host scan.
    pub fn link_bytes_saved(&self) -> f64 {
        (self.table_bytes() - self.ndp_result_bytes()).max(0.0)
    }
}

/// Host scan: every page crosses the link; the host decodes each version,
/// evaluates the filter and decodes the projected values.
pub fn host_scan(p: &CostParams, s: &ScanShape) -> Cost {
    let bytes = s.table_bytes();
    let pages = (bytes / p.page_bytes).ceil();
    let per_row = p.host_row_s + s.predicate_terms * p.host_expr_s;
    Cost {
        device: p.medium_read_s(bytes),
        host: p.link_s(bytes, pages) + s.table_rows * per_row + s.out_rows * s.out_columns * p.host_value_s,
    }
}

/// NDP scan: the PEs walk every chain, read the device terms' columns and
/// the projection of the tuples that pass (module docs: latency-bound on
/// NVM, streaming on flash), and the result crosses the link; the host
/// decodes it and evaluates what the device could not. The emulated PEs'
/// CPU counts on the host's side.
pub fn ndp_scan(p: &CostParams, s: &ScanShape) -> Cost {
    let pes = p.pe_count.max(1.0);
    let t = p.medium_transfer_bytes.max(1.0);
    // VID-map entry (8 bytes) and one version's slot and header (24).
    let walk_transfers = (8.0 / t).ceil() + (24.0 / t).ceil();
    let transfers = s.table_rows * (walk_transfers + s.column_bytes_read / t);
    let pe_latency = transfers * p.pe_transfer_latency_s / pes;
    let channels = transfers * p.medium_transfer_occupancy_s / p.medium_parallelism.max(1.0);
    let flash = if p.medium_transfer_bytes >= p.page_bytes { p.medium_read_s(s.table_bytes()) } else { 0.0 };
    let pe_cycles = s.table_rows * (p.pe_version_cycles + s.device_predicate_terms * p.pe_predicate_cycles);
    let pe_compute = if p.pe_clock_hz.is_finite() { pe_cycles / (p.pe_clock_hz.max(1.0) * pes) } else { 0.0 };
    let out_bytes = s.ndp_result_bytes();
    let host_terms = (s.predicate_terms - s.device_predicate_terms).max(0.0);
    let emulation = s.table_rows * (p.emu_version_s + s.column_reads * p.emu_read_s);
    Cost {
        device: (pe_latency + pe_compute).max(channels).max(flash),
        host: p.link_s(out_bytes, 1.0 + (out_bytes / p.page_bytes).ceil())
            + s.device_out_rows * (p.host_recv_row_s + s.out_columns * p.host_value_s + host_terms * p.host_expr_s)
            + emulation,
    }
}

/// Index scan: a descent, then one page read per matching row that misses
/// the host's cache (pessimistic: no two matches share a page).
pub fn index_scan(p: &CostParams, s: &ScanShape, matched_rows: f64) -> Cost {
    let page_read = p.medium_page_latency_s + p.page_bytes / p.medium_bandwidth_bytes_s.max(1.0);
    let miss = p.fetch_miss(s.table_bytes());
    Cost {
        device: matched_rows * miss * page_read,
        host: p.index_descent_s
            + p.fetch_host_s(matched_rows, s.table_bytes())
            + matched_rows * (p.host_row_s + s.predicate_terms * p.host_expr_s),
    }
}
