//! The server's table of live connections: each connection's backend key
//! (pid, secret) and its session's cancel flag, for cancel requests that
//! arrive on a new socket, as PostgreSQL's do; and each session's
//! activity, which `pg_stat_activity` lists (the registry is every
//! session's [`ActivitySource`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use ndpdb_sql::catalog::system::{ActivitySource, SessionActivity};
use parking_lot::Mutex;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;

#[derive(Default)]
pub struct Registry {
    live: Mutex<HashMap<i32, (i32, Arc<AtomicBool>)>>,
    /// The sessions' activity cells, by backend pid.
    activity: Mutex<BTreeMap<i32, Arc<Mutex<SessionActivity>>>>,
    seed: u64,
}

impl Registry {
    pub fn new(seed: u64) -> Registry {
        Registry { live: Mutex::default(), activity: Mutex::default(), seed }
    }

    /// The secret key of connection `id`: unguessable without the seed
    /// (a splitmix64 of the seed and the id).
    pub fn secret_for(&self, id: i32) -> i32 {
        let mut z = self.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as i32
    }

    pub fn register(&self, id: i32, secret: i32, cancel: Arc<AtomicBool>) {
        self.live.lock().insert(id, (secret, cancel));
    }

    /// Lists connection `id`'s session in `pg_stat_activity`.
    pub fn track(&self, id: i32, activity: Arc<Mutex<SessionActivity>>) {
        self.activity.lock().insert(id, activity);
    }

    pub fn unregister(&self, id: i32) {
        self.live.lock().remove(&id);
        self.activity.lock().remove(&id);
    }

    /// Connections registered now.
    pub fn len(&self) -> usize {
        self.live.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cancels every running statement (shutdown).
    pub fn cancel_all(&self) {
        for (_, flag) in self.live.lock().values() {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

impl ActivitySource for Registry {
    /// The live sessions by pid. Each cell is locked on its own (briefly):
    /// never two at once, never while the registry's map is locked.
    fn sessions(&self) -> Vec<SessionActivity> {
        let cells: Vec<_> = self.activity.lock().values().cloned().collect();
        cells.iter().map(|c| c.lock().clone()).collect()
    }
}

#[async_trait]
impl CancelHandler for Registry {
    async fn on_cancel_request(&self, req: CancelRequest) {
        // A cancel request comes on a connection of its own, before any
        // protocol version is negotiated: pgwire then decodes the key as
        // protocol 3.2's bytes, not 3.0's i32, so compare by value.
        let Some(secret) = req.secret_key.as_i32() else { return };
        if let Some((s, flag)) = self.live.lock().get(&req.pid)
            && *s == secret
        {
            crate::log::info(format_args!("cancel request for connection {}", req.pid));
            flag.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use pgwire::messages::startup::SecretKey;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().expect("a runtime").block_on(f)
    }

    fn request(pid: i32, key: SecretKey) -> CancelRequest {
        CancelRequest::new(pid, key)
    }

    #[test]
    fn a_cancel_request_sets_the_flag_whichever_way_its_key_was_decoded() {
        let r = Registry::new(42);
        let flag = Arc::new(AtomicBool::new(false));
        let secret = r.secret_for(7);
        r.register(7, secret, flag.clone());
        // A wrong key or pid does nothing.
        block_on(r.on_cancel_request(request(7, SecretKey::I32(secret ^ 1))));
        block_on(r.on_cancel_request(request(8, SecretKey::I32(secret))));
        assert!(!flag.load(Ordering::Relaxed));
        // The key as a fresh connection decodes it (protocol 3.2: bytes).
        let bytes = Bytes::copy_from_slice(&secret.to_be_bytes());
        block_on(r.on_cancel_request(request(7, SecretKey::Bytes(bytes))));
        assert!(flag.load(Ordering::Relaxed), "a 3.2-decoded key must match");
        flag.store(false, Ordering::Relaxed);
        block_on(r.on_cancel_request(request(7, SecretKey::I32(secret))));
        assert!(flag.load(Ordering::Relaxed));
    }
}
