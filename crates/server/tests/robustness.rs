//! Bad clients on raw TCP: malformed and truncated messages, lengths up to
//! 4 GiB, random bytes (fixed seeds), a startup with an unknown protocol
//! version, and a client that sends queries with big results and stops
//! reading. Each bad connection gets an error or is closed; the server's
//! memory (this process's RSS: the server runs in it) stays bounded; a
//! well-behaved session answers between every step.

mod common;
mod raw;

use common::TestServer;
use raw::{Msg, PROTOCOL_3_0, Raw};

/// The process's resident set in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Reads until the server closes; it may send an ErrorResponse first.
fn error_or_closed(r: &mut Raw) -> Vec<Msg> {
    r.finish_writing();
    let msgs = r.drain();
    assert!(
        msgs.iter().all(|m| matches!(m.tag, b'E' | b'N' | b'S' | b'K' | b'R' | b'Z' | b'I')),
        "a bad connection got a result: {msgs:?}"
    );
    msgs
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const ROWS: usize = 2000;

fn still_answers(good: &mut Raw) {
    assert_eq!(good.rows("SELECT count(*) FROM t"), vec![vec![Some(ROWS.to_string())]]);
}

#[test]
fn bad_clients_get_an_error_or_are_closed_and_others_keep_working() {
    let s = TestServer::start(100);
    let mut good = Raw::startup(s.addr);
    good.rows("CREATE TABLE t (id integer PRIMARY KEY, pad text)");
    let pad = "x".repeat(1000);
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(500) {
        let values: Vec<String> = chunk.iter().map(|i| format!("({i}, '{pad}')")).collect();
        good.rows(&format!("INSERT INTO t VALUES {}", values.join(",")));
    }
    still_answers(&mut good);
    let rss0 = rss_kib();

    // Malformed: a length below the minimum, an unknown message type.
    for bytes in [&[b'Q', 0, 0, 0, 3][..], &[b'Q', 0, 0, 0, 0], b"!\0\0\0\x08abcd"] {
        let mut r = Raw::startup(s.addr);
        r.write(bytes);
        error_or_closed(&mut r);
        still_answers(&mut good);
    }
    // Truncated: the length promises more than comes.
    let mut r = Raw::startup(s.addr);
    r.write(&[b'Q', 0, 0, 4, 0, b'S', b'E', b'L']);
    error_or_closed(&mut r);
    still_answers(&mut good);
    // Lengths up to 4 GiB, after the startup and in the startup packet.
    for len in [u32::MAX, 0x8000_0000, 0x7fff_ffff, 1 << 30, 100 << 20] {
        let mut r = Raw::startup(s.addr);
        let mut msg = vec![b'Q'];
        msg.extend_from_slice(&len.to_be_bytes());
        msg.extend_from_slice(b"SELECT 1");
        r.write(&msg);
        error_or_closed(&mut r);
        let mut r = Raw::connect(s.addr);
        let mut startup = len.to_be_bytes().to_vec();
        startup.extend_from_slice(&PROTOCOL_3_0.to_be_bytes());
        r.write(&startup);
        error_or_closed(&mut r);
        still_answers(&mut good);
    }
    // Unknown protocol versions in the startup packet.
    for version in [2 << 16, 4 << 16, 1234, -1] {
        let mut r = Raw::connect(s.addr);
        r.send_startup(version);
        let msgs = error_or_closed(&mut r);
        assert!(msgs.iter().all(|m| m.tag != b'Z'), "version {version:#x} was accepted: {msgs:?}");
        still_answers(&mut good);
    }
    // Random bytes, before and after the startup.
    for seed in 1..=24u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let len = 1 + (rng.next() % 4096) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let mut r = if seed % 2 == 0 { Raw::connect(s.addr) } else { Raw::startup(s.addr) };
        r.write(&bytes);
        error_or_closed(&mut r);
        still_answers(&mut good);
    }
    // A client that asks for 400 MB of results and stops reading.
    let mut stuck = Raw::startup(s.addr);
    for _ in 0..200 {
        if !stuck.query("SELECT * FROM t") {
            break;
        }
    }
    for _ in 0..5 {
        still_answers(&mut good);
    }
    let grown_mib = rss_kib().saturating_sub(rss0) / 1024;
    assert!(grown_mib < 200, "the server's memory grew by {grown_mib} MiB");
    drop(stuck);
    still_answers(&mut good);
}
