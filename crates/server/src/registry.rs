//! The server's table of live connections: each connection's backend key
//! (pid, secret) and its session's cancel flag, for cancel requests that
//! arrive on a new socket, as PostgreSQL's do.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use parking_lot::Mutex;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;

#[derive(Default)]
pub struct Registry {
    live: Mutex<HashMap<i32, (i32, Arc<AtomicBool>)>>,
    seed: u64,
}

impl Registry {
    pub fn new(seed: u64) -> Registry {
        Registry { live: Mutex::default(), seed }
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

    pub fn unregister(&self, id: i32) {
        self.live.lock().remove(&id);
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

#[async_trait]
impl CancelHandler for Registry {
    async fn on_cancel_request(&self, req: CancelRequest) {
        let SecretKey::I32(secret) = req.secret_key else { return };
        if let Some((s, flag)) = self.live.lock().get(&req.pid)
            && *s == secret
        {
            crate::log::info(format_args!("cancel request for connection {}", req.pid));
            flag.store(true, Ordering::Relaxed);
        }
    }
}
