//! `ndpdb web` in headless Chromium (issue 19's Done-when): scenario 2
//! composed and run beside PostgreSQL, its table checked against the run's
//! JSON lines; a JOB query's plan with device and host operators; invalid
//! input shown beside its field with nothing started; a 400 px window
//! composed and run from the keyboard alone. Screenshots go to
//! `target/tmp/web-browser/<test>/`. Without Chromium the tests say so and
//! pass, unless `NDPDB_REQUIRE_CHROMIUM=1`.

mod support;

use std::time::Duration;

use fantoccini::{Client, Locator};
use ndpdb_baseline::require::skip_postgres;
use serde_json::Value;
use support::{Driver, Web, browser_available, css, error_beside, fill, out_dir, wait_for};

const TAB: &str = "\u{e004}";
const ENTER: &str = "\u{e007}";
const BACKSPACE: &str = "\u{e003}";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap_or_else(|e| panic!("{script}: {e}"))
}

/// Waits until the page holds `n` steps.
async fn wait_steps(c: &Client, n: usize) {
    for _ in 0..400 {
        if c.find_all(Locator::Css("#steps li")).await.unwrap().len() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the page never held {n} steps");
}

async fn step_actions(c: &Client) -> Value {
    js(c, "return [...document.querySelectorAll('#steps .action')].map(s => s.value)").await
}

/// The run's rows as written to its results directory.
fn run_rows(results: &std::path::Path, id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(results.join(id).join("results.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Every row of the page's results table equals the run's JSON line.
async fn table_matches_json(c: &Client, rows: &[Value]) {
    let cells = js(
        c,
        "return [...document.querySelectorAll('#result table.results tbody tr')].map(tr => \
         Object.fromEntries([...tr.children].map(td => [td.dataset.key, td.textContent])))",
    )
    .await;
    let cells = cells.as_array().unwrap();
    assert_eq!(cells.len(), rows.len(), "a table row per JSON line");
    for (cell, row) in cells.iter().zip(rows) {
        let result = row["result"].as_str().unwrap_or("NULL");
        assert_eq!(cell["result"], result, "{cell} vs {row}");
        assert_eq!(cell["snapshot_position"], row["snapshot_position"], "{cell} vs {row}");
        assert_eq!(cell["rows"].as_str().unwrap(), row["rows"].to_string());
        for key in ["wall_s", "modelled_s"] {
            let shown: Option<f64> = cell[key].as_str().unwrap().parse().ok();
            match (shown, row[key].as_f64()) {
                (Some(a), Some(b)) => assert!((a - b).abs() <= 5e-7, "{key}: page {a}, JSON {b}"),
                (None, None) => {}
                other => panic!("{key}: {other:?}"),
            }
        }
    }
}

/// The run id the page says it finished.
async fn finished_run(c: &Client) -> String {
    let run = wait_for(c, "#result .run").await;
    run.attr("data-run").await.unwrap().expect("the run's id")
}

#[test]
fn scenario_2_beside_postgresql_shows_the_runs_numbers() {
    const NAME: &str = "scenario_2_beside_postgresql_shows_the_runs_numbers";
    if !browser_available(NAME) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let web = Web::start(&results, None);
    let driver = Driver::start();
    runtime().block_on(async {
        let c = driver.browser(1280, 800).await;
        c.goto(&web.url()).await.unwrap();
        wait_steps(&c, 4).await;
        fill(&c, "#scn-rows", "300").await;
        fill(&c, "#scn-rounds", "2").await;
        css(&c, "#scn-2").await.click().await.unwrap();
        for _ in 0..400 {
            if step_actions(&c).await == serde_json::json!(["load", "update", "update", "snapshot"]) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert_eq!(step_actions(&c).await, serde_json::json!(["load", "update", "update", "snapshot"]));
        css(&c, "#e-postgres").await.click().await.unwrap();
        fill(&c, "#e-pg-workers", "0").await;
        fill(&c, "#e-pes", "2").await;
        fill(&c, "#e-workers", "1").await;
        css(&c, "#run").await.click().await.unwrap();
        let id = finished_run(&c).await;
        let rows = run_rows(&results, &id);
        if !rows.iter().any(|r| r["engine"] == "postgresql") {
            skip_postgres(NAME, &"the run had no PostgreSQL rows (is PostgreSQL installed?)");
        }
        assert_eq!(rows.iter().filter(|r| r["versions_per_tuple"] == 3.0).count(), rows.len(), "{rows:?}");
        table_matches_json(&c, &rows).await;
        let agreement = css(&c, "#agreement").await.text().await.unwrap();
        assert!(agreement.contains("agree at all 1 markers"), "{agreement}");
        js(&c, "document.getElementById('result').scrollIntoView(); return 0").await;
        let png = c.screenshot().await.unwrap();
        std::fs::write(out_dir(NAME).join("results.png"), png).unwrap();
        c.close().await.unwrap();
    });
}

/// JOB data (the sqltest crate's loader) in a database; a JOB query on the
/// SQL page with `ndp = on` shows device scans under host joins.
#[test]
fn a_job_query_shows_device_and_host_operators() {
    use ndpdb_sql::session::{Engine, EngineOptions};
    use ndpdb_sqltest::job::load_job;
    use ndpdb_sqltest::ndpdb::NdpdbSession;
    use ndpdb_workload::job::{JobConfig, JobData, default_job_dir};
    const NAME: &str = "a_job_query_shows_device_and_host_operators";
    if !browser_available(NAME) {
        return;
    }
    let job = default_job_dir().expect("the JOB directory (../shared/workloads/job or NDPDB_JOB_DIR) must exist");
    let data = JobData::prepare(JobConfig { scale: 0.005, seed: 17, dir: job.clone() }).expect("prepare JOB data");
    let dir = tempfile::tempdir().unwrap();
    let files = data.write(dir.path(), &mut |_| {}).expect("write the CSV files");
    let opts = EngineOptions { dir: dir.path().join("db"), capacity_mib: Some(512), ..EngineOptions::default() };
    let engine = Engine::open(&opts).unwrap();
    load_job(&mut NdpdbSession(engine.session()), &job, &files, false).expect("load JOB");
    let query = data.queries().iter().find(|q| q.name == "1a").expect("JOB 1a").sql.clone();
    let web = Web::start(&dir.path().join("results"), Some(engine.clone()));
    let driver = Driver::start();
    runtime().block_on(async {
        let c = driver.browser(1280, 800).await;
        c.goto(&web.url()).await.unwrap();
        css(&c, ".tab[data-tab=sql]").await.click().await.unwrap();
        fill(&c, "#sql-text", &query).await;
        css(&c, "#sql-ndp").await.select_by_value("on").await.unwrap();
        css(&c, "#sql-run").await.click().await.unwrap();
        wait_for(&c, "#plan").await;
        let device = c.find_all(Locator::Css("#plan .node.device")).await.unwrap();
        let host = c.find_all(Locator::Css("#plan .node.host")).await.unwrap();
        assert!(!device.is_empty() && !host.is_empty(), "{} device, {} host operators", device.len(), host.len());
        let first = device[0].text().await.unwrap();
        assert!(first.contains("NDP Scan") && first.contains("actual rows"), "{first}");
        let tag = css(&c, "#sql-tag").await.text().await.unwrap();
        assert!(tag.starts_with("SELECT"), "{tag}");
        js(&c, "document.getElementById('plan').scrollIntoView(); return 0").await;
        std::fs::write(out_dir(NAME).join("plan.png"), c.screenshot().await.unwrap()).unwrap();
        c.close().await.unwrap();
    });
    drop(web);
    engine.close().unwrap();
}

/// Negative tuples, a marker without a transaction, an unknown column and
/// a malformed file: each error beside its field, and no run started.
#[test]
fn invalid_input_is_shown_beside_its_field_and_starts_nothing() {
    const NAME: &str = "invalid_input_is_shown_beside_its_field_and_starts_nothing";
    if !browser_available(NAME) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let web = Web::start(&results, None);
    let driver = Driver::start();
    let bad_file = dir.path().join("bad.toml");
    std::fs::write(&bad_file, "[[step]]\nlod = 1\n").unwrap();
    runtime().block_on(async {
        let c = driver.browser(1280, 800).await;
        c.goto(&web.url()).await.unwrap();
        wait_steps(&c, 4).await;
        fill(&c, "#steps li:nth-child(1) .count", "-5").await;
        css(&c, "#run").await.click().await.unwrap();
        assert!(error_beside(&c, "steps.0").await.contains("-5"));
        let class = css(&c, "#steps li:nth-child(1) .count").await.attr("class").await.unwrap().unwrap();
        assert!(class.contains("invalid"), "{class}");
        fill(&c, "#steps li:nth-child(1) .count", "100").await;
        css(&c, "#steps li:nth-child(2) .level").await.select_by_value("").await.unwrap();
        css(&c, "#run").await.click().await.unwrap();
        assert!(error_beside(&c, "steps.1").await.contains("repeatable read"));
        css(&c, "#steps li:nth-child(2) .level").await.select_by_value("serializable").await.unwrap();
        fill(&c, "#q-column", "ol_amout").await;
        css(&c, "#run").await.click().await.unwrap();
        assert!(error_beside(&c, "query.column").await.contains("ol_amout"));
        css(&c, "#file").await.send_keys(bad_file.to_str().unwrap()).await.unwrap();
        assert!(error_beside(&c, "file").await.contains("line 2"));
        std::fs::write(out_dir(NAME).join("errors.png"), c.screenshot().await.unwrap()).unwrap();
        c.close().await.unwrap();
    });
    assert_eq!(web.state.runs.subscribe().borrow().state, "idle", "a run was started");
    assert!(!results.exists() || std::fs::read_dir(&results).unwrap().count() == 0);
}

/// The elements that reach past the window's right edge (outside a
/// scrolling box), as tag#id.class.
async fn too_wide(c: &Client) -> Vec<String> {
    let script = "if (document.documentElement.scrollWidth <= window.innerWidth) return []; \
        return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth \
          && !e.closest('.scroll')).map(e => `${e.tagName}#${e.id}.${e.className.baseVal ?? e.className} \
          ${Math.round(e.getBoundingClientRect().right)}`).slice(0, 12)";
    serde_json::from_value(js(c, script).await).unwrap()
}

/// Presses Tab until the element with `id` has the focus.
async fn tab_to(c: &Client, id: &str) {
    for _ in 0..300 {
        if js(c, "return document.activeElement && document.activeElement.id").await == id {
            return;
        }
        type_keys(c, TAB).await;
    }
    panic!("Tab never reached #{id}");
}

/// Presses `keys` one after another on the keyboard (WebDriver actions:
/// whatever has the focus gets them, as from a user).
async fn type_keys(c: &Client, keys: &str) {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    let mut actions = KeyActions::new("keyboard".into());
    for k in keys.chars() {
        actions = actions.then(KeyAction::Down { value: k }).then(KeyAction::Up { value: k });
    }
    c.perform_actions(actions).await.unwrap();
}

/// A 400 px window: nothing wider than the window, and a workload composed
/// (a scenario, one more step) and run with the keyboard alone; run twice,
/// the two runs compared on the Runs page.
#[test]
fn a_narrow_window_composes_and_runs_from_the_keyboard() {
    const NAME: &str = "a_narrow_window_composes_and_runs_from_the_keyboard";
    if !browser_available(NAME) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let web = Web::start(&results, None);
    let driver = Driver::start();
    runtime().block_on(async {
        let c = driver.browser(400, 800).await;
        c.goto(&web.url()).await.unwrap();
        wait_steps(&c, 4).await;
        assert_eq!(too_wide(&c).await, Vec::<String>::new(), "wider than the 400 px window");
        tab_to(&c, "scn-rows").await;
        type_keys(&c, &format!("{}200", BACKSPACE.repeat(8))).await;
        tab_to(&c, "scn-rounds").await;
        type_keys(&c, &format!("{}1", BACKSPACE.repeat(4))).await;
        tab_to(&c, "scn-3").await;
        type_keys(&c, ENTER).await;
        for _ in 0..400 {
            if js(&c, "return document.getElementById('name').value").await.as_str().unwrap().starts_with("scenario 3")
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert_eq!(step_actions(&c).await, serde_json::json!(["load", "snapshot", "update", "snapshot"]));
        tab_to(&c, "add-step").await;
        type_keys(&c, ENTER).await;
        wait_steps(&c, 5).await;
        tab_to(&c, "run").await;
        type_keys(&c, ENTER).await;
        let id = finished_run(&c).await;
        let rows = run_rows(&results, &id);
        assert_eq!(rows.len(), 4, "2 markers x 2 engines: {rows:?}");
        assert_eq!(rows[0]["rows"], 200);
        assert_eq!(too_wide(&c).await, Vec::<String>::new(), "results wider than the 400 px window");
        std::fs::write(out_dir(NAME).join("narrow.png"), c.screenshot().await.unwrap()).unwrap();
        // A second run, then the two compared on the Runs page.
        js(&c, "document.getElementById('result').replaceChildren(); return 0").await;
        type_keys(&c, ENTER).await; // the focus is still on Run
        let second = finished_run(&c).await;
        assert_ne!(second, id);
        css(&c, ".tab[data-tab=runs]").await.click().await.unwrap();
        for run in [&id, &second] {
            wait_for(&c, &format!("#run-list input[value='{run}']")).await.click().await.unwrap();
        }
        css(&c, "#compare").await.click().await.unwrap();
        wait_for(&c, "#run-view > div:nth-child(2) .run").await;
        let shown =
            js(&c, "return [...document.querySelectorAll('#run-view .run')].map(r => r.dataset.run).sort()").await;
        let mut both = vec![id.clone(), second.clone()];
        both.sort();
        assert_eq!(shown, serde_json::json!(both));
        assert_eq!(too_wide(&c).await, Vec::<String>::new(), "the comparison is wider than the 400 px window");
        c.close().await.unwrap();
    });
}
