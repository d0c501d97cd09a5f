//! A store over pages and a log in memory, reopened the way a restart or a
//! crash would, and checked against a model.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use ndpdb_bufmgr::{BufferPool, MemoryPageIo, PoolConfig};
use ndpdb_kv::{KvLog, KvOptions, KvStore, MemoryKvLog, PoolLog, RecoveryStats};

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

pub struct Harness {
    pub io: Arc<MemoryPageIo>,
    pub log: Arc<MemoryKvLog>,
    store: Option<KvStore>,
    pub frames: usize,
    pub page_bytes: usize,
    pub options: KvOptions,
}

pub fn pool(io: &Arc<MemoryPageIo>, log: &Arc<MemoryKvLog>, frames: usize, page_bytes: usize) -> Arc<BufferPool> {
    let kv_log: Arc<dyn KvLog> = log.clone();
    let config = PoolConfig { frames, page_bytes };
    Arc::new(BufferPool::new(config, io.clone(), Arc::new(PoolLog(kv_log))).unwrap())
}

impl Harness {
    pub fn new(page_bytes: usize, frames: usize, log: MemoryKvLog, options: KvOptions) -> Harness {
        let io = Arc::new(MemoryPageIo::new(page_bytes, 1 << 20));
        let log = Arc::new(log);
        let store = KvStore::create(pool(&io, &log, frames, page_bytes), log.clone(), options).unwrap();
        Harness { io, log, store: Some(store), frames, page_bytes, options }
    }

    pub fn kv(&self) -> &KvStore {
        self.store.as_ref().expect("open")
    }

    /// Drops the pool (without writing anything back) and opens the store
    /// again from what the file and the durable log hold.
    pub fn reopen(&mut self) -> RecoveryStats {
        let root = self.kv().root();
        self.store = None;
        let pool = pool(&self.io, &self.log, self.frames, self.page_bytes);
        let (store, stats) = KvStore::open(pool, &*self.io, self.log.clone(), root, self.options).unwrap();
        self.store = Some(store);
        stats
    }

    /// A restart: everything written back first.
    pub fn restart(&mut self) -> RecoveryStats {
        self.kv().checkpoint().unwrap();
        self.reopen()
    }

    /// A crash: the log loses what was not flushed; the pool's dirty pages
    /// are lost with it.
    pub fn crash(&mut self) -> RecoveryStats {
        self.log.crash();
        self.reopen()
    }

    /// The store holds exactly `model`: by scanning, and key by key; and the
    /// tree passes its integrity check.
    pub fn check(&self, model: &Model) {
        let shape = self.kv().check().unwrap_or_else(|e| panic!("integrity check: {e}"));
        assert_eq!(shape.entries, model.len() as u64);
        let all: Vec<_> = self.kv().scan(b"").map(Result::unwrap).collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if all != want {
            let first = all.iter().zip(&want).position(|(a, b)| a != b);
            panic!("the store holds {} entries, the model {}; first difference at {first:?}", all.len(), want.len());
        }
        for (k, v) in model {
            assert_eq!(self.kv().get(k).unwrap().as_ref(), Some(v), "key {k:?}");
        }
    }
}

/// A key from `n`: 8 bytes that sort like `n`, then `n % 7` bytes more, so
/// keys have different lengths and share prefixes.
pub fn key(n: u64) -> Vec<u8> {
    let mut k = n.to_be_bytes().to_vec();
    k.extend(std::iter::repeat_n(b'k', (n % 7) as usize));
    k
}

/// A value that names its key and version, `len` bytes long.
pub fn value(n: u64, version: u64, len: usize) -> Vec<u8> {
    let seed = format!("{n}/{version}/");
    seed.bytes().cycle().take(len).collect()
}
