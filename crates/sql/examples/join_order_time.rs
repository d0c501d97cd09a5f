//! How long the join orderer takes: JOB-shaped query graphs (the join
//! graphs of the largest Join-Order-Benchmark queries) and synthetic stars,
//! chains, cycles and cliques of 10 to 20 relations.
//!
//! ```text
//! cargo run --release -p ndpdb-sql --example join_order_time [name filter]
//! BUDGET=1000000 cargo run ...   # another DP budget
//! ```
//!
//! For each graph it prints the relations, the algorithm the default budget
//! chose, the csg-cmp pairs DPhyp emitted, the median planning time of 20
//! runs with each estimator (wall time, and the thread's CPU time with the
//! damped one, which other processes on the machine do not inflate), and
//! the plan's objective relative to plain
//! GOO's (independence estimator; below 1 means the DP or the refinement
//! of GOO's tree found a cheaper plan). The JOB graphs' statistics are rough IMDB
//! table sizes with a filter factor of 0.05 on every relation the query
//! filters; planning time depends on the graph's shape, not on these.

use std::time::{Duration, Instant};

use ndpdb_sql::optimizer::join_order::{
    CardinalityEstimator, Cost, ExponentialBackoff, HashJoinCostModel, Independence, JoinEdge, JoinOrderOptions,
    JoinPlan, QueryGraph, Relation, order_joins,
};

const RUNS: usize = 20;

/// A JOB query's join graph: relations as (alias, table, filtered) and
/// equi-join predicates as (alias, column, alias, column), parsed at run
/// time from the JOB directory (`ndpdb_workload::job::join_graphs`).
use ndpdb_workload::job::JoinGraphSpec as JobQuery;

/// The JOB queries' join graphs, from `$NDPDB_JOB_DIR` or the
/// `shared/workloads/job` beside the repo.
fn job_queries() -> Vec<JobQuery> {
    let Some(dir) = ndpdb_workload::job::default_job_dir() else {
        eprintln!("no JOB directory found (set NDPDB_JOB_DIR); timing synthetic graphs only");
        return Vec::new();
    };
    ndpdb_workload::job::join_graphs(&dir).unwrap_or_else(|e| {
        eprintln!("cannot read the JOB queries in {}: {e}; timing synthetic graphs only", dir.display());
        Vec::new()
    })
}

/// Rows of the IMDB tables (the JOB snapshot, rounded).
fn table_rows(table: &str) -> f64 {
    match table {
        "aka_name" => 901_343.0,
        "aka_title" => 361_472.0,
        "cast_info" => 36_244_344.0,
        "char_name" => 3_140_339.0,
        "comp_cast_type" => 4.0,
        "company_name" => 234_997.0,
        "company_type" => 4.0,
        "complete_cast" => 135_086.0,
        "info_type" => 113.0,
        "keyword" => 134_170.0,
        "kind_type" => 7.0,
        "link_type" => 18.0,
        "movie_companies" => 2_609_129.0,
        "movie_info" => 14_835_720.0,
        "movie_info_idx" => 1_380_035.0,
        "movie_keyword" => 4_523_930.0,
        "movie_link" => 29_997.0,
        "name" => 4_167_491.0,
        "person_info" => 2_963_664.0,
        "role_type" => 12.0,
        "title" => 2_528_312.0,
        _ => 1_000.0,
    }
}

/// Selectivity of `a.x = b.y`: 1/|key's table| when one side is a primary
/// key (`id`), else 1/|title| or 1/|name| for the movie and person keys.
fn join_selectivity(q: &JobQuery, (a, x, b, y): (&str, &str, &str, &str)) -> f64 {
    let table = |alias: &str| q.relations.iter().find(|r| r.0 == alias).map_or("?", |r| r.1.as_str());
    let keyed = if x == "id" {
        table_rows(table(a))
    } else if y == "id" {
        table_rows(table(b))
    } else {
        0.0
    };
    let rows = match (keyed, x) {
        (k, _) if k > 0.0 => k,
        (_, "movie_id") | (_, "linked_movie_id") => table_rows("title"),
        (_, "person_id") => table_rows("name"),
        _ => table_rows(table(a)).max(table_rows(table(b))),
    };
    1.0 / rows.max(1.0)
}

fn job_graph(q: &JobQuery) -> QueryGraph {
    let relations = q
        .relations
        .iter()
        .enumerate()
        .map(|(i, (_, table, filtered))| {
            let (rows, filtered) = (table_rows(table), *filtered);
            let out = if filtered { (rows * 0.05).max(1.0) } else { rows };
            Relation { id: i as u64, rows: out, scan: Cost::host(rows * 10e-9) }
        })
        .collect();
    let index = |alias: &str| q.relations.iter().position(|r| r.0 == alias).expect("alias of the query");
    let edges = q
        .joins
        .iter()
        .map(|(a, x, b, y)| {
            JoinEdge::simple(index(a), index(b), join_selectivity(q, (a.as_str(), x.as_str(), b.as_str(), y.as_str())))
        })
        .collect();
    QueryGraph::new(relations, edges).expect("JOB graphs are valid")
}

fn synthetic(shape: &str, n: usize) -> QueryGraph {
    let relations = (0..n)
        .map(|i| {
            let rows = 1000.0 * (1 + (i * 7919) % 97) as f64;
            Relation { id: i as u64, rows, scan: Cost::host(rows * 10e-9) }
        })
        .collect();
    let pairs: Vec<(usize, usize)> = match shape {
        "chain" => (1..n).map(|i| (i - 1, i)).collect(),
        "star" => (1..n).map(|i| (0, i)).collect(),
        "cycle" => (0..n).map(|i| (i, (i + 1) % n)).collect(),
        _ => (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).collect(),
    };
    let edges =
        pairs.into_iter().map(|(a, b)| JoinEdge::simple(a, b, 1.0 / (1000.0 * (1 + (a + b) % 13) as f64))).collect();
    QueryGraph::new(relations, edges).expect("synthetic graphs are valid")
}

/// The default options, or the budget in `$BUDGET`.
fn options() -> JoinOrderOptions {
    let default = JoinOrderOptions::default();
    let budget = std::env::var("BUDGET").ok().and_then(|b| b.parse().ok());
    JoinOrderOptions { dp_pair_budget: budget.unwrap_or(default.dp_pair_budget), ..default }
}

/// CPU time of the calling thread: unlike wall time, it does not grow
/// while other processes hold the cores.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the
    // call, and CLOCK_THREAD_CPUTIME_ID is supported on every Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The plan, and the median wall and thread-CPU times of `RUNS` runs.
fn time(graph: &QueryGraph, estimator: &dyn CardinalityEstimator) -> (JoinPlan, Duration, Duration) {
    let model = HashJoinCostModel::default();
    let options = options();
    let (mut wall, mut cpu) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
    let mut plan = None;
    for _ in 0..RUNS {
        let (start, start_cpu) = (Instant::now(), thread_cpu());
        let p = order_joins(graph, estimator, &model, &options).expect("default options are valid");
        wall.push(start.elapsed());
        cpu.push(thread_cpu() - start_cpu);
        plan = Some(p);
    }
    wall.sort();
    cpu.sort();
    (plan.expect("RUNS > 0"), wall[RUNS / 2], cpu[RUNS / 2])
}

/// One graph's row: relations, algorithm, pairs and median times. Returns
/// the slower of the two wall-time medians.
fn report(name: &str, graph: &QueryGraph, print: bool) -> Duration {
    let (plan, independence, _) = time(graph, &Independence);
    let (_, backoff, backoff_cpu) = time(graph, &ExponentialBackoff::default());
    if print {
        let algorithms: Vec<String> = plan.components.iter().map(|c| c.algorithm.to_string()).collect();
        let greedy = JoinOrderOptions { greedy_only: true, ..options() };
        let goo = order_joins(graph, &Independence, &HashJoinCostModel::default(), &greedy).expect("valid options");
        println!(
            "{name:<10} {:>4} {:<26} {:>9} {:>10.3} {:>12.3} {:>9.3} {:>8.3}",
            graph.len(),
            algorithms.join("+"),
            plan.dp_pairs(),
            independence.as_secs_f64() * 1e3,
            backoff.as_secs_f64() * 1e3,
            backoff_cpu.as_secs_f64() * 1e3,
            plan.objective / goo.objective
        );
    }
    independence.max(backoff)
}

fn main() {
    // An optional argument keeps only the graphs whose name contains it.
    let filter = std::env::args().nth(1).unwrap_or_default();
    println!("median of {RUNS} runs; DP budget {} csg-cmp pairs", options().dp_pair_budget);
    println!(
        "{:<10} {:>4} {:<26} {:>9} {:>10} {:>12} {:>9} {:>8}",
        "graph", "rels", "algorithm", "pairs", "ms indep", "ms backoff", "cpu ms", "cost/GOO"
    );
    // Every JOB query is planned; those with 11 or more relations are printed.
    let job = job_queries();
    let mut slowest: Option<(Duration, &str)> = None;
    for q in &job {
        let name = format!("JOB {}", q.name);
        if !name.contains(&filter) {
            continue;
        }
        let graph = job_graph(q);
        let t = report(&name, &graph, graph.len() >= 11);
        if slowest.is_none_or(|(s, _)| t > s) {
            slowest = Some((t, &q.name));
        }
    }
    if let Some((t, name)) = slowest {
        println!("slowest JOB query: {name}, median {:.3} ms", t.as_secs_f64() * 1e3);
    }
    for shape in ["chain", "cycle", "star", "clique"] {
        for n in [10, 12, 14, 15, 16, 17, 18, 20] {
            let name = format!("{shape} {n}");
            if name.contains(&filter) {
                report(&name, &synthetic(shape, n), true);
            }
        }
    }
    if let Some(q) = job.iter().find(|q| q.name == "29a").filter(|_| filter.is_empty()) {
        let (plan, _, _) = time(&job_graph(q), &ExponentialBackoff::default());
        println!("\nJOB {} with the damped estimator:\n{plan}", q.name);
    }
}
