//! The device-defined programs every ndpdb device carries: the micro-benchmarks
//! of the hardware profiler (hybridNDP, section 3.1) and the in-situ transfer
//! benchmark of neoDBMS Table I. Parameters are little-endian u64s; outputs go
//! to memory range 0 when the host passes one.

use ndpdb_format::programs::PE_PAIR_BYTES;

use crate::error::DeviceError;
use crate::pe::{PeCtx, Program};

pub const BUILTIN: &[Program] = &[
    Program {
        name: "ndp.snapshot",
        description: "in-situ snapshot computation with aggregate or rows (neoDBMS); see ndp_snapshot.rs",
        run: crate::ndp_snapshot::run,
    },
    Program {
        name: "ndp.update",
        description: "update-NDP: UPDATE .. SET col = expr WHERE .. with locks in the coherent lock table (ccSLT); see ndp_update.rs",
        run: crate::ndp_snapshot::run_update,
    },
    Program {
        name: "kv.lookup",
        description: "in-storage B+-tree point lookups, nodes read through the mirror of the host pool (CBM); see kv_lookup.rs and docs/format/kv_lookup.md",
        run: crate::kv_lookup::run,
    },
    Program {
        name: "bench.lock-latency",
        description: "lock + unlock pairs in the coherent lock table; params: requests per PE, keys, seed, first ts, random (0/1); out: range 0, per request its modelled ps",
        run: lock_latency,
    },
    Program {
        name: "bench.insitu-transfers",
        description: "random in-situ medium transfers; params: transfers per PE, span bytes, seed, base address",
        run: insitu_transfers,
    },
    Program {
        name: "profile.medium-read",
        description: "random medium reads; params: count, bytes per read, seed, span bytes",
        run: medium_read,
    },
    Program {
        name: "profile.medium-write",
        description: "random medium writes of one transfer (NVM) or one page (flash); params: count, seed, base, span bytes",
        run: medium_write,
    },
    Program { name: "profile.memcpy", description: "device-DRAM memcpy; params: bytes, repetitions", run: memcpy },
    Program {
        name: "profile.compute",
        description: "floating-point kernel as PE compute; params: iterations",
        run: compute,
    },
];

/// A small, fast generator (SplitMix64): programs must not depend on host crates.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; n > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

fn out_pair(ctx: &mut PeCtx<'_>, a: u64, b: u64) -> Result<(), DeviceError> {
    if ctx.ranges() == 0 {
        return Ok(());
    }
    let pair = ndpdb_format::programs::encode_pe_pair(a, b);
    ctx.range_write(0, u64::from(ctx.pe()) * PE_PAIR_BYTES as u64, &pair)
}

fn span_units(ctx: &PeCtx<'_>, base: u64, span: u64, unit: u64) -> Result<u64, DeviceError> {
    let end = base.checked_add(span).filter(|e| *e <= ctx.capacity_bytes());
    if end.is_none() || span < unit || !base.is_multiple_of(unit) {
        return Err(ctx.fail(format!(
            "span {base}+{span} must lie within the {}-byte medium, start aligned to and hold at least one {unit}-byte unit",
            ctx.capacity_bytes()
        )));
    }
    Ok(span / unit)
}

/// Each PE reads `transfers` random transfer-sized units; output per PE:
/// (transfers done, XOR of the words read).
fn insitu_transfers(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    let transfers = ctx.param_u64(0)?;
    let span = ctx.param_u64(1)?;
    let seed = ctx.param_u64(2)?;
    let base = ctx.param_u64(3)?;
    let unit = ctx.transfer_bytes();
    let units = span_units(ctx, base, span, unit)?;
    let mut rng = SplitMix64::new(seed ^ (u64::from(ctx.pe()) << 32));
    let mut x = 0u64;
    if unit == 4 {
        const BATCH: usize = 64;
        let (mut addrs, mut words) = ([0u64; BATCH], [0u32; BATCH]);
        let mut left = transfers;
        while left > 0 {
            let n = left.min(BATCH as u64) as usize;
            for a in &mut addrs[..n] {
                *a = base + rng.below(units) * 4;
            }
            ctx.gather_u32(&addrs[..n], &mut words[..n])?;
            x = words[..n].iter().fold(x, |x, &w| x ^ u64::from(w));
            left -= n as u64;
        }
    } else {
        let mut buf = vec![0u8; unit as usize];
        for _ in 0..transfers {
            ctx.read(base + rng.below(units) * unit, &mut buf)?;
            x ^= u64::from(buf[0]);
        }
    }
    out_pair(ctx, transfers, x)
}

/// `count` random reads of `bytes` each, aligned to `bytes` (which must not
/// cross a page).
fn medium_read(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    let count = ctx.param_u64(0)?;
    let bytes = ctx.param_u64(1)?;
    let seed = ctx.param_u64(2)?;
    let span = ctx.param_u64(3)?;
    if bytes == 0 || bytes > ctx.page_bytes() || !ctx.page_bytes().is_multiple_of(bytes) {
        return Err(ctx.fail(format!("bytes per read must divide the page size {}; got {bytes}", ctx.page_bytes())));
    }
    let units = span_units(ctx, 0, span, bytes)?;
    let mut rng = SplitMix64::new(seed ^ u64::from(ctx.pe()));
    let mut buf = vec![0u8; bytes as usize];
    let mut x = 0u64;
    for _ in 0..count {
        ctx.read(rng.below(units) * bytes, &mut buf)?;
        x ^= u64::from(buf[0]);
    }
    out_pair(ctx, count, x)
}

fn medium_write(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    let count = ctx.param_u64(0)?;
    let seed = ctx.param_u64(1)?;
    let base = ctx.param_u64(2)?;
    let span = ctx.param_u64(3)?;
    let unit = ctx.transfer_bytes();
    let units = span_units(ctx, base, span, unit)?;
    let mut rng = SplitMix64::new(seed ^ u64::from(ctx.pe()));
    let data: Vec<u8> = (0..unit).map(|i| i as u8).collect();
    let page = ctx.page_bytes();
    for _ in 0..count {
        let addr = base + rng.below(units) * unit;
        if unit == page { ctx.write_page(addr / page, &data)? } else { ctx.write(addr, &data)? }
    }
    out_pair(ctx, count, 0)
}

fn memcpy(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    let bytes = ctx.param_u64(0)?;
    let reps = ctx.param_u64(1)?;
    let src = ctx.alloc(bytes)?;
    let mut dst = ctx.alloc(bytes)?;
    for _ in 0..reps {
        ctx.memcpy(&mut dst, &src);
    }
    out_pair(ctx, reps, u64::from(dst.first().copied().unwrap_or(0)))
}

fn compute(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    let iterations = ctx.param_u64(0)?;
    let r = ctx.compute(|| compute_kernel(iterations));
    out_pair(ctx, iterations, r.to_bits())
}

/// The profiler's compute kernel: a dependent chain of floating-point
/// multiply-adds. The host runs the same function to compare speeds.
pub fn compute_kernel(iterations: u64) -> f64 {
    let mut a = std::hint::black_box(1.0f64);
    let mut b = std::hint::black_box(0.5f64);
    for _ in 0..iterations {
        a = a * 1.000_000_1 + b;
        b = b * 0.999_999_9 - a * 1e-9;
    }
    std::hint::black_box(a + b)
}

/// ccSLT Exp. 1 and 3 on the device: each PE locks and unlocks `requests`
/// keys of `0..keys` (in order, or drawn at random), as transaction
/// `first_ts + pe`, and writes each pair's modelled latency (ps) to range 0
/// at `8 * (pe * requests + i)`. A queued request polls until it holds the
/// lock; that wait is part of its latency.
fn lock_latency(ctx: &mut PeCtx<'_>) -> Result<(), DeviceError> {
    use ndpdb_locktable::{Attempt, LockKey, Poll};
    let (requests, keys, seed, first_ts, random) =
        (ctx.param_u64(0)?, ctx.param_u64(1)?.max(1), ctx.param_u64(2)?, ctx.param_u64(3)?, ctx.param_u64(4)? != 0);
    let pe = u64::from(ctx.pe());
    let ts = first_ts + pe;
    let mut rng = SplitMix64::new(seed ^ (pe + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut latencies = Vec::with_capacity(requests as usize);
    for i in 0..requests {
        let k = if random { rng.next_u64() % keys } else { (pe * requests + i) % keys };
        let key = LockKey::new(k, 1);
        let mut ps = 0;
        'acquire: loop {
            let w = ctx.coherent()?;
            let attempt = w.table().try_acquire_with(w, key, ts).map_err(|e| ctx.fail(e.to_string()))?;
            ps += ctx.settle_coherent();
            match attempt {
                Attempt::Acquired => break,
                Attempt::AlreadyHeld => return Err(ctx.fail(format!("transaction {ts} already holds key {k}"))),
                Attempt::Full => std::thread::yield_now(),
                Attempt::Queued { .. } => loop {
                    let w = ctx.coherent()?;
                    let poll = w.table().poll_with(w, key, ts).map_err(|e| ctx.fail(e.to_string()))?;
                    ps += ctx.settle_coherent();
                    match poll {
                        Poll::Head => break 'acquire,
                        Poll::Waiting { .. } => std::hint::spin_loop(),
                        Poll::Absent => return Err(ctx.fail(format!("request of {ts} for key {k} vanished"))),
                    }
                },
            }
        }
        let w = ctx.coherent()?;
        w.table().release_with(w, key, ts).map_err(|e| ctx.fail(e.to_string()))?;
        ps += ctx.settle_coherent();
        latencies.push(ps);
    }
    ctx.range_write(0, pe * requests * 8, &ndpdb_format::programs::encode_latencies(&latencies))
}
