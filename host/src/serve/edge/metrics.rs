//! `GET /metrics` on a listener of its own (`--metrics-addr`), apart from `/mcp`, so a
//! server exposed to clients does not expose its metrics with it: the registry of
//! [`crate::observe::metrics`] in the OpenMetrics text format Prometheus scrapes.

use std::net::SocketAddr;

use axum::{
    Router,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

use crate::observe::metrics;
use crate::serve::ServeError;

/// The address `--metrics-addr` names: `HOST:PORT`, or a port alone on loopback.
pub(crate) fn address(given: &str) -> String {
    let given = given.trim();
    if given.parse::<u16>().is_ok() {
        format!("127.0.0.1:{given}")
    } else {
        given.to_owned()
    }
}

/// Turns the metrics on and serves them on `given` ([`address`]) from a task of its own;
/// where it listens.
pub(crate) async fn serve(given: &str) -> Result<SocketAddr, ServeError> {
    let address = address(given);
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|source| ServeError::Bind {
            address: format!("{address} (--metrics-addr)"),
            source,
        })?;
    let bound = listener.local_addr()?;
    metrics::install();
    let router = Router::new().route("/metrics", get(render));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!("the metrics listener stopped: {error}");
        }
    });
    Ok(bound)
}

/// The metrics, as text.
async fn render() -> Response {
    match metrics::get() {
        Some(metrics) => (
            [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
            metrics.render(),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_is_on_loopback() {
        assert_eq!(address("9464"), "127.0.0.1:9464");
        assert_eq!(address("0.0.0.0:9464"), "0.0.0.0:9464");
        assert_eq!(address("[::1]:0"), "[::1]:0");
    }
}
