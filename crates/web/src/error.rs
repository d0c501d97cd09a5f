//! What the API answers when it refuses: a list of `{field, message}`,
//! each addressed to the form field it concerns (the page shows it beside
//! that field), with the HTTP status that says why.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// One error, for one field of the page (`steps.2.count`, `query.column`,
/// `engines.pes`, `file`, `sql`; `run` for the run as a whole).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError { field: field.into(), message: message.into() }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The input is wrong: fix the fields named (400).
    #[error("invalid input: {0:?}")]
    Fields(Vec<FieldError>),
    /// A run is in progress: wait for it (409).
    #[error("{0}")]
    Busy(String),
    /// No such run or file (404).
    #[error("{0}")]
    NotFound(String),
    /// The server could not do it (500): the message says what failed.
    #[error("{0}")]
    Internal(String),
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> ApiError {
        ApiError::Fields(vec![e])
    }
}

#[derive(Serialize)]
struct Body<'a> {
    errors: &'a [FieldError],
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, errors) = match self {
            ApiError::Fields(v) => (StatusCode::BAD_REQUEST, v),
            ApiError::Busy(m) => (StatusCode::CONFLICT, vec![FieldError::new("run", m)]),
            ApiError::NotFound(m) => (StatusCode::NOT_FOUND, vec![FieldError::new("path", m)]),
            ApiError::Internal(m) => (StatusCode::INTERNAL_SERVER_ERROR, vec![FieldError::new("server", m)]),
        };
        (status, Json(Body { errors: &errors })).into_response()
    }
}
