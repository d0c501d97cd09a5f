//! One server per database directory: an exclusive `flock` on
//! `<db>/serve.lock`, held for the server's life. The kernel drops it when
//! the process dies (SIGKILL included), so a crash never leaves a stale
//! lock behind.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The held lock (released on drop or process exit).
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock, or says which process holds it.
    pub fn acquire(db: &Path) -> Result<DirLock, crate::ServeError> {
        let path = db.join("serve.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| crate::ServeError::Lock(format!("cannot open {}: {e}", path.display())))?;
        // SAFETY: flock on a descriptor this function owns; no memory is shared.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(crate::ServeError::Lock(format!(
                "database {} is already served by another ndpdb process{} (one server per database \
                 directory: connect to it, or stop it first)",
                db.display(),
                if holder.trim().is_empty() { String::new() } else { format!(" (pid {})", holder.trim()) }
            )));
        }
        let _ = file.set_len(0);
        let _ = std::fs::write(&path, format!("{}\n", std::process::id()));
        Ok(DirLock { _file: file })
    }
}
