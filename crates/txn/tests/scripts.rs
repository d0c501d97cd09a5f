//! Script tests: one isolation scenario per file in `tests/scripts/`, its
//! output compared with the `.golden` file beside it. Run with
//! `UPDATE_GOLDEN=1` to rewrite the golden files after a deliberate change.
//! The script language is described in `script_runner/mod.rs`.

mod script_runner;

use std::path::Path;

#[test]
fn isolation_scripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "scripts missing from {}", dir.display());
    let mut failures = Vec::new();
    for script in names {
        let got = script_runner::run_script(&std::fs::read_to_string(&script).unwrap());
        let golden = script.with_extension("golden");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&golden, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&golden).unwrap_or_default();
        if got != want {
            failures.push(format!("{}:\n--- want\n{want}\n--- got\n{got}", script.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
