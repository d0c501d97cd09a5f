//! Sector writes that a kill of the process cannot tear.
//!
//! A real device writes each sector atomically: its power-loss protection
//! completes a sector in flight. The emulator writes a sector as 128 word
//! stores and then its code, so a process killed in between would leave a
//! sector that fails its check, turning an ordinary crash into a media
//! error (on the log's last page, which the host rewrites with every flush,
//! it would lose acknowledged commits). So every sector goes through a
//! journal slot in the image:
//!
//! ```text
//!  1  slot: new bytes, sector number, code      (slot layout: ndpdb_format::image::JournalSlot)
//!  2  slot: state = PENDING                     one word store: the write is now decided
//!  3  the sector's words, then its code
//!  4  slot: state = 0
//! ```
//!
//! Stores are ordered by release fences, and a killed process's stores are
//! a prefix of its program order, so a kill before 2 leaves the sector old,
//! and a kill after it leaves a pending slot that the next open writes again
//! (`Medium::replay`): the sector is wholly new. Each writer holds one slot
//! for a whole write command; at most `journal_slots` writes proceed at once.
//!
//! Writes shorter than a sector (a PE's NVM write) read, verify and merge
//! the sector first, under the sector's writer lock.
//!
//! This protects against a kill of the emulator's process, not against a
//! crash of the host's operating system, which may write the mapping's
//! pages back in any order between `Flush` commands.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};

use ndpdb_format::image::{JOURNAL_PENDING, JournalSlot, SLOT_STATE_AT, sector_code};
use parking_lot::{Condvar, Mutex};

use super::{Medium, SECTOR, SECTOR_SHIFT, SECTOR_WORDS, WORD, slot_words};
use crate::device::{KillPoint, SectorKill};
use crate::error::DeviceError;

/// Word of a slot's `state`.
const STATE_WORD: u64 = SLOT_STATE_AT as u64 / WORD;

/// The free journal slots, and the kill to simulate (crash testing).
pub(super) struct Journal {
    free: Mutex<Vec<u32>>,
    freed: Condvar,
    kill: Option<SectorKill>,
    /// Sector writes since the image was opened (counted only with a kill).
    writes: AtomicU64,
    /// The simulated kill has struck: nothing more reaches the medium.
    dead: AtomicBool,
}

impl Journal {
    pub(super) fn new(slots: u32, kill: Option<SectorKill>) -> Journal {
        Journal {
            free: Mutex::new((0..slots).rev().collect()),
            freed: Condvar::new(),
            kill,
            writes: AtomicU64::new(0),
            dead: AtomicBool::new(false),
        }
    }

    fn acquire(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock();
        loop {
            if let Some(slot) = free.pop() {
                return SlotGuard { journal: self, slot };
            }
            self.freed.wait(&mut free);
        }
    }
}

/// A journal slot held by one writer.
struct SlotGuard<'a> {
    journal: &'a Journal,
    slot: u32,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.journal.free.lock().push(self.slot);
        self.journal.freed.notify_one();
    }
}

/// The simulated kill struck in sector write `write`.
struct Killed(u64);

impl Medium {
    /// Writes bytes, each sector atomically. The caller checked the range.
    /// Fails on a read-only medium, when a partial sector's old bytes do not
    /// match their code, and once a simulated kill has struck.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), DeviceError> {
        if self.read_only {
            return Err(DeviceError::ReadOnly {
                path: self.path.clone(),
                what: format!("write {} bytes at medium address {addr}", data.len()),
            });
        }
        if data.is_empty() {
            return Ok(());
        }
        self.reserve(addr, data.len() as u64)?;
        let slot = self.journal.acquire();
        let mut done = 0;
        while done < data.len() {
            let at = addr + done as u64;
            let s = at >> SECTOR_SHIFT;
            let n = (((s + 1) * SECTOR - at) as usize).min(data.len() - done);
            let _lock = self.check.lock(s);
            let mut sector = [0u8; SECTOR as usize];
            if n == SECTOR as usize {
                sector.copy_from_slice(&data[done..done + n]);
            } else {
                sector = self.sector_locked(s).map_err(|b| self.media_error(b))?;
                let from = (at % SECTOR) as usize;
                sector[from..from + n].copy_from_slice(&data[done..done + n]);
            }
            self.commit(slot.slot, s, &sector).map_err(|Killed(write)| DeviceError::InjectedKill { write })?;
            self.check.mark(s);
            done += n;
        }
        Ok(())
    }

    /// Whether a simulated kill has struck.
    pub fn dead(&self) -> bool {
        self.journal.dead.load(Ordering::Relaxed)
    }

    /// Writes `data` and its code to sector `s` through journal slot `slot`
    /// (steps 1 to 4 above). The caller holds the sector's writer lock.
    fn commit(&self, slot: u32, s: u64, data: &[u8; SECTOR as usize]) -> Result<(), Killed> {
        if self.dead() {
            return Err(Killed(u64::MAX));
        }
        let write = match self.journal.kill {
            Some(_) => self.journal.writes.fetch_add(1, Ordering::Relaxed),
            None => u64::MAX,
        };
        let entry = JournalSlot { sector: s, code: sector_code(s, data), data: *data };
        let slot_at = self.journal_at + slot_words(slot);
        let body = entry.encode_body();
        let half = SECTOR_WORDS / 2;
        self.store_words(slot_at, &body[..4 * half]);
        self.stop(write, KillPoint::SlotHalf)?;
        self.store_words(slot_at + half as u64, &body[4 * half..]);
        fence(Ordering::Release);
        self.word(slot_at + STATE_WORD).store(JOURNAL_PENDING, Ordering::Relaxed);
        fence(Ordering::Release);
        self.stop(write, KillPoint::SlotWritten)?;
        let first = s * SECTOR_WORDS as u64;
        self.store_words(first, &data[..4 * half]);
        self.stop(write, KillPoint::SectorHalf)?;
        self.store_words(first + half as u64, &data[4 * half..]);
        self.stop(write, KillPoint::SectorWritten)?;
        self.code(s).store(entry.code, Ordering::Relaxed);
        fence(Ordering::Release);
        self.stop(write, KillPoint::CodeWritten)?;
        self.word(slot_at + STATE_WORD).store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Stores little-endian words from `bytes` (a multiple of 4) at word `at`.
    fn store_words(&self, at: u64, bytes: &[u8]) {
        for (i, w) in bytes.chunks_exact(WORD as usize).enumerate() {
            self.word(at + i as u64).store(u32::from_le_bytes(w.try_into().expect("4 bytes")), Ordering::Relaxed);
        }
    }

    /// Whether the simulated kill strikes sector write `write` at `point`:
    /// then nothing more is stored, as in a killed process.
    fn stop(&self, write: u64, point: KillPoint) -> Result<(), Killed> {
        match self.journal.kill {
            Some(k) if k.write == write && k.point == point => {
                self.journal.dead.store(true, Ordering::SeqCst);
                Err(Killed(write))
            }
            _ => Ok(()),
        }
    }

    /// Slot `slot`'s bytes up to and including its state.
    fn load_slot(&self, slot: u32) -> Vec<u8> {
        let at = self.journal_at + slot_words(slot);
        (0..=STATE_WORD).flat_map(|i| self.word(at + i).load(Ordering::Relaxed).to_le_bytes()).collect()
    }

    /// Whether any slot holds a write to finish.
    pub(super) fn journal_pending(&self) -> bool {
        let sectors = self.superblock.sectors();
        (0..self.superblock.journal_slots)
            .any(|k| matches!(JournalSlot::decode(&self.load_slot(k), sectors), Ok(Some(_))))
    }

    /// Finishes the sector writes that pending slots hold (idempotent, so a
    /// kill during replay is finished by the next open), and empties slots
    /// that are pending but damaged: the sector such a slot was for shows
    /// by its own code whether its write was torn. Returns the writes
    /// finished; fails only when the disk has no room for a sector's space.
    pub(super) fn replay(&self) -> Result<u32, DeviceError> {
        let sectors = self.superblock.sectors();
        let mut finished = 0;
        for k in 0..self.superblock.journal_slots {
            let state = self.word(self.journal_at + slot_words(k) + STATE_WORD);
            if state.load(Ordering::Relaxed) != JOURNAL_PENDING {
                continue;
            }
            if let Ok(Some(entry)) = JournalSlot::decode(&self.load_slot(k), sectors) {
                self.reserve(entry.sector * SECTOR, SECTOR)?;
                self.store_words(entry.sector * SECTOR_WORDS as u64, &entry.data);
                self.code(entry.sector).store(entry.code, Ordering::Relaxed);
                finished += 1;
            }
            fence(Ordering::Release);
            state.store(0, Ordering::Relaxed);
        }
        Ok(finished)
    }
}
