//! DuckDB beside the other engines, through its Python module: a `python3`
//! child reads one JSON request per line on stdin (`{"sql": ...}`), runs
//! it on an in-memory database, and answers one JSON line (`{"rows": n,
//! "wall_s": t}` timed inside Python around execute and fetch, or
//! `{"error": ...}`). DuckDB's answers are counted, not compared: its
//! numeric and date text differ from PostgreSQL's, and the benchmark's
//! reference is PostgreSQL.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, Result, anyhow};

use super::engines::{Answer, BenchEngine};

const SCRIPT: &str = r#"
import json, sys, time
import duckdb
con = duckdb.connect(":memory:")
con.execute("SET enable_progress_bar = false")  # it would print on stdout, our answer channel
for line in sys.stdin:
    req = json.loads(line)
    try:
        t0 = time.perf_counter()
        cur = con.execute(req["sql"])
        rows = cur.fetchall() if cur.description else []
        out = {"rows": len(rows), "wall_s": time.perf_counter() - t0}
    except Exception as e:
        out = {"error": str(e)}
    print(json.dumps(out), flush=True)
"#;

/// How to install DuckDB when it is missing (said once per run).
pub const INSTALL_NOTE: &str =
    "DuckDB left out: python3 cannot import duckdb; install it with `pip install duckdb` to add it";

/// Whether `python3 -c "import duckdb"` works.
pub fn available() -> bool {
    Command::new("python3")
        .args(["-c", "import duckdb"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub struct DuckDb {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl DuckDb {
    pub fn start() -> Result<DuckDb> {
        let mut child = Command::new("python3")
            .args(["-c", SCRIPT])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting python3 for DuckDB")?;
        let stdin = child.stdin.take().ok_or_else(|| anyhow!("no stdin of the DuckDB process"))?;
        let stdout = BufReader::new(child.stdout.take().ok_or_else(|| anyhow!("no stdout of the DuckDB process"))?);
        Ok(DuckDb { child, stdin, stdout })
    }
}

impl Drop for DuckDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl BenchEngine for DuckDb {
    fn name(&self) -> &'static str {
        "duckdb"
    }

    fn run(&mut self, sql: &str) -> Result<Answer> {
        let req = serde_json::json!({ "sql": sql });
        writeln!(self.stdin, "{req}").context("sending a statement to DuckDB")?;
        self.stdin.flush().context("sending a statement to DuckDB")?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line).context("reading DuckDB's answer")? == 0 {
            return Err(anyhow!("DuckDB's python3 process ended"));
        }
        let v: serde_json::Value = serde_json::from_str(&line).context("DuckDB's answer is not JSON")?;
        if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
            return Err(anyhow!("DuckDB: {e}"));
        }
        Ok(Answer {
            row_count: v.get("rows").and_then(|r| r.as_u64()).unwrap_or(0),
            wall_s: v.get("wall_s").and_then(|r| r.as_f64()).unwrap_or(0.0),
            ..Answer::default()
        })
    }
}
