//! `ndpdb web`'s API at the HTTP level (the router driven with
//! `tower::ServiceExt::oneshot`, no socket): the page, field-addressed
//! validation with the composer's and the CLI's rules, a run end to end
//! (progress events, listing, files), refusals of paths outside the results
//! directory, and the SQL page's plan tree.

use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use ndpdb_sql::session::{Engine, EngineOptions};
use ndpdb_web::{AppState, WebOptions, router};
use serde_json::{Value, json};
use tower::ServiceExt;

fn state(results: &Path, engine: Option<Arc<Engine>>) -> Arc<AppState> {
    AppState::new(&WebOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        results: results.to_path_buf(),
        engine,
        db_name: None,
    })
}

async fn call(st: &Arc<AppState>, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Vec<u8>) {
    let mut req = Request::builder().method(method).uri(uri);
    let body = match body {
        Some(v) => {
            req = req.header("content-type", "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    let resp = router(st.clone()).oneshot(req.body(body).unwrap()).await.unwrap();
    let status = resp.status();
    (status, resp.into_body().collect().await.unwrap().to_bytes().to_vec())
}

async fn json_call(st: &Arc<AppState>, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let (s, b) = call(st, method, uri, body).await;
    (s, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

fn form() -> Value {
    json!({
        "name": "tiny",
        "steps": [
            {"action": "load", "count": 50},
            {"action": "snapshot", "level": "repeatable read", "label": "before"},
            {"action": "update", "count": "all", "choice": "uniform"},
            {"action": "snapshot", "level": "serializable", "label": "after"}
        ],
        "query": {"op": "sum", "column": "ol_amount"}
    })
}

fn engines() -> Value {
    json!({"pes": "2", "workers": "1", "pg_workers": "", "profile": "u280-nvm", "clock": "virtual", "repeat": 1, "seed": 1})
}

/// The fields of a 400's errors.
fn fields(v: &Value) -> Vec<String> {
    v["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap().to_string()).collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn the_page_and_its_assets_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let st = state(dir.path(), None);
    runtime().block_on(async {
        let (s, page) = call(&st, "GET", "/", None).await;
        assert_eq!(s, StatusCode::OK);
        assert!(String::from_utf8(page).unwrap().contains("Workload composer"));
        for a in ["app.js", "app.css", "charts.js", "sql.js"] {
            assert_eq!(call(&st, "GET", &format!("/assets/{a}"), None).await.0, StatusCode::OK, "{a}");
        }
        assert_eq!(call(&st, "GET", "/assets/..%2fCargo.toml", None).await.0, StatusCode::NOT_FOUND);
        let (_, meta) = json_call(&st, "GET", "/api/meta", None).await;
        assert!(meta["profiles"].as_array().unwrap().iter().any(|p| p == "u280-nvm"), "{meta}");
    });
}

/// A change to the good form.
type Change = Box<dyn Fn(&mut Value)>;

/// Each bad input comes back addressed to its field, with the composer's
/// (the CLI's) message.
#[test]
fn invalid_input_is_addressed_to_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let st = state(dir.path(), None);
    runtime().block_on(async {
        let (s, ok) = json_call(&st, "POST", "/api/composer/check", Some(json!({"composer": form()}))).await;
        assert_eq!(s, StatusCode::OK, "{ok}");
        assert!(ok["toml"].as_str().unwrap().contains("update = \"all\""), "{ok}");
        let cases: Vec<(Change, &str, &str)> = vec![
            (Box::new(|f| f["steps"][0]["count"] = json!(-5)), "steps.0.count", "-5"),
            (Box::new(|f| f["steps"][1]["level"] = json!("")), "steps.1.level", "repeatable read"),
            (Box::new(|f| f["query"]["column"] = json!("ol_amout")), "query.column", "ol_amout"),
            (Box::new(|f| f["query"]["where"] = json!("nope = 1")), "query.where", "nope"),
            (Box::new(|f| f["steps"][2]["count"] = json!(500)), "steps.2.count", "only 50 are live"),
            (Box::new(|f| f["steps"][0]["action"] = json!("drop")), "steps.0.action", "drop"),
            (Box::new(|f| f["steps"][2]["choice"] = json!("zipf")), "steps.2.choice", "zipf"),
            (Box::new(|f| f["query"]["op"] = json!("median")), "query.op", "median"),
            (
                Box::new(|f| {
                    f["steps"].as_array_mut().unwrap().retain(|s| s["action"] != "snapshot");
                }),
                "steps",
                "no snapshot step",
            ),
        ];
        for (change, field, says) in cases {
            let mut f = form();
            change(&mut f);
            let (s, e) = json_call(&st, "POST", "/api/composer/check", Some(json!({"composer": f}))).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{field}: {e}");
            assert_eq!(fields(&e), vec![field.to_string()], "{e}");
            assert!(e["errors"][0]["message"].as_str().unwrap().contains(says), "{field}: {e}");
        }
        let bad_engines = [
            ("pes", json!("0"), "engines.pes"),
            ("pes", json!("two"), "engines.pes"),
            ("workers", json!("0"), "engines.workers"),
            ("profile", json!("/etc/passwd"), "engines.profile"),
            ("clock", json!("wall"), "engines.clock"),
            ("repeat", json!(0), "engines.repeat"),
        ];
        for (key, value, field) in bad_engines {
            let mut e = engines();
            e[key] = value;
            let (s, r) = json_call(&st, "POST", "/api/runs", Some(json!({"composer": form(), "engines": e}))).await;
            assert_eq!((s, fields(&r)), (StatusCode::BAD_REQUEST, vec![field.to_string()]), "{r}");
        }
        // A malformed file: its error belongs to the file field and names the line.
        let (s, e) = json_call(
            &st,
            "POST",
            "/api/composer/parse",
            Some(json!({"text": "[[step]]\nlod = 1\n", "filename": "w.toml"})),
        )
        .await;
        assert_eq!((s, fields(&e)), (StatusCode::BAD_REQUEST, vec!["file".to_string()]), "{e}");
        assert!(e["errors"][0]["message"].as_str().unwrap().starts_with("w.toml line 2"), "{e}");
        // Nothing was started by any of it.
        let (_, status) = json_call(&st, "GET", "/api/status", None).await;
        assert_eq!(status["state"], "idle");
        assert_eq!(std::fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0), 0);
    });
}

/// A loaded file and the paper's scenarios come back as forms that check.
#[test]
fn files_and_scenarios_become_forms() {
    let dir = tempfile::tempdir().unwrap();
    let st = state(dir.path(), None);
    runtime().block_on(async {
        let (_, checked) = json_call(&st, "POST", "/api/composer/check", Some(json!({"composer": form()}))).await;
        let text = checked["toml"].as_str().unwrap();
        let (s, back) = json_call(&st, "POST", "/api/composer/parse", Some(json!({"text": text}))).await;
        assert_eq!(s, StatusCode::OK, "{back}");
        assert_eq!(back["steps"].as_array().unwrap().len(), 4);
        assert_eq!(back["steps"][3]["level"], "serializable");
        let (_, two) = json_call(&st, "GET", "/api/scenario/2?rows=100&rounds=2", None).await;
        let actions: Vec<&str> =
            two["steps"].as_array().unwrap().iter().map(|s| s["action"].as_str().unwrap()).collect();
        assert_eq!(actions, ["load", "update", "update", "snapshot"], "{two}");
        let (_, three) = json_call(&st, "GET", "/api/scenario/3?rows=100&rounds=2", None).await;
        assert_eq!(three["steps"].as_array().unwrap().iter().filter(|s| s["action"] == "snapshot").count(), 3);
        let (s, e) = json_call(&st, "GET", "/api/scenario/4", None).await;
        assert_eq!((s, fields(&e)), (StatusCode::BAD_REQUEST, vec!["scenario".to_string()]));
        for n in [1, 2, 3] {
            let (_, f) = json_call(&st, "GET", &format!("/api/scenario/{n}?rows=100&rounds=1"), None).await;
            let (s, r) = json_call(&st, "POST", "/api/composer/check", Some(json!({"composer": f}))).await;
            assert_eq!(s, StatusCode::OK, "scenario {n}: {r}");
        }
    });
}

/// A run through the API: started, followed, listed, its files served, and
/// only from inside the results directory.
#[test]
fn a_run_is_started_listed_and_its_files_served() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
    let st = state(&results, None);
    runtime().block_on(async {
        let mut rx = st.runs.subscribe();
        let (s, r) = json_call(&st, "POST", "/api/runs", Some(json!({"composer": form(), "engines": engines()}))).await;
        assert_eq!(s, StatusCode::ACCEPTED, "{r}");
        // The progress events' first: the run's status now.
        let resp = router(st.clone())
            .oneshot(Request::builder().uri("/api/events").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let frame = resp.into_body().frame().await.unwrap().unwrap().into_data().unwrap();
        let frame = String::from_utf8(frame.to_vec()).unwrap();
        assert!(frame.starts_with("event: status\ndata: {"), "{frame}");
        let done = loop {
            let s = rx.borrow_and_update().clone();
            if s.state == "done" || s.state == "failed" {
                break s;
            }
            rx.changed().await.unwrap();
        };
        assert_eq!(done.state, "done", "{done:?}");
        let id = done.run.unwrap();
        let (_, list) = json_call(&st, "GET", "/api/runs", None).await;
        assert_eq!(list["runs"][0]["id"], id.as_str(), "{list}");
        let (_, d) = json_call(&st, "GET", &format!("/api/runs/{id}"), None).await;
        let rows = d["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 4, "2 markers x (NDP, host-only): {d}");
        assert!(rows.iter().all(|r| r["marker_step"].is_u64()), "{d}");
        assert!(d["workload"].as_str().unwrap().contains("name = \"tiny\""));
        let (s, jsonl) = call(&st, "GET", &format!("/files/{id}/results.jsonl?download=1"), None).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(jsonl, std::fs::read(results.join(&id).join("results.jsonl")).unwrap());
        for bad in [
            format!("/files/{id}/..%2F..%2Fsecret.txt"),
            "/files/..%2F/secret.txt".to_string(),
            format!("/files/{id}/%2Fetc%2Fpasswd"),
            format!("/files/{id}/nope.svg"),
        ] {
            assert_eq!(call(&st, "GET", &bad, None).await.0, StatusCode::NOT_FOUND, "{bad}");
        }
    });
}

/// The SQL page: a query's page of rows and its plan with host and device
/// operators; bad input addressed to its field.
#[test]
fn the_sql_page_answers_rows_and_a_plan_tree() {
    let dir = tempfile::tempdir().unwrap();
    let opts = EngineOptions { dir: dir.path().join("db"), capacity_mib: Some(64), ..EngineOptions::default() };
    let engine = Engine::open(&opts).unwrap();
    let mut s = engine.session();
    let values: Vec<String> = (1..=120).map(|i| format!("({i}, {})", i * 2)).collect();
    for sql in
        ["create table t (a integer, b bigint)".to_string(), format!("insert into t values {}", values.join(", "))]
    {
        s.run(&sql).pop().unwrap().unwrap();
    }
    let st = state(&dir.path().join("results"), Some(engine.clone()));
    runtime().block_on(async {
        let q = json!({"sql": "select a, b from t where a > 10 order by a", "ndp": "on", "page": 1, "page_size": 50});
        let (s, r) = json_call(&st, "POST", "/api/sql", Some(q)).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!((r["total_rows"].as_u64(), r["rows"].as_array().unwrap().len()), (Some(110), 50));
        assert_eq!(r["rows"][0][0], "61", "page 1 starts at the 51st row: {r}");
        let plan = &r["plan"];
        assert!(plan["analyzed"].as_bool().unwrap(), "{plan}");
        let text = plan.to_string();
        assert!(text.contains("\"runs_on\":\"device\"") && text.contains("\"runs_on\":\"host\""), "{plan}");
        let q = json!({"sql": "select count(*) from t", "ndp": "off"});
        let (_, r) = json_call(&st, "POST", "/api/sql", Some(q)).await;
        assert!(!r["plan"].to_string().contains("\"runs_on\":\"device\""), "{r}");
        let (s, e) = json_call(&st, "POST", "/api/sql", Some(json!({"sql": "select nope from t"}))).await;
        assert_eq!((s, fields(&e)), (StatusCode::BAD_REQUEST, vec!["sql".to_string()]), "{e}");
        let (_, e) = json_call(&st, "POST", "/api/sql", Some(json!({"sql": "select 1", "ndp": "maybe"}))).await;
        assert_eq!(fields(&e), vec!["ndp".to_string()], "{e}");
    });
    engine.close().unwrap();
}
