//! Draining on shutdown: once [`Drain::start`] is called, new requests get 503 with
//! `Retry-After`, while the POSTs already in flight (tool calls and every other request) run to
//! their end and their answers reach the clients; [`Drain::settled`] says when none is left.
//!
//! What a call in flight may still need passes: a POST carrying a response (a client answering
//! a sampling or elicitation request) or a notification (a cancellation), and a `DELETE`
//! closing a session.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use axum::{
    body::{Body, Bytes, HttpBody},
    extract::Request,
    http::{Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use http_body::{Frame, SizeHint};
use serde_json::Value;
use tokio::sync::Notify;

/// The server's drain state: whether it is draining, and how many requests are in flight.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    draining: AtomicBool,
    in_flight: AtomicUsize,
    settled: Notify,
}

/// One POST in flight; dropped when its response body has been sent (or abandoned).
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Drain>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.settled.notify_waiters();
        }
    }
}

impl Drain {
    /// Stops taking new requests.
    pub(crate) fn start(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Whether the server is draining.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// How many POSTs are in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Resolves once no POST is in flight.
    pub(crate) async fn settled(&self) {
        loop {
            let notified = self.settled.notified();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Counts one more POST in flight, until the value returned is dropped.
    pub(crate) fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(self))
    }
}

/// Seconds a refused client is told to wait before retrying (by then a restarted server, or
/// another instance behind the balancer, answers).
const RETRY_AFTER_SECONDS: &str = "2";

/// `response` holding `in_flight` until its body has been sent.
pub(crate) fn hold(response: Response, in_flight: InFlight) -> Response {
    response.map(|body| {
        Body::new(Tracked {
            body,
            _in_flight: in_flight,
        })
    })
}

/// A response body that holds its request's [`InFlight`] until it is sent or dropped.
#[derive(Debug)]
struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The request, if a draining server still takes it; else the 503 refusing it.
pub(crate) async fn admit_while_draining(request: Request) -> Result<Request, Response> {
    match *request.method() {
        Method::DELETE => return Ok(request),
        Method::POST => {}
        _ => return Err(refusal()),
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, crate::serve::MAX_REQUEST_BODY_BYTES)
        .await
        .map_err(|_| refusal())?;
    let is_request = serde_json::from_slice::<Value>(&bytes)
        .is_ok_and(|message| message.get("method").is_some() && message.get("id").is_some());
    if is_request {
        return Err(refusal());
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// 503 with `Retry-After`, closing the connection.
fn refusal() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (header::RETRY_AFTER, RETRY_AFTER_SECONDS),
            (header::CONNECTION, "close"),
        ],
        "Service Unavailable: the server is shutting down",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn settled_waits_for_the_last_request_in_flight() {
        let drain = Arc::new(Drain::default());
        let first = drain.enter();
        let second = drain.enter();
        drain.start();
        assert!(drain.is_draining());
        let waiter = tokio::spawn({
            let drain = Arc::clone(&drain);
            async move { drain.settled().await }
        });
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("settled once none is in flight")
            .unwrap();
        assert_eq!(drain.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_draining_server_takes_answers_and_notifications_but_not_requests() {
        let post = |body: &str| {
            Request::builder()
                .method(Method::POST)
                .body(Body::from(body.to_owned()))
                .unwrap()
        };
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#;
        let status = |r: Result<Request, Response>| r.map(drop).map_err(|r| r.status());
        assert_eq!(
            status(admit_while_draining(post(call)).await),
            Err(StatusCode::SERVICE_UNAVAILABLE)
        );
        assert_eq!(status(admit_while_draining(post(answer)).await), Ok(()));
        assert_eq!(status(admit_while_draining(post(cancel)).await), Ok(()));
        let get = Request::builder().body(Body::empty()).unwrap();
        assert_eq!(
            status(admit_while_draining(get).await),
            Err(StatusCode::SERVICE_UNAVAILABLE)
        );
        let delete = Request::builder()
            .method(Method::DELETE)
            .body(Body::empty())
            .unwrap();
        assert_eq!(status(admit_while_draining(delete).await), Ok(()));
    }
}
