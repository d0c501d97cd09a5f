//! Small file systems for disk-full tests (shared with `ndpdb-sql`'s tests
//! through a `#[path]` module).

#![allow(dead_code)]

use std::path::Path;

/// A small file system mounted under a temporary directory (a loop-mounted
/// ext4 of `mib` MiB, or a tmpfs of 48 MiB), unmounted on drop. Mounting needs
/// root (CI runs as root); elsewhere the tests say they were skipped.
pub struct SmallDisk {
    dir: tempfile::TempDir,
    _backing: Option<tempfile::NamedTempFile>,
}

impl SmallDisk {
    pub fn ext4(mib: u64) -> Option<SmallDisk> {
        let backing = tempfile::NamedTempFile::new().unwrap();
        backing.as_file().set_len(mib << 20).unwrap();
        let made = run("mkfs.ext4", &["-q", "-F"], backing.path());
        let dir = tempfile::tempdir().unwrap();
        let mounted = made && run("mount", &["-o", "loop", &backing.path().to_string_lossy()], dir.path());
        mounted.then_some(SmallDisk { dir, _backing: Some(backing) })
    }

    pub fn tmpfs() -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        run("mount", &["-t", "tmpfs", "-o", "size=48m", "tmpfs"], dir.path())
            .then_some(SmallDisk { dir, _backing: None })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn run(program: &str, args: &[&str], path: &Path) -> bool {
    std::process::Command::new(program)
        .args(args)
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.dir.path()).status();
    }
}

pub fn skipped(what: &str) {
    eprintln!("skipped: cannot mount {what} here (not root?)");
}
