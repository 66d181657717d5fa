//! Reading a delivery's body within what it declares and what the server can afford: shared by
//! the webhook and Sentry's endpoint.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};

/// Reads a body no longer than its declared length, which must be at most `max`: the bytes,
/// and the share of the server's body budget they hold until the permit is dropped. Over the
/// budget, 503 (the sender delivers again); a body that does not arrive within `timeout` is
/// dropped. `what` names the body in the refusals.
pub(crate) async fn read_declared(
    budget: &Arc<tokio::sync::Semaphore>,
    timeout: Duration,
    headers: &HeaderMap,
    body: axum::body::Body,
    (max, what): (usize, &str),
) -> Result<(Bytes, tokio::sync::OwnedSemaphorePermit), (StatusCode, String)> {
    let length = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let Some(length) = length else {
        return Err((
            StatusCode::LENGTH_REQUIRED,
            format!("{what} declares its Content-Length\n"),
        ));
    };
    if length > max {
        return Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("{what} is at most {max} bytes\n"),
        ));
    }
    let Ok(reading) = budget
        .clone()
        .try_acquire_many_owned(u32::try_from(length).unwrap_or(u32::MAX))
    else {
        return Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "too many deliveries are being read at once; try again\n".to_owned(),
        ));
    };
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, length)).await {
        Ok(Ok(body)) => Ok((body, reading)),
        Ok(Err(_)) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is over its Content-Length ({length} bytes) or was cut off\n"),
        )),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {} s\n", timeout.as_secs()),
        )),
    }
}
