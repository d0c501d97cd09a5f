//! `ndpdb serve` through the binary: a non-loopback `--listen` without
//! `--password-file` exits non-zero before binding, saying how to enable
//! authentication; a password file others may read, or with a malformed
//! line, is refused with the file (and line) named.

use std::process::{Command, Output};

fn serve(args: &[&str], db: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ndpdb")).arg("serve").arg("--db").arg(db).args(args).output().expect("run ndpdb")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_non_loopback_address_needs_a_password_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:5433"] {
        let out = serve(&["--listen", addr], &db);
        assert!(!out.status.success(), "{addr}: must exit non-zero");
        let err = stderr(&out);
        assert!(err.contains("refusing to listen") && err.contains("--password-file FILE"), "{addr}: {err}");
        // Refused before anything was opened or bound: no database made.
        assert!(!db.exists(), "{addr}: the database directory must not be created");
    }
}

#[test]
fn a_password_file_others_may_read_or_with_a_bad_line_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let file = dir.path().join("passwords");
    std::fs::write(&file, "alice:secret\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = file.to_str().unwrap();
    let out = serve(&["--listen", "0.0.0.0:0", "--password-file", path], &db);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(&format!("chmod 600 {path}")), "{}", stderr(&out));
    std::fs::write(&file, "alice:secret\n\nbob\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = serve(&["--password-file", path], &db);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(&format!("{path}:3: expected `user:password`")), "{}", stderr(&out));
    assert!(!db.exists());
}
