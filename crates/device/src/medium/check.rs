//! Reading the medium through its check codes: every byte the device reads,
//! for the host or for a PE, comes from a sector that matched its code;
//! a sector that does not is a [`BadSector`] and none of its bytes is
//! returned (a real device's ECC reporting an unrecovered read error).
//!
//! Verifying a sector costs a CRC of its 520 bytes, far more than the
//! 4-byte PE read it guards, so each sector is verified once: a bitmap in
//! host memory holds, per sector, "matches its code". Its bits start clear
//! when an image is opened (set when it is created) and are set by a
//! successful verification and by every write, which computes the code of
//! the bytes it writes. A read whose sectors' bits are set reads the words
//! directly; the check is one bit test.
//!
//! ```text
//!  read(addr..end) ─► sector bits set? ── yes ─► load the words from the map
//!                           │ no
//!                           ▼
//!          copy sector + code under the stripe's sequence number,
//!          CRC(sector number ++ bytes) == code? ── no ─► BadSector (nothing returned)
//!                           │ yes
//!                           ▼
//!          set the bit, return the bytes from the verified copy
//! ```
//!
//! Writers of a sector are serialized by a lock per stripe of sectors whose
//! word is also a sequence number (odd while a write is in progress), so a
//! verification that overlaps a write retries instead of reporting damage
//! that is only a write half done. A plain read that overlaps a write of the
//! same sector may see a mix of old and new words, as overlapping commands
//! may on a real device.
//!
//! The work is the emulator's, not the device's: it charges nothing to the
//! model and counts nothing (`docs/device-model.md`, "Check codes").

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};

use ndpdb_format::image::sector_code;

use super::{Medium, SECTOR, SECTOR_SHIFT, SECTOR_WORDS, WORD};
use crate::error::DeviceError;

/// A sector whose bytes do not match its check code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadSector {
    /// Sector number (medium address / 512).
    pub sector: u64,
}

/// Stripes of sectors that share a writer lock; a power of two.
const STRIPES: usize = 4096;

/// The verified bitmap and the stripe locks.
pub(super) struct Check {
    verified: Box<[AtomicU64]>,
    /// Sectors whose bit is clear; once none is, `complete` spares readers
    /// the bit tests (a new image, or every sector read since opening).
    unverified: AtomicU64,
    complete: AtomicBool,
    stripes: Box<[AtomicU64]>,
}

impl Check {
    /// For `sectors` sectors, all verified or none.
    pub(super) fn new(sectors: u64, verified: bool) -> Result<Check, DeviceError> {
        let words = sectors.div_ceil(64);
        let mut bits = atomics(words, if verified { u64::MAX } else { 0 })?;
        if !verified && !sectors.is_multiple_of(64) {
            // Bits past the last sector never get set by a read: set them now.
            *bits[words as usize - 1].get_mut() = u64::MAX << (sectors % 64);
        }
        Ok(Check {
            verified: bits,
            unverified: AtomicU64::new(if verified { 0 } else { sectors }),
            complete: AtomicBool::new(verified),
            stripes: atomics(STRIPES as u64, 0)?,
        })
    }

    #[inline(always)]
    pub(super) fn is_verified(&self, s: u64) -> bool {
        self.verified[(s >> 6) as usize].load(Ordering::Relaxed) & (1 << (s & 63)) != 0
    }

    /// Whether every sector is verified.
    #[inline(always)]
    fn complete(&self) -> bool {
        self.complete.load(Ordering::Relaxed)
    }

    /// Whether sectors `first..=last` are all verified: a bit test for
    /// a span of one or two sectors, whole bitmap words for longer ones.
    #[inline(always)]
    fn all_verified(&self, first: u64, last: u64) -> bool {
        if self.complete() {
            return true;
        }
        if last <= first + 1 {
            return self.is_verified(first) && self.is_verified(last);
        }
        self.span_verified(first, last)
    }

    fn span_verified(&self, first: u64, last: u64) -> bool {
        (first >> 6..=last >> 6).all(|w| {
            let lo = if w == first >> 6 { first & 63 } else { 0 };
            let hi = if w == last >> 6 { last & 63 } else { 63 };
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            self.verified[w as usize].load(Ordering::Relaxed) & mask == mask
        })
    }

    pub(super) fn mark(&self, s: u64) {
        let bit = 1 << (s & 63);
        if self.verified[(s >> 6) as usize].fetch_or(bit, Ordering::Relaxed) & bit == 0
            && self.unverified.fetch_sub(1, Ordering::Relaxed) == 1
        {
            self.complete.store(true, Ordering::Relaxed);
        }
    }

    fn stripe(&self, s: u64) -> &AtomicU64 {
        &self.stripes[s as usize & (STRIPES - 1)]
    }

    /// Takes sector `s`'s writer lock (its stripe's sequence number made odd).
    pub(super) fn lock(&self, s: u64) -> StripeGuard<'_> {
        let stripe = self.stripe(s);
        let mut spins = 0u32;
        loop {
            let seq = stripe.load(Ordering::Relaxed);
            if seq & 1 == 0 && stripe.compare_exchange_weak(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                // A reader that sees any of the write's words sees the odd number.
                fence(Ordering::Release);
                return StripeGuard { stripe };
            }
            backoff(&mut spins);
        }
    }
}

/// A held stripe lock; dropping it ends the write (the number made even).
pub(super) struct StripeGuard<'a> {
    stripe: &'a AtomicU64,
}

impl Drop for StripeGuard<'_> {
    fn drop(&mut self) {
        self.stripe.fetch_add(1, Ordering::Release);
    }
}

fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// `n` atomics holding `value`, or `HostMemory`.
fn atomics(n: u64, value: u64) -> Result<Box<[AtomicU64]>, DeviceError> {
    let bytes = n * 8;
    let len = usize::try_from(n).map_err(|_| DeviceError::HostMemory { bytes })?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| DeviceError::HostMemory { bytes })?;
    v.extend((0..len).map(|_| AtomicU64::new(value)));
    Ok(v.into_boxed_slice())
}

impl Medium {
    /// Sector `s`'s bytes and stored code, as they are now.
    pub(super) fn load_sector(&self, s: u64) -> ([u8; SECTOR as usize], u32) {
        let mut data = [0u8; SECTOR as usize];
        let first = s * SECTOR_WORDS as u64;
        for (i, b) in data.chunks_exact_mut(WORD as usize).enumerate() {
            b.copy_from_slice(&self.word(first + i as u64).load(Ordering::Relaxed).to_le_bytes());
        }
        (data, self.code(s).load(Ordering::Relaxed))
    }

    /// Sector `s`'s bytes, verified against its code; the caller holds the
    /// sector's writer lock.
    pub(super) fn sector_locked(&self, s: u64) -> Result<[u8; SECTOR as usize], BadSector> {
        let (data, code) = self.load_sector(s);
        if !self.check.is_verified(s) {
            if sector_code(s, &data) != code {
                return Err(BadSector { sector: s });
            }
            self.check.mark(s);
        }
        Ok(data)
    }

    /// Sector `s`'s bytes, verified against its code. A copy taken while a
    /// write of the sector was in progress is taken again.
    #[cold]
    #[inline(never)]
    fn verify(&self, s: u64) -> Result<[u8; SECTOR as usize], BadSector> {
        let stripe = self.check.stripe(s);
        let mut spins = 0u32;
        loop {
            let before = stripe.load(Ordering::Acquire);
            if before & 1 == 0 {
                let (data, code) = self.load_sector(s);
                fence(Ordering::Acquire);
                if stripe.load(Ordering::Relaxed) == before {
                    if sector_code(s, &data) != code {
                        return Err(BadSector { sector: s });
                    }
                    // Writes set the bit too, after writing bytes and code together,
                    // so a set bit is right whichever of the two came last.
                    self.check.mark(s);
                    return Ok(data);
                }
            }
            backoff(&mut spins);
        }
    }

    /// One aligned 32-bit word. The caller checked the range.
    #[inline(always)]
    pub fn read_word(&self, addr: u64) -> Result<u32, BadSector> {
        debug_assert_eq!(addr % WORD, 0);
        if self.check.complete() || self.check.is_verified(addr >> SECTOR_SHIFT) {
            return Ok(self.word(addr / WORD).load(Ordering::Relaxed));
        }
        let data = self.verify(addr >> SECTOR_SHIFT)?;
        let at = (addr % SECTOR) as usize;
        Ok(u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes")))
    }

    /// Consecutive aligned words, at least one. The caller checked the range.
    #[inline(always)]
    pub fn read_words(&self, addr: u64, out: &mut [u32]) -> Result<(), BadSector> {
        debug_assert!(addr.is_multiple_of(WORD) && !out.is_empty());
        let last = addr + WORD * out.len() as u64 - 1;
        if self.check.all_verified(addr >> SECTOR_SHIFT, last >> SECTOR_SHIFT) {
            let first = addr / WORD;
            for (i, o) in out.iter_mut().enumerate() {
                *o = self.word(first + i as u64).load(Ordering::Relaxed);
            }
            return Ok(());
        }
        self.read_words_checked(addr, out)
    }

    #[cold]
    #[inline(never)]
    fn read_words_checked(&self, addr: u64, out: &mut [u32]) -> Result<(), BadSector> {
        let mut done = 0;
        while done < out.len() {
            let at = addr + WORD * done as u64;
            let s = at >> SECTOR_SHIFT;
            let n = (((s + 1) * SECTOR - at) / WORD).min((out.len() - done) as u64) as usize;
            let data = self.verify(s)?;
            let from = (at % SECTOR) as usize;
            for (o, b) in out[done..done + n].iter_mut().zip(data[from..].chunks_exact(4)) {
                *o = u32::from_le_bytes(b.try_into().expect("4 bytes"));
            }
            done += n;
        }
        Ok(())
    }

    /// Aligned words at `addrs`, one each, into `out` (as long). The caller
    /// checked the addresses.
    #[inline]
    pub fn gather(&self, addrs: &[u64], out: &mut [u32]) -> Result<(), BadSector> {
        debug_assert_eq!(addrs.len(), out.len());
        if self.check.complete() {
            for (o, &a) in out.iter_mut().zip(addrs) {
                *o = self.word(a / WORD).load(Ordering::Relaxed);
            }
            return Ok(());
        }
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = self.read_word(a)?;
        }
        Ok(())
    }

    /// Copies medium bytes out, sector by sector. The caller checked the range.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), BadSector> {
        if buf.is_empty() {
            return Ok(());
        }
        let last = addr + buf.len() as u64 - 1;
        if self.check.all_verified(addr >> SECTOR_SHIFT, last >> SECTOR_SHIFT) {
            self.copy_out(addr, buf);
            return Ok(());
        }
        self.read_checked(addr, buf)
    }

    #[cold]
    #[inline(never)]
    fn read_checked(&self, addr: u64, buf: &mut [u8]) -> Result<(), BadSector> {
        let mut done = 0;
        while done < buf.len() {
            let at = addr + done as u64;
            let s = at >> SECTOR_SHIFT;
            let n = (((s + 1) * SECTOR - at) as usize).min(buf.len() - done);
            let out = &mut buf[done..done + n];
            if self.check.is_verified(s) {
                self.copy_out(at, out);
            } else {
                let from = (at % SECTOR) as usize;
                out.copy_from_slice(&self.verify(s)?[from..from + n]);
            }
            done += n;
        }
        Ok(())
    }

    /// Copies bytes of verified sectors out of the map.
    fn copy_out(&self, addr: u64, buf: &mut [u8]) {
        if addr.is_multiple_of(WORD) {
            // Whole words first, then a partial tail.
            let mut chunks = buf.chunks_exact_mut(WORD as usize);
            let mut at = addr / WORD;
            for c in &mut chunks {
                c.copy_from_slice(&self.word(at).load(Ordering::Relaxed).to_le_bytes());
                at += 1;
            }
            let tail = chunks.into_remainder();
            if !tail.is_empty() {
                let n = tail.len();
                tail.copy_from_slice(&self.word(at).load(Ordering::Relaxed).to_le_bytes()[..n]);
            }
            return;
        }
        let mut at = addr;
        let mut out = 0;
        while out < buf.len() {
            let w = self.word(at / WORD).load(Ordering::Relaxed).to_le_bytes();
            let skip = (at % WORD) as usize;
            let n = (WORD as usize - skip).min(buf.len() - out);
            buf[out..out + n].copy_from_slice(&w[skip..skip + n]);
            out += n;
            at += n as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `all_verified` agrees with testing each bit, for spans within and
    /// across bitmap words, and `complete` follows the last mark.
    #[test]
    fn spans_agree_with_single_bits() {
        let sectors = 200;
        let check = Check::new(sectors, false).unwrap();
        let marked: Vec<u64> = (0..sectors).filter(|s| s % 7 != 3).collect();
        for &s in &marked {
            check.mark(s);
        }
        for first in 0..sectors {
            for last in first..sectors.min(first + 140) {
                let each = (first..=last).all(|s| check.is_verified(s));
                assert_eq!(check.all_verified(first, last), each, "{first}..={last}");
            }
        }
        assert!(!check.complete());
        for s in (0..sectors).filter(|s| s % 7 == 3) {
            check.mark(s);
            check.mark(s);
        }
        assert!(check.complete(), "every sector marked once counts");
        assert!(Check::new(sectors, true).unwrap().complete());
    }

    /// A check that overlaps writes of the same sector retries: it returns
    /// one write's bytes whole, never a false media error.
    #[test]
    fn checks_racing_writes_see_whole_sectors() {
        let dir = tempfile::tempdir().unwrap();
        let profile = crate::profile::Profile::load("u280-nvm").unwrap();
        let mode = super::super::OpenMode::default();
        let medium = Medium::create(&dir.path().join("device.img"), &profile, 1 << 20, mode).unwrap();
        let s = 3;
        let addr = s * SECTOR;
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for i in 0..100_000u32 {
                    medium.write(addr, &[i as u8; SECTOR as usize]).unwrap();
                }
                done.store(true, Ordering::Relaxed);
            });
            while !done.load(Ordering::Relaxed) {
                let data = medium.verify(s).expect("no false media error");
                assert!(data.iter().all(|&b| b == data[0]), "a check returned a torn sector");
            }
        });
    }
}
