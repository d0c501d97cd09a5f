//! The block stack's page reads: logical pages mapped to physical ones and
//! read over the link with read-ahead, one page per `PageRead` or a run of
//! physically consecutive pages per `PageReadRun`, each page verified.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;

use ndpdb_device::{Command, QueuePair, RUN_BYTES_MAX, Reply};
use ndpdb_format::page;

use crate::error::StoreError;
use crate::store::Store;

type Result<T> = std::result::Result<T, StoreError>;

/// Pages read by one worker: (lpn, bytes).
pub(crate) type PageList = Vec<(u64, Vec<u8>)>;

/// Page reads a block-stack worker keeps outstanding.
pub(crate) const READ_AHEAD: usize = 32;

/// `ppns` cut into runs (index ranges) of physically consecutive pages, at
/// most `max` each, in order.
fn runs(ppns: &[u64], max: usize) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for i in 0..ppns.len() {
        match runs.last_mut() {
            Some(r) if r.len() < max && ppns[i] == ppns[i - 1] + 1 => r.end = i + 1,
            _ => runs.push(i..i + 1),
        }
    }
    runs
}

/// Which of a queue pair's completed page reads the block stack takes next.
#[derive(Clone, Copy)]
pub(crate) enum Order {
    /// The earliest due among those the device has finished (real clock:
    /// what arrives first is used first).
    Completion,
    /// The oldest submitted (virtual clock: the same order in every run).
    Submission,
}

impl Store {
    /// Reads and verifies `lpns`, keeping up to `ahead` page reads
    /// outstanding on `qp` as a DBMS's read-ahead keeps a disk busy: the
    /// medium and the link work on the next pages while a page travels, and
    /// the emulator's device workers find commands waiting instead of being
    /// woken for each one. `order` says which completion to take next.
    /// Pages are read one per `PageRead` command.
    pub(crate) fn read_pages_ahead(
        &self,
        lpns: &[u64],
        qp: &mut QueuePair,
        ahead: usize,
        order: Order,
    ) -> Result<PageList> {
        self.read_pages(lpns, qp, ahead, order, 1)
    }

    /// Reads and verifies `lpns` in runs of physically consecutive pages
    /// of up to `RUN_BYTES_MAX` (one `PageReadRun` each, a single page one
    /// `PageRead`), with two runs' worth of pages, and at least
    /// [`READ_AHEAD`], outstanding; in submission order.
    pub(crate) fn read_page_runs(&self, lpns: &[u64], qp: &mut QueuePair) -> Result<PageList> {
        let run = (RUN_BYTES_MAX as usize / self.page_bytes()).max(1);
        self.read_pages(lpns, qp, 2 * run.max(READ_AHEAD), Order::Submission, run)
    }

    /// [`Store::read_pages_ahead`], with runs of up to `run_pages`
    /// physically consecutive pages read by one `PageReadRun` command each
    /// (`ahead` still counts pages). Pages come back in the order of their
    /// runs' completions (`order`), each run's in page order.
    fn read_pages(
        &self,
        lpns: &[u64],
        qp: &mut QueuePair,
        ahead: usize,
        order: Order,
        run_pages: usize,
    ) -> Result<PageList> {
        let _reading = self.page_reader();
        let (lpns, ppns) = self.mapped(lpns)?;
        let runs = runs(&ppns, run_pages.max(1));
        let mut pages = Vec::with_capacity(lpns.len());
        let mut run_of: HashMap<u64, Range<usize>> = HashMap::new();
        let mut submitted = VecDeque::with_capacity(ahead);
        let (mut next, mut in_flight) = (0, 0);
        while pages.len() < lpns.len() {
            while next < runs.len() && (in_flight == 0 || in_flight + runs[next].len() <= ahead.max(1)) {
                let run = runs[next].clone();
                let cmd = match run.len() {
                    1 => Command::PageRead { ppn: ppns[run.start], host_addr: None },
                    n => Command::PageReadRun { first_ppn: ppns[run.start], pages: n as u32 },
                };
                let id = qp.submit(cmd)?;
                in_flight += run.len();
                run_of.insert(id, run);
                submitted.push_back(id);
                next += 1;
            }
            let c = match order {
                Order::Completion => qp.reap()?.expect("page reads are outstanding"),
                Order::Submission => qp.wait(submitted.pop_front().expect("page reads are outstanding"))?,
            };
            let run = run_of.remove(&c.id).expect("a completion of this queue pair's page reads");
            in_flight -= run.len();
            let data = match c.result? {
                Reply::Data(page) => vec![page],
                Reply::Pages(pages) => pages,
                other => return Err(StoreError::Corrupt(format!("a page read answered {other:?}"))),
            };
            if data.len() != run.len() {
                return Err(StoreError::Corrupt(format!("a read of {} pages returned {}", run.len(), data.len())));
            }
            for (i, page) in run.zip(data) {
                page::verify(&page)
                    .map_err(|e| StoreError::Corrupt(format!("page {} (physical {}): {e}", lpns[i], ppns[i])))?;
                pages.push((lpns[i], page));
            }
        }
        Ok(pages)
    }

    /// `lpns` with their physical pages, less those GC unmapped since the
    /// caller's view was taken.
    fn mapped(&self, lpns: &[u64]) -> Result<(Vec<u64>, Vec<u64>)> {
        let m = self.maps.lock();
        let mut mapped = (Vec::with_capacity(lpns.len()), Vec::with_capacity(lpns.len()));
        for &lpn in lpns {
            match m.l2p.get(lpn as usize) {
                None => return Err(StoreError::Corrupt(format!("logical page {lpn} does not exist"))),
                Some(&u64::MAX) => {} // unmapped by GC since the view was taken
                Some(&ppn) => {
                    mapped.0.push(lpn);
                    mapped.1.push(ppn);
                }
            }
        }
        Ok(mapped)
    }
}

#[cfg(test)]
mod run_tests {
    use super::runs;

    #[test]
    fn runs_are_consecutive_pages_up_to_the_limit() {
        assert_eq!(runs(&[], 4), vec![]);
        assert_eq!(runs(&[7], 4), vec![0..1]);
        assert_eq!(runs(&[1, 2, 3, 4, 5, 9, 10, 2, 3], 4), vec![0..4, 4..5, 5..7, 7..9]);
        assert_eq!(runs(&[5, 4, 3], 4), vec![0..1, 1..2, 2..3], "descending pages are not a run");
        assert_eq!(runs(&[1, 2, 3], 1), vec![0..1, 1..2, 2..3]);
    }
}
