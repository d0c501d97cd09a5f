//! The host's log ring as the mirror model tests drive it: a stream of log
//! bytes, of which the first `durable` are on the device, written to ring
//! pages `first..first + pages` of `page` bytes each.

use ndpdb_device::mirror::Mirror;

/// Makes the log durable to its end: writes the ring pages that hold
/// bytes from `durable` on, in reverse order when `reverse` (two command
/// workers may complete them so), and returns the new durable end.
pub fn flush(stream: &[u8], durable: u64, (page, first, pages): (u64, u64, u64), reverse: bool, m: &mut Mirror) -> u64 {
    let end = stream.len() as u64;
    if end == durable {
        return durable;
    }
    let mut order: Vec<u64> = (durable / page..=(end - 1) / page).collect();
    if reverse {
        order.reverse();
    }
    for k in order {
        let mut data = vec![0u8; page as usize];
        let lo = (k * page) as usize;
        let hi = (lo + page as usize).min(stream.len());
        data[..hi - lo].copy_from_slice(&stream[lo..hi]);
        m.on_page_write(first + k % pages, &data);
    }
    end
}
