//! The page's files, compiled into the binary (no build step, no npm):
//! plain HTML, CSS and JavaScript from `crates/web/assets/`.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

const FILES: &[(&str, &str, &str)] = &[
    ("index.html", "text/html; charset=utf-8", include_str!("../assets/index.html")),
    ("app.css", "text/css; charset=utf-8", include_str!("../assets/app.css")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("../assets/app.js")),
    ("charts.js", "text/javascript; charset=utf-8", include_str!("../assets/charts.js")),
    ("sql.js", "text/javascript; charset=utf-8", include_str!("../assets/sql.js")),
];

/// The asset `name`, or 404.
pub fn page(name: &str) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, ty, body)) => {
            ([(header::CONTENT_TYPE, *ty), (header::CACHE_CONTROL, "no-cache")], *body).into_response()
        }
        None => (StatusCode::NOT_FOUND, format!("no asset {name:?}")).into_response(),
    }
}
