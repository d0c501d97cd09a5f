//! `ndpdb check DIR`: recovery, then the integrity check, without changing
//! the image (the store is opened read-only). It opens what can be opened
//! (as `--accept-loss` would) so that it can verify the rest, and says what
//! it could and could not verify. It exits 0 only when everything was
//! verified: the database opened, no integrity error, no damage found on
//! the way, and nothing of the log lost (with `--accept-loss`: nothing but
//! what that flag drops, which it lists). `--json` prints one JSON object
//! whatever happens, errors included.

use std::path::Path;

use anyhow::{Result, bail};
use ndpdb_bench::outln;
use ndpdb_device::ClockKind;
use ndpdb_storage::{CheckReport, LogLoss, Recovery};
use serde_json::{Value, json};

use crate::db::Common;
use crate::db::open::{open_read_only, report_recovery};

/// What the check found, whether or not the database opened.
#[derive(Default)]
struct Outcome {
    /// Why the database could not be opened or checked.
    error: Option<String>,
    recovery: Option<Recovery>,
    report: Option<CheckReport>,
    wall_s: f64,
}

impl Outcome {
    fn lost(&self) -> Option<&LogLoss> {
        self.recovery.as_ref().and_then(|r| r.lost.as_ref())
    }

    fn damage(&self) -> &[String] {
        self.recovery.as_ref().map_or(&[], |r| &r.damage)
    }

    fn integrity_errors(&self) -> u64 {
        self.report.as_ref().map_or(0, CheckReport::error_count)
    }

    /// `ok`, `loss_accepted`, `damaged` or `error` (see the module docs).
    fn status(&self, accept_loss: bool) -> &'static str {
        if self.error.is_some() {
            "error"
        } else if self.integrity_errors() > 0 || !self.damage().is_empty() || self.lost().is_some() && !accept_loss {
            "damaged"
        } else if self.lost().is_some() {
            "loss_accepted"
        } else {
            "ok"
        }
    }

    /// What was verified and what was not, in words.
    fn verified(&self) -> (Vec<String>, Vec<String>) {
        let (mut yes, mut no) = (Vec::new(), Vec::new());
        let Some(rec) = &self.recovery else {
            no.push("everything: the database did not open".to_string());
            return (yes, no);
        };
        yes.push(format!("checkpoint {} (root slot {})", rec.generation, rec.slot));
        yes.push(format!("the log after it: {} records replayed, the whole ring searched", rec.records));
        if let Some(loss) = &rec.lost {
            no.push(format!("the log from LSN {}: {} records cannot be replayed", loss.stop_lsn, loss.dropped.len()));
        }
        no.extend(rec.damage.iter().cloned());
        match &self.report {
            Some(r) if r.error_count() == 0 => {
                yes.push(format!("{} tables: {} pages, {} VIDs, {} versions", r.tables, r.pages, r.vids, r.versions))
            }
            Some(r) => no.push(format!("{} integrity errors in the tables", r.error_count())),
            None => no.push("the tables' pages and chains: the check did not run".to_string()),
        }
        (yes, no)
    }
}

/// `ndpdb check DIR` (see the module docs).
pub fn run(dir: &Path, profile: Option<&str>, json: bool, accept_loss: bool) -> Result<()> {
    let c =
        Common { db: dir.to_path_buf(), profile: profile.map(str::to_string), clock: ClockKind::Virtual, accept_loss };
    let o = check(&c);
    let status = o.status(accept_loss);
    if json {
        outln!("{}", to_json(dir, &o, status, accept_loss));
    } else {
        print_text(&o);
    }
    match (&o.error, status) {
        (Some(e), _) => bail!("{e}"),
        (None, "ok" | "loss_accepted") => Ok(()),
        (None, _) => bail!("{}", summary(dir, &o)),
    }
}

/// Opens read-only with what can be opened, and checks every table.
fn check(c: &Common) -> Outcome {
    let mut o = Outcome::default();
    let (store, _meta, rec) = match open_read_only(c, true) {
        Ok(opened) => opened,
        Err(e) => {
            o.error = Some(format!("{e:#}"));
            return o;
        }
    };
    o.recovery = Some(rec);
    let t0 = std::time::Instant::now();
    match store.check() {
        Ok(r) => o.report = Some(r),
        Err(e) => o.error = Some(format!("checking {}: {e}", c.db.display())),
    }
    o.wall_s = t0.elapsed().as_secs_f64();
    o
}

/// Why the check fails, in one line.
fn summary(dir: &Path, o: &Outcome) -> String {
    let mut parts = Vec::new();
    if let Some(loss) = o.lost() {
        parts.push(format!(
            "the write-ahead log is damaged, and opening would lose {} committed records ({} commits; pass \
             --accept-loss to check the database without them)",
            loss.dropped.len(),
            loss.commits().len()
        ));
    }
    if !o.damage().is_empty() {
        parts.push(format!(
            "damage found on the way ({}); a command that writes a checkpoint (any `ndpdb db` command but `info`) \
             replaces a damaged checkpoint",
            o.damage().join("; ")
        ));
    }
    if o.integrity_errors() > 0 {
        parts.push(format!("{} integrity errors", o.integrity_errors()));
    }
    format!("{}: {}", dir.display(), parts.join("; "))
}

fn print_text(o: &Outcome) {
    if let Some(rec) = &o.recovery {
        report_recovery(rec);
    }
    let Some(r) = &o.report else { return };
    for e in &r.errors {
        outln!("error: {e}");
    }
    if r.more_errors > 0 {
        outln!("... and {} more errors", r.more_errors);
    }
    outln!(
        "checked {} tables, {} pages, {} VIDs, {} versions in {:.3} s: {} errors",
        r.tables,
        r.pages,
        r.vids,
        r.versions,
        o.wall_s,
        r.error_count()
    );
}

/// The one JSON object `--json` prints, for every outcome.
fn to_json(dir: &Path, o: &Outcome, status: &str, accept_loss: bool) -> Value {
    let (verified, not_verified) = o.verified();
    let rec = o.recovery.as_ref();
    let r = o.report.as_ref();
    json!({
        "db": dir.display().to_string(), "status": status, "error": o.error, "accept_loss": accept_loss,
        "verified": verified, "not_verified": not_verified,
        "checkpoint": rec.map(|r| json!({"generation": r.generation, "root_slot": r.slot})),
        "log_records_replayed": rec.map(|r| r.records), "commits_replayed": rec.map(|r| r.commits),
        "log_truncated": rec.and_then(|r| r.truncated.clone()), "root_note": rec.and_then(|r| r.root_note.clone()),
        "damage": o.damage(), "lost": o.lost().map(loss_json),
        "tables": r.map(|r| r.tables), "pages": r.map(|r| r.pages), "vids": r.map(|r| r.vids),
        "versions": r.map(|r| r.versions), "integrity_errors": r.map(CheckReport::error_count),
        "errors": r.map(|r| r.errors.clone()).unwrap_or_default(), "wall_s": o.wall_s,
    })
}

fn loss_json(l: &LogLoss) -> Value {
    json!({
        "message": l.to_string(), "stop_lsn": l.stop_lsn, "stop": l.stop, "damaged_lsn_ranges": l.damaged,
        "unreadable_log_pages": l.unreadable_pages.iter().map(|p| json!({"ppn": p.ppn, "why": p.why})).collect::<Vec<_>>(),
        "dropped": l.dropped.iter().map(|d| json!({"lsn": d.lsn, "txn": d.txn, "what": d.what})).collect::<Vec<_>>(),
        "commits": l.commits().iter().map(|(t, lsn)| json!({"txn": t, "lsn": lsn})).collect::<Vec<_>>(),
    })
}
