//! The chain walk that `ndp.snapshot` and `ndp.update` both run on a PE:
//! from a VID to the version of its tuple that the call's snapshot sees.
//!
//! ```text
//!  VID map entry ──► RecordId ──L2P──► page, slot ──► slot entry (4 B)
//!        ▲                                              │
//!        │                        record header (20 B) ◄┘
//!        │                           visible to the snapshot? ── no ──► prev RecordId, again
//!        │                                   │ yes
//!  next VID ◄── the program's work ◄── predicate on the columns it needs (`columns.rs`)
//! ```
//!
//! The host ships what the device lacks with the call (`ndpdb_format::ndp`):
//! the snapshot, the map deltas and the delta-buffer pages; the table's
//! layout descriptor is the format parser's configuration (nothing about
//! tables is compiled into the programs).
//!
//! **Through the mirror** (CBM freshness, `docs/cbm.md`): with the call's
//! mirror flag set, the host ships no delta-buffer page; a page the call
//! reaches is found where the mirror of the host's delta frames says:
//!
//! ```text
//!   locate(lpn):
//!     copied during this call ─► that copy
//!     mirror Dirty at a ─► DMA read of the frame at a; front == rear and
//!                          pid word == lpn ─► the page (copied for the call)
//!                          another pid: the page left the frame (written, and
//!                          the frame reused) ─► the L2P below
//!                          front != rear: count a retry, read again (at most
//!                          MAX_HOST_RETRIES, then fail naming the page)
//!     the call's L2P (shipped delta, then map pages) ─► the medium
//!     unmapped, and the mirror has a descriptor at a (the page was written
//!     after the call was captured; the host keeps its frame until the call
//!     ends) ─► the frame at a, checked as above
//! ```
//!
//! A copy taken during the call holds every version the call can reach:
//! those were appended before the call was captured, and delta pages only
//! grow. A frame holding another page means the page was written and its
//! frame reused, which the host does only once every call begun before the
//! write ended: this call began after it, so its L2P maps the page.
//!
//! On NVM every read is byte-granular: per visited version one slot entry
//! (one 4-byte transfer) and one header (five transfers), 24 bytes; per
//! visible tuple the columns the operation needs. On flash a PE reads whole
//! pages and keeps the last one it read.
//!
//! A PE walks the chains of up to 64 consecutive VIDs side by side, one
//! version per round (all slot entries, then all headers). The model charges
//! every transfer exactly as a one-chain-at-a-time walk would; the batch only
//! lets the emulation prefetch each chain's next read a pass ahead, so that
//! the host CPU's cache misses overlap (3x faster on the oldest snapshot of
//! 1M tuples x 5 versions). On flash the batch is one chain, so the page a
//! PE keeps stays useful.

use std::collections::HashMap;

use ndpdb_format::ndp::{Aggregate, NdpCall, Operation, RANGE_CALL, RANGE_DELTA, RANGE_LAYOUT};
use ndpdb_format::page::{self, PAGE_HEADER_BYTES, RecordId, map_entries_per_page};
use ndpdb_format::record::{HEADER_BYTES, VersionHeader};
use ndpdb_format::schema::{Layout, LayoutDescriptor};

use crate::columns::Check;
use crate::error::DeviceError;
use crate::mirror::{MirrorKind, PageState};
use crate::pe::PeCtx;

/// DMA reads of one frame that find it changing before the call gives up.
pub const MAX_HOST_RETRIES: u64 = 1000;
/// Bytes of a frame before the page: front version and pid word.
const FRAME_HEAD: usize = 16;

const L2P_CACHE: usize = 4096;
const HEADER_WORDS: usize = HEADER_BYTES / 4;

/// Where a logical page lives during a call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Loc {
    /// In the shipped delta-buffer pages (range 2), at this byte.
    Delta(u64),
    /// On the medium, at this physical page.
    Medium(u64),
    /// Copied from the host's frame during this call: copy `n` (CBM).
    Host(u32),
}

/// A PE's reading of delta pages through the mirror (CBM): the frame size
/// and the pages copied during the call.
pub(crate) struct HostPages {
    frame_bytes: u64,
    copies: Vec<Vec<u8>>,
    by_lpn: HashMap<u64, u32>,
}

pub(crate) struct Scan<'c, 'a> {
    pub(crate) ctx: &'c mut PeCtx<'a>,
    pub(crate) call: NdpCall,
    pub(crate) layout: Layout,
    pub(crate) page: u64,
    pub(crate) per_page: u64,
    pub(crate) flash: bool,
    /// Byte of a record (from its start) that holds the column the call
    /// reads first: fetched into the emulation's cache with the header.
    pub(crate) column_prefetch: Option<u64>,
    /// log2 of the NVM transfer size, when it is a power of two (None on flash).
    pub(crate) transfer_shift: Option<u32>,
    /// Delta-buffer pages by lpn: (lpn, index in range 2), sorted.
    pub(crate) delta_index: Vec<(u64, usize)>,
    l2p_cache: Vec<(u64, u64)>,
    /// Flash: the last page read, by ppn.
    pub(crate) page_cache: Option<(u64, Vec<u8>)>,
    /// Where the last logical page read lives (a record's slot, header and
    /// columns are read one after the other from the same page).
    pub(crate) last: Option<(u64, Loc)>,
    /// The VID map page in use: (lpn, ppn). VID map pages are never in the delta buffer.
    pub(crate) vid_page: Option<(u64, u64)>,
    /// VID map page index of the last VID looked up, and its first VID
    /// (VIDs come in order, so the division is rarely needed).
    pub(crate) vid_span: (usize, u64),
    /// Position in the shipped VID delta.
    pub(crate) vid_cursor: usize,
    /// Medium bytes read for anything but chain steps: VID-map and L2P
    /// entries, column values and null bitmaps.
    pub(crate) extra_bytes: u64,
    /// Versions visited in shipped delta-buffer pages (and, with CBM, in
    /// pages copied from host frames).
    pub(crate) dram_visits: u64,
    /// Set when the call reads delta pages through the mirror.
    pub(crate) host: Option<HostPages>,
    /// The call's predicate, compiled (`columns.rs`).
    pub(crate) checks: Vec<Check>,
}

impl<'c, 'a> Scan<'c, 'a> {
    /// Reads the call block and the layout descriptor and prepares the
    /// walk; `update` says whether `ndp.update` runs (update calls only) or
    /// `ndp.snapshot` (everything else).
    pub(crate) fn open(ctx: &'c mut PeCtx<'a>, update: bool) -> Result<Scan<'c, 'a>, DeviceError> {
        let host = host_pages(ctx, update)?;
        let mut block = vec![0u8; ctx.range_len(RANGE_CALL)? as usize];
        ctx.range_read(RANGE_CALL, 0, &mut block)?;
        let call = NdpCall::decode(&block).map_err(|e| ctx.fail(format!("call block: {e}")))?;
        if update != matches!(call.op, Operation::Update { .. }) {
            return Err(ctx.fail(if update {
                "ndp.update runs update calls only (op 3); reads go to ndp.snapshot"
            } else {
                "ndp.snapshot only reads; update calls (op 3) go to ndp.update"
            }));
        }
        let mut desc = vec![0u8; ctx.range_len(RANGE_LAYOUT)? as usize];
        ctx.range_read(RANGE_LAYOUT, 0, &mut desc)?;
        let layout = LayoutDescriptor::decode(&desc).map_err(|e| ctx.fail(format!("layout: {e}")))?;
        let page = ctx.page_bytes();
        let mut delta_index: Vec<(u64, usize)> = call.delta_pages.iter().enumerate().map(|(i, &l)| (l, i)).collect();
        delta_index.sort_unstable();
        if ctx.range_len(RANGE_DELTA)? < delta_index.len() as u64 * page {
            return Err(ctx.fail("range 2 holds fewer delta pages than the call lists"));
        }
        let flash = ctx.transfer_bytes() == page;
        let mut scan = Scan {
            call,
            layout,
            page,
            per_page: map_entries_per_page(page as usize) as u64,
            flash,
            column_prefetch: None,
            transfer_shift: (!flash && ctx.transfer_bytes().is_power_of_two())
                .then(|| ctx.transfer_bytes().trailing_zeros()),
            delta_index,
            l2p_cache: vec![(u64::MAX, 0); L2P_CACHE],
            page_cache: None,
            last: None,
            vid_page: None,
            vid_span: (usize::MAX, 0),
            vid_cursor: 0,
            extra_bytes: 0,
            dram_visits: 0,
            host,
            checks: vec![],
            ctx,
        };
        scan.check_columns()?;
        scan.checks = scan.compile_checks();
        scan.column_prefetch = match &scan.call.op {
            _ if scan.call.predicate.is_some() => scan.call.predicate.as_ref().map(|p| p.terms[0].column),
            Operation::Aggregate { aggregates } => {
                aggregates.iter().find(|(f, _)| *f != Aggregate::CountStar).map(|&(_, c)| c)
            }
            Operation::Update { column, .. } => Some(*column),
            Operation::Rows { projection } => projection.first().copied(),
        }
        .map(|c| (HEADER_BYTES + usize::from(scan.layout.slots[usize::from(c)].offset)) as u64);
        Ok(scan)
    }
}

/// The call's mirror flag: `ndp.snapshot`'s parameter 0, `ndp.update`'s
/// parameter 2 (its 0 and 1 are the object id and the poll limit); absent
/// means 0. With 1, the heap mirror must be configured and host memory
/// attached.
fn host_pages(ctx: &PeCtx<'_>, update: bool) -> Result<Option<HostPages>, DeviceError> {
    let i = if update { 2 } else { 0 };
    let flag = if ctx.params().len() > i * 8 { ctx.param_u64(i)? } else { 0 };
    match flag {
        0 => Ok(None),
        1 => match ctx.mirror_config() {
            Some(c) if c.kind == MirrorKind::Heap => {
                Ok(Some(HostPages { frame_bytes: c.frame_bytes, copies: Vec::new(), by_lpn: HashMap::new() }))
            }
            _ => Err(ctx.fail(format!(
                "parameter {i} asks to read delta pages through the mirror, but no heap mirror is configured \
                 (MirrorConfigureHeap)"
            ))),
        },
        f => Err(ctx.fail(format!("parameter {i} is {f}: 0 ships delta pages, 1 reads them through the mirror"))),
    }
}

/// Chains walked side by side on NVM. A PE's transfers are charged one by
/// one whatever the order, so the batch changes nothing in the model; it
/// lets the emulation overlap its own cache misses (prefetch every chain's
/// next slot, then every header) instead of taking them one after another.
const BATCH: usize = 64;

/// The version of a tuple that a snapshot sees.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    /// Where its page is.
    pub(crate) loc: Loc,
    /// Its logical page.
    pub(crate) lpn: u64,
    /// Its slot in the page (its RecordId is `lpn, slot`).
    pub(crate) slot: u16,
    /// Byte offset of the record in the page.
    pub(crate) off: u64,
    /// Record length (header included).
    pub(crate) len: usize,
    /// The transaction that created it.
    pub(crate) create_ts: u64,
}

impl Scan<'_, '_> {
    pub(crate) fn fail(&self, m: String) -> DeviceError {
        self.ctx.fail(m)
    }

    /// Chains walked side by side: whole pages on flash are read one chain
    /// at a time, so that the page kept from the last read stays useful.
    fn batch(&self) -> u64 {
        if self.flash { 1 } else { BATCH as u64 }
    }

    /// Whether `used` output bytes fit a PE's `share` of the output range.
    pub(crate) fn fits_share(&self, used: usize, share: u64) -> Result<(), DeviceError> {
        if used as u64 > share {
            return Err(
                self.fail(format!("result buffer share of {share} bytes is full; give the call a larger output range"))
            );
        }
        Ok(())
    }

    /// This PE's share of the VIDs: `[n·p/P, n·(p+1)/P)`.
    pub(crate) fn share(&self) -> (u64, u64) {
        let (pe, pes) = (u64::from(self.ctx.pe()), u64::from(self.ctx.pes()));
        let n = self.call.vids;
        (n * pe / pes, n * (pe + 1) / pes)
    }

    /// Medium bytes a read of `len` bytes at page offset `off` costs: whole
    /// transfers on NVM; on flash the bytes themselves (pages are cached).
    #[inline]
    pub(crate) fn medium_bytes(&self, off: u64, len: u64) -> u64 {
        if let Some(shift) = self.transfer_shift {
            let t = 1u64 << shift;
            return (((off + len + t - 1) >> shift) - (off >> shift)) << shift;
        }
        if self.flash {
            return len;
        }
        let t = self.ctx.transfer_bytes();
        ((off + len).div_ceil(t) - off / t) * t
    }

    /// Where logical page `lpn` is during this call.
    #[inline(always)]
    fn locate(&mut self, lpn: u64) -> Result<Loc, DeviceError> {
        if let Some((l, loc)) = self.last
            && l == lpn
        {
            return Ok(loc);
        }
        let loc = match self.delta_index.binary_search_by_key(&lpn, |&(l, _)| l) {
            Ok(i) => Loc::Delta(self.delta_index[i].1 as u64 * self.page),
            Err(_) if self.host.is_some() => self.locate_through_mirror(lpn)?,
            Err(_) => Loc::Medium(self.resolve(lpn)?),
        };
        self.last = Some((lpn, loc));
        Ok(loc)
    }

    /// [`Scan::locate`] with CBM (module docs, "Through the mirror").
    #[inline(never)]
    fn locate_through_mirror(&mut self, lpn: u64) -> Result<Loc, DeviceError> {
        if let Some(&n) = self.host.as_ref().and_then(|h| h.by_lpn.get(&lpn)) {
            return Ok(Loc::Host(n));
        }
        let d = self.ctx.mirror_descriptor(lpn)?;
        if let Some(d) = d
            && d.state == PageState::Dirty
            && let Some(n) = self.copy_frame(lpn, d.host_addr)?
        {
            return Ok(Loc::Host(n));
        }
        match (self.resolve_mapped(lpn)?, d) {
            (Some(ppn), _) => Ok(Loc::Medium(ppn)),
            (None, Some(d)) => self.copy_frame(lpn, d.host_addr)?.map(Loc::Host).ok_or_else(|| {
                self.fail(format!(
                    "logical page {lpn} is not mapped, and its frame at host address {:#x} holds another page",
                    d.host_addr
                ))
            }),
            (None, None) => {
                Err(self
                    .fail(format!("logical page {lpn} is neither mapped nor in the mirror of the host's delta frames")))
            }
        }
    }

    /// Copies page `lpn` from the frame at host address `addr` for the rest
    /// of the call: its copy's number, or None if the frame holds another
    /// page. Reads again (counted) while the frame changes.
    fn copy_frame(&mut self, lpn: u64, addr: u64) -> Result<Option<u32>, DeviceError> {
        let frame_bytes = self.host.as_ref().expect("CBM calls only").frame_bytes as usize;
        let mut frame = vec![0u8; frame_bytes];
        let word = |f: &[u8], at: usize| u64::from_le_bytes(f[at..at + 8].try_into().expect("8 bytes"));
        for _ in 0..MAX_HOST_RETRIES {
            self.ctx.host_read(addr, &mut frame)?;
            if word(&frame, 0) != word(&frame, frame_bytes - 8) {
                self.ctx.count_host_page_retry();
                std::thread::yield_now();
                continue;
            }
            if word(&frame, 8) != lpn {
                return Ok(None);
            }
            let page = frame[FRAME_HEAD..FRAME_HEAD + self.page as usize].to_vec();
            let host = self.host.as_mut().expect("CBM calls only");
            let n = host.copies.len() as u32;
            host.copies.push(page);
            host.by_lpn.insert(lpn, n);
            return Ok(Some(n));
        }
        Err(self.fail(format!(
            "page {lpn}: {MAX_HOST_RETRIES} reads of its frame at host address {addr:#x} found it changing; \
             retry the call"
        )))
    }

    /// Hints the emulation's CPU cache at a page byte (no effect on the model).
    #[inline]
    fn prefetch(&self, loc: Loc, offset: u64) {
        if let Loc::Medium(ppn) = loc
            && !self.flash
        {
            self.ctx.prefetch(ppn * self.page + offset);
        }
    }

    /// Reads `out.len()` little-endian words of page `lpn` (at `loc`) at the
    /// 4-aligned `offset`.
    #[inline(always)]
    pub(crate) fn read_words(&mut self, loc: Loc, lpn: u64, offset: u64, out: &mut [u32]) -> Result<(), DeviceError> {
        let len = 4 * out.len() as u64;
        if offset + len > self.page || !offset.is_multiple_of(4) {
            return Err(self.fail(format!("read of {len} bytes at {offset} crosses page {lpn} or is unaligned")));
        }
        match loc {
            Loc::Medium(ppn) if !self.flash => self.ctx.read_words(ppn * self.page + offset, out),
            _ => self.read_words_copied(loc, offset, out),
        }
    }

    /// [`Scan::read_words`] from shipped pages or from the cached flash page.
    #[inline(never)]
    fn read_words_copied(&mut self, loc: Loc, offset: u64, out: &mut [u32]) -> Result<(), DeviceError> {
        let mut b = [0u8; 4 * HEADER_WORDS];
        let b = &mut b[..4 * out.len()];
        match loc {
            Loc::Delta(base) => self.ctx.range_read(2, base + offset, b)?,
            Loc::Medium(ppn) => self.read_physical(ppn, offset, b)?,
            Loc::Host(n) => self.read_copy(n, offset, b),
        }
        for (o, c) in out.iter_mut().zip(b.chunks_exact(4)) {
            *o = u32::from_le_bytes(c.try_into().expect("4 bytes"));
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes of logical page `lpn` at `offset`.
    pub(crate) fn read(&mut self, loc: Loc, lpn: u64, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        if offset + buf.len() as u64 > self.page {
            return Err(self.fail(format!("read of {} bytes at {offset} crosses page {lpn}", buf.len())));
        }
        match loc {
            Loc::Delta(base) => self.ctx.range_read(2, base + offset, buf),
            Loc::Medium(ppn) => self.read_physical(ppn, offset, buf),
            Loc::Host(n) => {
                self.read_copy(n, offset, buf);
                Ok(())
            }
        }
    }

    /// Bytes of copy `n` of a host page at `offset` (in bounds: the callers
    /// checked against the page size), charged as a device DRAM copy.
    fn read_copy(&mut self, n: u32, offset: u64, buf: &mut [u8]) {
        let host = self.host.as_ref().expect("host locations come from CBM calls");
        let page = &host.copies[n as usize];
        self.ctx.memcpy(buf, &page[offset as usize..offset as usize + buf.len()]);
    }

    fn read_physical(&mut self, ppn: u64, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        if !self.flash {
            return self.ctx.read(ppn * self.page + offset, buf);
        }
        let cached = matches!(&self.page_cache, Some((p, _)) if *p == ppn);
        if !cached {
            let mut page = self.page_cache.take().map(|(_, b)| b).unwrap_or_else(|| vec![0; self.page as usize]);
            self.ctx.read_page(ppn, &mut page)?;
            self.page_cache = Some((ppn, page));
        }
        let (_, page) = self.page_cache.as_ref().expect("filled above");
        buf.copy_from_slice(&page[offset as usize..offset as usize + buf.len()]);
        Ok(())
    }

    /// Logical to physical page, or None if the call's L2P does not map it
    /// (a CBM call reaches pages written after it was captured).
    fn resolve_mapped(&mut self, lpn: u64) -> Result<Option<u64>, DeviceError> {
        let shipped = self.call.l2p_delta.binary_search_by_key(&lpn, |&(l, _)| l);
        let unmapped = match shipped {
            Ok(i) => self.call.l2p_delta[i].1 == u64::MAX,
            Err(_) => (lpn / self.per_page) as usize >= self.call.l2p_pages.len(),
        };
        if unmapped {
            return Ok(None);
        }
        match self.resolve(lpn) {
            Ok(ppn) => Ok(Some(ppn)),
            Err(_) if self.unmapped_in_map_page(lpn)? => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `lpn`'s entry in its L2P map page is all ones (unmapped).
    fn unmapped_in_map_page(&mut self, lpn: u64) -> Result<bool, DeviceError> {
        let Some(&map_ppn) = self.call.l2p_pages.get((lpn / self.per_page) as usize) else { return Ok(true) };
        let mut b = [0u8; 8];
        let at = PAGE_HEADER_BYTES as u64 + 8 * (lpn % self.per_page);
        self.read_physical(map_ppn, at, &mut b)?;
        Ok(u64::from_le_bytes(b) == u64::MAX)
    }

    /// Logical to physical page: the shipped delta, else the L2P map pages.
    fn resolve(&mut self, lpn: u64) -> Result<u64, DeviceError> {
        let slot = (lpn as usize) % L2P_CACHE;
        if self.l2p_cache[slot].0 == lpn {
            return Ok(self.l2p_cache[slot].1);
        }
        if let Ok(i) = self.call.l2p_delta.binary_search_by_key(&lpn, |&(l, _)| l) {
            let ppn = self.call.l2p_delta[i].1;
            if ppn.checked_mul(self.page).is_none_or(|a| a >= self.ctx.capacity_bytes()) {
                return Err(self.fail(format!("logical page {lpn} is not mapped (shipped entry {ppn})")));
            }
            self.l2p_cache[slot] = (lpn, ppn);
            return Ok(ppn);
        }
        let idx = (lpn / self.per_page) as usize;
        let map_ppn =
            *self.call.l2p_pages.get(idx).ok_or_else(|| self.fail(format!("logical page {lpn} is not mapped")))?;
        let mut b = [0u8; 8];
        let at = PAGE_HEADER_BYTES as u64 + 8 * (lpn % self.per_page);
        self.extra_bytes += self.medium_bytes(at, 8);
        self.read_physical(map_ppn, at, &mut b)?;
        let ppn = u64::from_le_bytes(b);
        if ppn.checked_mul(self.page).is_none_or(|a| a >= self.ctx.capacity_bytes()) {
            return Err(self.fail(format!("logical page {lpn} maps to {ppn}, outside the medium")));
        }
        self.l2p_cache[slot] = (lpn, ppn);
        Ok(ppn)
    }

    /// The head of `vid` in the shipped VID delta, if it has one. Leaves the
    /// cursor at the first shipped entry at or after `vid`.
    #[inline]
    fn shipped_head(&mut self, vid: u64) -> Option<RecordId> {
        let d = &self.call.vid_delta;
        if self.vid_cursor >= d.len()
            || d[self.vid_cursor].0 > vid
            || (self.vid_cursor > 0 && d[self.vid_cursor - 1].0 >= vid)
        {
            self.vid_cursor = d.partition_point(|&(v, _)| v < vid);
        }
        while self.vid_cursor < d.len() && d[self.vid_cursor].0 < vid {
            self.vid_cursor += 1;
        }
        (self.vid_cursor < d.len() && d[self.vid_cursor].0 == vid).then(|| RecordId(d[self.vid_cursor].1))
    }

    /// Where `vid`'s VID map entry is: (physical page, byte in the page, the
    /// first VID after that page).
    #[inline]
    fn vid_entry(&mut self, vid: u64) -> Result<(u64, u64, u64), DeviceError> {
        let (mut idx, mut first) = self.vid_span;
        if idx == usize::MAX || vid < first || vid >= first + self.per_page {
            idx = (vid / self.per_page) as usize;
            first = idx as u64 * self.per_page;
            self.vid_span = (idx, first);
        }
        let lpn = *self.call.vid_pages.get(idx).ok_or_else(|| self.fail(format!("VID {vid} has no VID map page")))?;
        let ppn = match self.vid_page {
            Some((l, p)) if l == lpn => p,
            _ => {
                let p = self.resolve(lpn)?;
                self.vid_page = Some((lpn, p));
                p
            }
        };
        Ok((ppn, PAGE_HEADER_BYTES as u64 + 8 * (vid - first), first + self.per_page))
    }

    /// The heads of `vids` (at most [`BATCH`]) into `out`. On NVM whose
    /// transfers divide the 8-byte entry, the entries of consecutive VIDs
    /// without a shipped head that share a VID map page are read with one
    /// `read_words`: the same transfers on the same channels as one read per
    /// entry, so the model is charged exactly as [`Scan::head`] would be.
    fn heads(&mut self, vids: std::ops::Range<u64>, out: &mut [RecordId; BATCH]) -> Result<(), DeviceError> {
        debug_assert!(vids.end - vids.start <= BATCH as u64);
        if self.flash || 8 % self.ctx.transfer_bytes() != 0 {
            for (o, vid) in out.iter_mut().zip(vids) {
                *o = self.head(vid)?;
            }
            return Ok(());
        }
        let mut words = [0u32; 2 * BATCH];
        let mut vid = vids.start;
        while vid < vids.end {
            let i = (vid - vids.start) as usize;
            if let Some(rid) = self.shipped_head(vid) {
                out[i] = rid;
                vid += 1;
                continue;
            }
            let next_shipped = self.call.vid_delta.get(self.vid_cursor).map_or(u64::MAX, |d| d.0);
            let (ppn, at, page_end) = self.vid_entry(vid)?;
            let end = vids.end.min(next_shipped).min(page_end);
            let k = (end - vid) as usize;
            self.extra_bytes += self.medium_bytes(at, 8 * k as u64);
            self.ctx.read_words(ppn * self.page + at, &mut words[..2 * k])?;
            for (o, w) in out[i..i + k].iter_mut().zip(words.chunks_exact(2)) {
                *o = RecordId(u64::from(w[0]) | u64::from(w[1]) << 32);
            }
            vid = end;
        }
        Ok(())
    }

    /// The head of `vid`. VIDs come in increasing order, so the shipped
    /// VID delta is walked with a cursor, and the VID map page's location is
    /// kept apart from the records' (they alternate).
    fn head(&mut self, vid: u64) -> Result<RecordId, DeviceError> {
        if let Some(rid) = self.shipped_head(vid) {
            return Ok(rid);
        }
        let (ppn, at, _) = self.vid_entry(vid)?;
        self.extra_bytes += self.medium_bytes(at, 8);
        if self.flash {
            let mut b = [0u8; 8];
            self.read_physical(ppn, at, &mut b)?;
            return Ok(RecordId(u64::from_le_bytes(b)));
        }
        let mut w = [0u32; 2];
        self.ctx.read_words(ppn * self.page + at, &mut w)?;
        Ok(RecordId(u64::from(w[0]) | u64::from(w[1]) << 32))
    }

    /// Calls `f` with each VID of `first..end` whose visible version meets
    /// the call's predicate, in VID order (chains walked `batch()` at a
    /// time); returns the versions visited.
    pub(crate) fn each_qualifying(
        &mut self,
        first: u64,
        end: u64,
        mut f: impl FnMut(&mut Self, u64, &Found) -> Result<(), DeviceError>,
    ) -> Result<u64, DeviceError> {
        let mut visited = 0;
        let mut found = Vec::with_capacity(BATCH);
        let mut at = first;
        while at < end {
            let to = (at + self.batch()).min(end);
            self.visible_versions(at..to, &mut found, &mut visited)?;
            for (vid, rec) in (at..to).zip(&found) {
                if let Some(rec) = rec
                    && self.qualifies(rec)?
                {
                    f(self, vid, rec)?;
                }
            }
            at = to;
        }
        Ok(visited)
    }

    /// Walks the chains of `vids` to the versions the snapshot sees: `found`
    /// gets, per VID in order, its visible record, or None when the tuple is
    /// absent or deleted in the snapshot. The chains advance in lockstep,
    /// one version per round: every chain's slot entry, then every chain's
    /// header. Each read was prefetched one pass earlier (the slot when the
    /// chain reached the version, the header when its slot was read), so the
    /// emulation's cache misses overlap; the model is charged the same.
    fn visible_versions(
        &mut self,
        vids: std::ops::Range<u64>,
        found: &mut Vec<Option<Found>>,
        visited: &mut u64,
    ) -> Result<(), DeviceError> {
        debug_assert!(vids.end - vids.start <= BATCH as u64);
        found.clear();
        found.resize((vids.end - vids.start) as usize, None);
        let mut walks = [Walk { i: 0, rid: RecordId::NONE, loc: Loc::Delta(0), off: 0, len: 0 }; BATCH];
        let mut live = self.start_walks(vids.clone(), &mut walks)?;
        let mut rounds = 0u64;
        while live > 0 {
            rounds += 1;
            if rounds > 1 << 32 {
                return Err(self.fail(format!("VIDs {vids:?}: a version chain does not end (a cycle?)")));
            }
            *visited += live as u64;
            self.read_slots(vids.start, &mut walks[..live])?;
            live = self.read_headers(vids.start, &mut walks, live, found)?;
        }
        Ok(())
    }

    /// Starts a walk at the head of each of `vids` that has one (prefetching
    /// its slot entry); returns how many started.
    #[inline(always)]
    fn start_walks(&mut self, vids: std::ops::Range<u64>, walks: &mut [Walk; BATCH]) -> Result<usize, DeviceError> {
        let mut live = 0;
        let mut heads = [RecordId::NONE; BATCH];
        self.heads(vids.clone(), &mut heads)?;
        for (i, &rid) in heads[..(vids.end - vids.start) as usize].iter().enumerate() {
            if !rid.is_none() {
                let loc = self.locate(rid.lpn())?;
                self.prefetch(loc, slot_at(rid));
                walks[live] = Walk { i, rid, loc, off: 0, len: 0 };
                live += 1;
            }
        }
        Ok(live)
    }

    /// Reads the slot entry of each walk's version and checks it; fetches
    /// the record's header (and the column the call reads first).
    #[inline(always)]
    fn read_slots(&mut self, first_vid: u64, walks: &mut [Walk]) -> Result<(), DeviceError> {
        for w in walks {
            if matches!(w.loc, Loc::Delta(_) | Loc::Host(_)) {
                self.dram_visits += 1;
            }
            let mut raw = [0u32; 1];
            self.read_words(w.loc, w.rid.lpn(), slot_at(w.rid), &mut raw)?;
            let (off, len) = page::split_slot(raw[0]);
            if !page::slot_fits(off, len, w.rid.slot(), self.page as usize) {
                let vid = first_vid + w.i as u64;
                return Err(self.fail(format!(
                    "VID {vid}: slot {} of {} is corrupt ({off}, {len})",
                    w.rid.slot(),
                    place(w.loc, w.rid)
                )));
            }
            (w.off, w.len) = (off as u64, len);
            self.prefetch(w.loc, w.off);
            if let Some(at) = self.column_prefetch
                && at < len as u64
            {
                self.prefetch(w.loc, w.off + at);
            }
        }
        Ok(())
    }

    /// Reads the headers of the first `live` walks: a visible version ends
    /// its chain (into `found`, unless a tombstone), the others move to
    /// their previous version (and fetch its slot entry), and a chain that
    /// ends without one leaves its tuple absent. Returns the walks still
    /// going, moved to the front.
    #[inline(always)]
    fn read_headers(
        &mut self,
        first_vid: u64,
        walks: &mut [Walk; BATCH],
        live: usize,
        found: &mut [Option<Found>],
    ) -> Result<usize, DeviceError> {
        let mut still = 0;
        for k in 0..live {
            let w = walks[k];
            debug_assert!(w.len >= HEADER_BYTES, "read_slots checked the slot");
            let mut hw = [0u32; HEADER_WORDS];
            self.read_words(w.loc, w.rid.lpn(), w.off, &mut hw)?;
            let h = VersionHeader::from_words(&hw, w.len).map_err(|e| {
                let vid = first_vid + w.i as u64;
                self.fail(format!("VID {vid}: the version in slot {} of {}: {e}", w.rid.slot(), place(w.loc, w.rid)))
            })?;
            if self.call.snapshot.visible(h.create_ts) {
                if !h.tombstone {
                    let (lpn, slot) = (w.rid.lpn(), w.rid.slot());
                    found[w.i] = Some(Found { loc: w.loc, lpn, slot, off: w.off, len: w.len, create_ts: h.create_ts });
                }
            } else if !h.prev.is_none() {
                let loc = self.locate(h.prev.lpn())?;
                self.prefetch(loc, slot_at(h.prev));
                walks[still] = Walk { i: w.i, rid: h.prev, loc, off: 0, len: 0 };
                still += 1;
            }
        }
        Ok(still)
    }
}

/// A chain being walked: VID index in the batch, the version's RecordId and
/// page, and (after its slot entry is read) its record.
#[derive(Clone, Copy)]
struct Walk {
    i: usize,
    rid: RecordId,
    loc: Loc,
    off: u64,
    len: usize,
}

/// Where a version's page is, in words for an error: the logical page and
/// the physical page or the delta buffer.
fn place(loc: Loc, rid: RecordId) -> String {
    match loc {
        Loc::Medium(ppn) => format!("page {} (physical {ppn})", rid.lpn()),
        Loc::Delta(_) => format!("page {} (in the delta buffer shipped with the call)", rid.lpn()),
        Loc::Host(_) => format!("page {} (copied from the host's delta frame)", rid.lpn()),
    }
}

/// Byte of `rid`'s slot entry in its page.
#[inline(always)]
fn slot_at(rid: RecordId) -> u64 {
    page::slot_at(rid.slot()) as u64
}
