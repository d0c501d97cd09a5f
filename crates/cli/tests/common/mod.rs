//! Running the `ndpdb` binary from the CLI tests, and what they expect of a
//! success and of a refusal. (Each test binary uses part of it.)
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

pub fn ndpdb(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ndpdb")).args(args).current_dir(cwd).output().expect("run ndpdb")
}

/// Its stdout, after asserting it succeeded.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// A failure with a message for the user, not a panic.
pub fn refused(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "expected exit 1: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}
