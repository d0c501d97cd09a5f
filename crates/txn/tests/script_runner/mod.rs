//! The isolation-script runner, shared by `scripts.rs` (golden files) and
//! `anomalies_vs_postgres.rs` (the same scripts on PostgreSQL).
//!
//! Script lines:
//!
//! ```text
//! # comment
//! table NAME COL TYPE [COL TYPE ...]     types: int32, int64
//! insert NAME V V ...                    autocommitted insert; VIDs are 0, 1, ...
//! begin S LEVEL                          a session: rc, rr or serializable
//! S: get NAME VID
//! S: sum NAME COL | count NAME           on the device's PEs and on the host; both must agree
//! S: rows NAME [where COL OP V]          OP: = != < <= > >= (a predicate read); "no rows" if none
//! S: insert NAME V V ... | update NAME VID V V ... | delete NAME VID
//! S: commit | abort
//! ```
//!
//! Each session runs on its own thread. A statement that waits for a tuple
//! lock is reported as blocked (the runner asks the database, it does not
//! guess from time); its result is printed when a later statement (a commit
//! or abort that releases the lock) lets it finish.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use ndpdb_device::{ClockKind, Device, DeviceOptions, Profile};
use ndpdb_format::ndp::{Aggregate, CmpOp, Predicate};
use ndpdb_format::schema::{Column, ColumnType, Value};
use ndpdb_storage::{Freshness, Store, StoreOptions, Table};
use ndpdb_txn::{Database, Isolation, ReadMode, Txn};

/// A statement still running after this long without waiting for a lock is
/// a bug in the engine, not a block.
const STUCK_AFTER: Duration = Duration::from_secs(60);

/// Waits for a session's statement to finish or to wait for a lock
/// (`Database::is_waiting`), deterministically rather than by a timeout.
fn finish_or_block(db: &Database, sess: &Session) -> Option<String> {
    let t0 = std::time::Instant::now();
    loop {
        match sess.rx.recv_timeout(Duration::from_millis(2)) {
            Ok(r) => return Some(r),
            Err(_) if db.is_waiting(sess.id) => return None,
            Err(_) => assert!(t0.elapsed() < STUCK_AFTER, "a statement neither finished nor waited for a lock"),
        }
    }
}

fn fmt_row(r: &[Value]) -> String {
    let cells: Vec<String> = r
        .iter()
        .map(|v| match v {
            Value::Null => "null".into(),
            Value::Int(i) => i.to_string(),
            Value::Text(t) => String::from_utf8_lossy(t).into_owned(),
        })
        .collect();
    format!("({})", cells.join(", "))
}

fn values(words: &[&str]) -> Result<Vec<Value>, String> {
    words
        .iter()
        .map(|w| {
            if *w == "null" { Ok(Value::Null) } else { w.parse().map(Value::Int).map_err(|_| format!("bad value {w}")) }
        })
        .collect()
}

fn table(db: &Database, name: &str) -> Result<Arc<Table>, String> {
    db.table(name).map_err(|e| e.to_string())
}

/// `COL OP V` of a `rows ... where` line.
fn predicate(tb: &Table, col: &str, op: &str, v: &str) -> Result<Predicate, String> {
    let op = match op {
        "=" => CmpOp::Eq,
        "!=" => CmpOp::Ne,
        "<" => CmpOp::Lt,
        "<=" => CmpOp::Le,
        ">" => CmpOp::Gt,
        ">=" => CmpOp::Ge,
        _ => return Err(format!("bad operator {op}")),
    };
    let column = tb.column_index(col).ok_or("no such column")? as u16;
    Ok(Predicate::int(column, op, v.parse().map_err(|_| format!("bad value {v}"))?))
}

/// `rows NAME [where ...]`, on the device's PEs and on the host; both must agree.
fn rows(db: &Database, t: &mut Txn<'_>, name: &str, pred: Option<&Predicate>) -> Result<String, String> {
    let tb = table(db, name)?;
    let proj: Vec<u16> = (0..tb.columns.len() as u16).collect();
    let err = |e: ndpdb_txn::TxnError| e.to_string();
    // CBM first: it reads the delta pages Flush would write.
    let cbm = t.rows(&tb, &proj, pred, ReadMode::Ndp { pes: 3, freshness: Freshness::Cbm }).map_err(err)?;
    let ndp = t.rows(&tb, &proj, pred, ReadMode::Ndp { pes: 3, freshness: Freshness::Flush }).map_err(err)?;
    let host = t.rows(&tb, &proj, pred, ReadMode::Host { workers: 1 }).map_err(err)?;
    let mut n = ndp.rows;
    n.sort_by_key(|r| r.0);
    if n != host.rows || cbm.rows != host.rows {
        return Ok("MISMATCH between ndp (flush or cbm) and host rows".into());
    }
    if n.is_empty() {
        return Ok("no rows".into());
    }
    Ok(n.iter().map(|(v, r)| format!("{v}:{}", fmt_row(r))).collect::<Vec<_>>().join(" "))
}

/// Runs one session statement; the text after the arrow.
fn statement(db: &Database, txn: &mut Option<Txn<'_>>, words: &[&str]) -> Result<String, String> {
    let t = txn.as_mut().ok_or("the session has ended")?;
    let num = |i: usize| -> Result<u64, String> {
        words.get(i).ok_or("missing number")?.parse().map_err(|_| "bad number".to_string())
    };
    let err = |e: ndpdb_txn::TxnError| e.to_string();
    match words {
        ["get", name, _] => {
            let tb = table(db, name)?;
            Ok(t.get(&tb, num(2)?).map_err(err)?.map_or("none".into(), |r| fmt_row(&r)))
        }
        ["sum", name, col] | ["count", name, col] => {
            let tb = table(db, name)?;
            let (func, c) = if words[0] == "sum" {
                (Aggregate::Sum, tb.column_index(col).ok_or("no such column")? as u16)
            } else {
                (Aggregate::CountStar, 0)
            };
            let ndp =
                t.aggregate(&tb, func, c, None, ReadMode::Ndp { pes: 4, freshness: Freshness::Ship }).map_err(err)?;
            let host = t.aggregate(&tb, func, c, None, ReadMode::Host { workers: 2 }).map_err(err)?;
            let cbm =
                t.aggregate(&tb, func, c, None, ReadMode::Ndp { pes: 2, freshness: Freshness::Cbm }).map_err(err)?;
            if cbm.value != host.value {
                return Ok(format!("MISMATCH cbm={:?} host={:?}", cbm.value, host.value));
            }
            if ndp.value != host.value {
                return Ok(format!("MISMATCH ndp={:?} host={:?}", ndp.value, host.value));
            }
            Ok(ndp.value.map_or("null".into(), |v| v.to_string()))
        }
        ["count", name] => statement(db, txn, &["count", name, "-"]),
        ["rows", name] => rows(db, t, name, None),
        ["rows", name, "where", col, op, v] => {
            let pred = predicate(&*table(db, name)?, col, op, v)?;
            rows(db, t, name, Some(&pred))
        }
        ["insert", name, rest @ ..] => {
            let tb = table(db, name)?;
            Ok(format!("vid {}", t.insert(&tb, &values(rest)?).map_err(err)?))
        }
        ["update", name, _, rest @ ..] => {
            let tb = table(db, name)?;
            t.update(&tb, num(2)?, &values(rest)?).map_err(err)?;
            Ok("ok".into())
        }
        ["delete", name, _] => {
            let tb = table(db, name)?;
            t.delete(&tb, num(2)?).map_err(err)?;
            Ok("ok".into())
        }
        ["commit"] => {
            txn.take().expect("checked").commit().map_err(err)?;
            Ok("committed".into())
        }
        ["abort"] => {
            txn.take().expect("checked").abort().map_err(err)?;
            Ok("aborted".into())
        }
        other => Err(format!("unknown statement {other:?}")),
    }
}

struct Session {
    tx: Sender<String>,
    rx: Receiver<String>,
    /// The session's transaction id.
    id: u64,
    pending: Option<String>,
}

/// Runs a script; returns its transcript (what the `.golden` file holds).
pub(crate) fn run_script(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::create(
        dir.path(),
        Profile::load("u280-nvm").unwrap(),
        Some(16 << 20),
        DeviceOptions::with_clock(ClockKind::Virtual),
    )
    .unwrap();
    let db = Database::new(
        Store::new(dev, StoreOptions { delta_pages: 2, cache_pages: 16, map_delta_max: 64, ..StoreOptions::default() })
            .unwrap(),
    );
    let mut out = String::new();
    std::thread::scope(|scope| {
        let mut sessions: BTreeMap<String, Session> = BTreeMap::new();
        let db = &db;
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                out.push_str(line);
                out.push('\n');
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let result = match words.as_slice() {
                ["table", name, cols @ ..] => {
                    let columns = cols
                        .chunks(2)
                        .map(|c| {
                            let ty = if c.get(1) == Some(&"int32") { ColumnType::Int32 } else { ColumnType::Int64 };
                            Column::new(c[0], ty, true)
                        })
                        .collect();
                    db.create_table(name, columns).map(|_| "ok".to_string()).map_err(|e| e.to_string())
                }
                ["insert", name, rest @ ..] => (|| {
                    let tb = table(db, name)?;
                    let mut t = db.begin(Isolation::ReadCommitted);
                    let vid = t.insert(&tb, &values(rest)?).map_err(|e| e.to_string())?;
                    t.commit().map_err(|e| e.to_string())?;
                    Ok(format!("vid {vid}"))
                })(),
                ["begin", s, level] => {
                    let iso = match *level {
                        "rc" => Isolation::ReadCommitted,
                        "rr" => Isolation::RepeatableRead,
                        _ => Isolation::Serializable,
                    };
                    let (tx, srx) = channel::<String>();
                    let (stx, rx) = channel::<String>();
                    scope.spawn(move || {
                        let mut txn = Some(db.begin(iso));
                        let _ = stx.send(txn.as_ref().expect("begun").id().to_string());
                        for stmt in srx {
                            let words: Vec<&str> = stmt.split_whitespace().collect();
                            let r = statement(db, &mut txn, &words).unwrap_or_else(|e| format!("error: {e}"));
                            if stx.send(r).is_err() {
                                break;
                            }
                        }
                    });
                    let id = rx.recv().expect("session id").parse().expect("an id");
                    sessions.insert(s.to_string(), Session { tx, rx, id, pending: None });
                    Ok(iso.name().to_string())
                }
                [s, rest @ ..] if s.ends_with(':') => {
                    let name = s.trim_end_matches(':');
                    let sess = sessions.get_mut(name).expect("unknown session");
                    sess.tx.send(rest.join(" ")).unwrap();
                    match finish_or_block(db, sess) {
                        Some(r) => Ok(r),
                        None => {
                            sess.pending = Some(line.to_string());
                            Ok("blocked".into())
                        }
                    }
                }
                other => Err(format!("unknown line {other:?}")),
            };
            out.push_str(&format!("{line}\n  -> {}\n", result.unwrap_or_else(|e| format!("error: {e}"))));
            for (name, sess) in sessions.iter_mut() {
                if sess.pending.is_some()
                    && let Some(r) = finish_or_block(db, sess)
                {
                    out.push_str(&format!("  {name} unblocked: {} -> {r}\n", sess.pending.take().unwrap()));
                }
            }
        }
        drop(sessions);
    });
    out
}
