//! Loading generated JOB data (`ndpdb_workload::job`) into an engine under
//! test: the JOB schema, `COPY ... FROM 'file' WITH (FORMAT csv)` of every
//! table file (checking the row count), optionally the foreign-key indexes
//! of `fkindexes.sql`, then `ANALYZE`. The same statements load ndpdb and
//! PostgreSQL (whose server reads the files as the `postgres` user: see
//! [`make_world_readable`]). Used by the JOB test and the planning-time
//! example, and meant for `ndpdb bench job`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ndpdb_workload::job::TableFile;

use crate::{SqlEngine, affected_rows};

/// Runs every `;`-separated statement of a SQL file (`schema.sql`,
/// `fkindexes.sql`, which hold no `;` inside a statement).
pub fn run_script(engine: &mut dyn SqlEngine, path: &Path) -> Result<(), String> {
    let sql = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        engine.run(statement).map_err(|e| format!("{}: {statement}: {e}", path.display()))?;
    }
    Ok(())
}

/// Creates the schema of `job_dir/schema.sql`, loads `files`, builds the
/// indexes of `job_dir/fkindexes.sql` when `indexes`, and runs `ANALYZE`.
pub fn load_job(engine: &mut dyn SqlEngine, job_dir: &Path, files: &[TableFile], indexes: bool) -> Result<(), String> {
    run_script(engine, &job_dir.join("schema.sql"))?;
    for f in files {
        let copy = format!("COPY {} FROM '{}' WITH (FORMAT csv)", f.table, f.path.display());
        let out = engine.run(&copy).map_err(|e| format!("{copy}: {e}"))?;
        if affected_rows(&out.tag) != f.rows {
            return Err(format!(
                "{}: {} rows loaded ({}), {} written",
                f.table,
                affected_rows(&out.tag),
                out.tag,
                f.rows
            ));
        }
    }
    if indexes {
        run_script(engine, &job_dir.join("fkindexes.sql"))?;
    }
    engine.run("ANALYZE").map_err(|e| format!("ANALYZE: {e}"))?;
    Ok(())
}

/// Lets a server running as another user (PostgreSQL's `postgres`) read the
/// generated files: the directory 0755, each file 0644.
pub fn make_world_readable(dir: &Path, files: &[TableFile]) -> std::io::Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for f in files {
        std::fs::set_permissions(&f.path, std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(())
}
