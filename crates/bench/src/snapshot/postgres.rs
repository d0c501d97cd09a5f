//! The snapshot experiment on PostgreSQL: one private server for a series
//! of points, the plan applied with COPY (a statement per chunk), a session
//! holding a REPEATABLE READ or SERIALIZABLE transaction open at each
//! marker, then the query in each with every parallel worker count.

use anyhow::Result;
use ndpdb_baseline::postgres::{PgError, PgServer, Session};
use ndpdb_format::ndp::Aggregate;
use ndpdb_format::schema::{Column, format_timestamp};
use ndpdb_format::text::{self, format_scaled};
use ndpdb_workload::{OrderLine, OrderLineGen, order_line_columns};

use super::{Base, Config, LOAD_TIME_US, Row, median_index, same_answers, settle_writeback};
use crate::compose::{Action, Workload};
use crate::orderline;

/// Tuples per PostgreSQL statement (one transaction) when applying updates
/// and deletes.
const PG_CHUNK: usize = 100_000;

/// The PostgreSQL baseline of a series of [`run`](super::run)s: one private
/// server, started by the first run that needs it and shared by the rest.
/// Each run drops the previous run's table before it loads its own. (A
/// server per run cost `initdb` and a start and a stop each time, about
/// 2 s, more than a small point's whole measurement: most of `ndpdb demo`.)
#[derive(Default)]
pub struct Postgres {
    server: Option<PgServer>,
    /// What the baseline is ("PostgreSQL 15.x"), or why it was skipped.
    note: Option<String>,
}

impl Postgres {
    /// The server, started on first use; `None` when PostgreSQL is not
    /// installed or cannot be run here (the note says why).
    pub(super) fn server(&mut self) -> Result<Option<&PgServer>> {
        if self.server.is_none() && self.note.is_none() {
            match PgServer::start() {
                Ok(server) => {
                    self.note = Some(format!("PostgreSQL {}", server.version().unwrap_or_default()));
                    self.server = Some(server);
                }
                Err(e @ (PgError::NotInstalled | PgError::NoPostgresUser)) => {
                    self.note = Some(format!("PostgreSQL baseline skipped: {e}"));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(self.server.as_ref())
    }

    /// What the baseline is, or why it was skipped; None before the first
    /// run that needed it.
    pub(super) fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// Stops the server, if one was started (dropping it stops it too, but
    /// without reporting a failure).
    pub fn stop(self) -> Result<()> {
        if let Some(server) = self.server {
            server.stop()?;
        }
        Ok(())
    }
}

/// A marker's session with its transaction open, its label, and the live
/// tuples it sees.
type Marker = (Session, String, u64);

/// Runs `w`'s plan and query on `server`.
pub(super) fn run(
    server: &PgServer,
    w: &Workload,
    plan: &[Action],
    cfg: &Config,
    base: &Base<'_>,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Vec<Row>> {
    let mut s = server.session()?;
    // The previous run's table, on a shared server (its sessions are gone;
    // a backend still ending holds its lock for a moment, and DROP waits).
    s.exec("DROP TABLE IF EXISTS order_line")?;
    s.exec(&format!("CREATE TABLE order_line ({})", table_columns(&order_line_columns())))?;
    s.exec("CREATE TEMP TABLE ndpdb_step (vid bigint, a numeric(6,2))")?;
    let mut markers = apply(server, &mut s, plan, cfg.seed, progress)?;
    s.exec("ANALYZE order_line")?;
    // PostgreSQL's dirty buffers to its files, then everything to disk.
    s.exec("CHECKPOINT")?;
    settle_writeback();
    measure(&mut markers, w, cfg, base)
}

/// ORDER_LINE's columns in PostgreSQL's DDL, after a `vid` key that the
/// plan's VIDs address tuples by.
fn table_columns(columns: &[Column]) -> String {
    let mut ddl = vec!["vid bigint PRIMARY KEY".to_string()];
    ddl.extend(
        columns.iter().map(|c| format!("{} {}{}", c.name, c.ty.sql_name(), if c.nullable { "" } else { " NOT NULL" })),
    );
    ddl.join(", ")
}

/// Applies the plan on session `s`; returns the markers' sessions.
fn apply(
    server: &PgServer,
    s: &mut Session,
    plan: &[Action],
    seed: u64,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Vec<Marker>> {
    let mut tuples = OrderLineGen::new(seed, LOAD_TIME_US);
    let mut markers = Vec::new();
    let mut live = 0u64;
    for (i, a) in plan.iter().enumerate() {
        let phase = format!("postgres step {}", i + 1);
        match a {
            Action::Insert { first, count } => {
                let lines = (0..*count).map(|k| copy_line(first + k, &tuples.next().expect("endless generator")));
                s.copy_in("COPY order_line FROM STDIN", lines)?;
                live += count;
                progress(&phase, *count, *count);
            }
            Action::Update(ups) => {
                // COPY the step's changes into a scratch table and join, a
                // statement (a transaction) per chunk: 3-4x faster than
                // UPDATE .. FROM (VALUES ..) lists, and the same versions.
                for (k, chunk) in ups.chunks(PG_CHUNK).enumerate() {
                    let lines = chunk.iter().map(|(v, a)| format!("{v}\t{}", format_scaled((*a).into(), 2)));
                    s.exec("TRUNCATE ndpdb_step")?;
                    s.copy_in("COPY ndpdb_step (vid, a) FROM STDIN", lines)?;
                    s.exec("UPDATE order_line SET ol_amount = u.a FROM ndpdb_step u WHERE order_line.vid = u.vid")?;
                    progress(&phase, ((k + 1) * PG_CHUNK).min(ups.len()) as u64, ups.len() as u64);
                }
            }
            Action::Delete(vids) => {
                for chunk in vids.chunks(PG_CHUNK) {
                    s.exec("TRUNCATE ndpdb_step")?;
                    s.copy_in("COPY ndpdb_step (vid) FROM STDIN", chunk.iter().map(u64::to_string))?;
                    s.exec("DELETE FROM order_line USING ndpdb_step u WHERE order_line.vid = u.vid")?;
                }
                live -= vids.len() as u64;
            }
            Action::Marker { level, label } => {
                let mut m = server.session()?;
                m.exec(&format!("BEGIN ISOLATION LEVEL {}", level.sql()))?;
                m.exec("SELECT 1 FROM order_line LIMIT 1")?;
                markers.push((m, label.clone(), live));
            }
        }
    }
    Ok(markers)
}

/// `w`'s query at every marker with each parallel worker count,
/// `cfg.repeat` runs each, and the agreement check's control once each;
/// commits the markers' transactions.
fn measure(markers: &mut [Marker], w: &Workload, cfg: &Config, base: &Base<'_>) -> Result<Vec<Row>> {
    let (query, control_sql) = (sql(w), control_sql(w));
    let query = query.as_str();
    let mut rows = Vec::new();
    for (m, label, live) in markers {
        for &workers in &cfg.postgres_workers {
            m.exec(&format!(
                "SET max_parallel_workers_per_gather = {workers}; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0"
            ))?;
            let mut walls = Vec::new();
            let mut answers = Vec::new();
            for _ in 0..cfg.repeat.max(1) {
                let (out, took) = m.timed(query)?;
                answers.push(out.into_iter().next().filter(|v| !v.is_empty()));
                walls.push(took.as_secs_f64());
            }
            same_answers("postgresql", label, &answers)?;
            let mut row = base("postgresql", None, Some(workers), label, *live);
            row.result = answers.swap_remove(0);
            row.wall_s = walls[median_index(&walls)];
            row.wall_s_runs = walls;
            row.control = Some(control(&m.query(&control_sql)?)?);
            rows.push(row);
        }
        m.exec("COMMIT")?;
    }
    Ok(rows)
}

/// One tuple as a line of `COPY order_line FROM STDIN` (text format).
fn copy_line(vid: u64, o: &OrderLine) -> String {
    let ts = o.ol_delivery_d.map_or("\\N".to_string(), format_timestamp);
    format!(
        "{vid}\t{}\t{}\t{}\t{}\t{}\t{}\t{ts}\t{}\t{}\t{}",
        o.ol_o_id,
        o.ol_d_id,
        o.ol_w_id,
        o.ol_number,
        o.ol_i_id,
        o.ol_supply_w_id,
        o.ol_quantity,
        format_scaled(o.ol_amount.into(), 2),
        String::from_utf8_lossy(&o.ol_dist_info)
    )
}

/// The agreement check's control in SQL (`orderline::control`): the rows
/// the query reads, counted, and their items summed.
fn control_sql(w: &Workload) -> String {
    let pred = w.query.predicate.as_ref().map(|p| format!(" WHERE {p}")).unwrap_or_default();
    format!("SELECT count(*), sum(ol_i_id) FROM order_line{pred}")
}

/// [`control_sql`]'s answer, `count|sum` (an empty sum is NULL), as
/// `orderline::control_text` writes ndpdb's.
fn control(line: &str) -> Result<String> {
    let parsed = line.split_once('|').and_then(|(n, s)| {
        let sum = if s.is_empty() { None } else { Some(s.parse::<i128>().ok()?) };
        Some((n.parse::<u64>().ok()?, sum))
    });
    let (rows, sum) =
        parsed.ok_or_else(|| anyhow::anyhow!("PostgreSQL answered {line:?} to count(*), sum(ol_i_id)"))?;
    Ok(orderline::control_text(rows, sum))
}

/// The query's SQL for PostgreSQL.
fn sql(w: &Workload) -> String {
    let agg = match w.query.op {
        Aggregate::CountStar => "count(*)".to_string(),
        op => format!("{}({})", text::aggregate_name(op), w.query.column),
    };
    let pred = w.query.predicate.as_ref().map(|p| format!(" WHERE {p}")).unwrap_or_default();
    format!("SELECT {agg} FROM order_line{pred}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DDL comes from the table's columns, and reads as it did when
    /// it was written out by hand.
    #[test]
    fn order_line_ddl_matches_the_table() {
        assert_eq!(
            table_columns(&order_line_columns()),
            "vid bigint PRIMARY KEY, ol_o_id integer NOT NULL, ol_d_id integer NOT NULL, ol_w_id integer NOT NULL, \
             ol_number integer NOT NULL, ol_i_id integer NOT NULL, ol_supply_w_id integer NOT NULL, \
             ol_delivery_d timestamp, ol_quantity integer NOT NULL, ol_amount numeric(6,2) NOT NULL, \
             ol_dist_info char(24) NOT NULL"
        );
    }

    #[test]
    fn count_star_is_sql_count_of_rows() {
        let text =
            "[[step]]\nload = 1\n[[step]]\nsnapshot = \"rr\"\n[query]\nop = \"OP\"\nwhere = \"ol_quantity >= 5\"\n";
        let sql_of = |op: &str| sql(&Workload::parse(&text.replace("OP", op), "w").unwrap());
        assert_eq!(sql_of("count-star"), "SELECT count(*) FROM order_line WHERE ol_quantity >= 5");
        assert_eq!(sql_of("count(*)"), "SELECT count(*) FROM order_line WHERE ol_quantity >= 5");
        let text = text.replace("[query]\n", "[query]\ncolumn = \"ol_amount\"\n");
        assert_eq!(
            sql(&Workload::parse(&text.replace("OP", "avg"), "w").unwrap()),
            "SELECT avg(ol_amount) FROM order_line WHERE ol_quantity >= 5"
        );
    }
}
