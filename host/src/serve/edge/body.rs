//! The body gate of the MCP endpoint: a body is read once, bounded, and checked to be a
//! JSON-RPC message before rmcp sees it.
//!
//! - A body that is not a JSON-RPC message at all: [`check_body`], in front of the MCP endpoint,
//!   answers HTTP 400 with `-32700` (not JSON) or `-32600` (a batch, or an object that is not a
//!   request, notification or response), naming what was wrong. rmcp alone answers 415 for
//!   every one of these. The body is read here once, bounded in size (413) and in stall time (408).
//!
//! A request of a known method whose `params` do not fit it is the MCP handler's to answer
//! (`crate::serve::mcp::params`).

use std::{future::Future, time::Duration};

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use rmcp::{ErrorData, model::ErrorCode};
use serde_json::{Value, json};

/// What [`check_body`] needs: the largest body, and how long a body may stall between chunks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    /// The largest body accepted, in bytes (413 beyond).
    pub(crate) max_bytes: usize,
    /// How long the client may send nothing while its body is unfinished (408 then).
    pub(crate) idle: Duration,
}

/// A POST to the MCP endpoint: reads its body (bounded in size and in stall time), hands it to
/// `next`, and turns rmcp's 415 for a JSON body it could not deserialize into the JSON-RPC
/// error that says why.
pub(crate) async fn check_body<F, Fut>(limits: BodyLimits, request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let json = is_json(&request);
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, limits).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let response = next(Request::from_parts(parts, Body::from(bytes.clone()))).await;
    if json && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        let error = classify(&bytes);
        tracing::debug!("refused a malformed message: {}", error.message);
        return error_response(StatusCode::BAD_REQUEST, Value::Null, &error);
    }
    response
}

/// Whether the request says its body is JSON (rmcp answers 415 itself when it does not).
fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The whole body, or the response refusing it: 413 when larger than allowed, 408 when the
/// client stalls, 400 when the connection fails mid-body. A part already received is taken
/// without arming a timer, and a body of one part is not copied.
async fn read_body(body: Body, limits: BodyLimits) -> Result<Bytes, Response> {
    use futures::FutureExt as _;
    use http_body_util::BodyExt as _;
    let mut body = http_body_util::Limited::new(body, limits.max_bytes);
    let mut parts: Vec<Bytes> = Vec::new();
    loop {
        let polled = match body.frame().now_or_never() {
            Some(polled) => polled,
            None => tokio::time::timeout(limits.idle, body.frame())
                .await
                .map_err(|_| stalled(limits.idle))?,
        };
        match polled {
            None => break,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    parts.push(data);
                }
            }
            Some(Err(error)) => return Err(unreadable(&*error, limits.max_bytes)),
        }
    }
    Ok(match parts.len() {
        0 => Bytes::new(),
        1 => parts.swap_remove(0),
        _ => Bytes::from(parts.concat()),
    })
}

/// 408 for a body that sent nothing for `idle`, closing the connection.
fn stalled(idle: Duration) -> Response {
    let message = format!(
        "Request Timeout: no part of the body arrived for {} s",
        idle.as_secs()
    );
    (
        StatusCode::REQUEST_TIMEOUT,
        [(header::CONNECTION, "close")],
        message,
    )
        .into_response()
}

/// 413 for a body over `max_bytes`, 400 for one that could not be read.
fn unreadable(
    error: &(dyn std::error::Error + Send + Sync + 'static),
    max_bytes: usize,
) -> Response {
    if error.is::<http_body_util::LengthLimitError>() {
        let message = format!("Payload Too Large: request body exceeds {max_bytes} bytes");
        (StatusCode::PAYLOAD_TOO_LARGE, message).into_response()
    } else {
        let message = format!("Bad Request: cannot read the body: {error}");
        (StatusCode::BAD_REQUEST, message).into_response()
    }
}

/// Why a body is not a message rmcp can take: `-32700` when it is not JSON, `-32600` naming
/// the first thing wrong with the envelope otherwise.
pub(crate) fn classify(body: &[u8]) -> ErrorData {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(error) => {
            return ErrorData::new(
                ErrorCode::PARSE_ERROR,
                format!("Parse error: the body is not JSON: {error}"),
                None,
            );
        }
    };
    let invalid = |message: String| ErrorData::invalid_request(message, None);
    let Value::Object(message) = value else {
        return match value {
            Value::Array(_) => invalid(
                "Invalid Request: batches are not supported; send one JSON-RPC message per POST"
                    .to_owned(),
            ),
            other => invalid(format!(
                "Invalid Request: a message must be a JSON object, not {}",
                kind(&other)
            )),
        };
    };
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("Invalid Request: `jsonrpc` must be \"2.0\"".to_owned());
    }
    if let Some(id) = message.get("id")
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return invalid(format!(
            "Invalid Request: `id` must be a string or an integer, not {}",
            kind(id)
        ));
    }
    match message.get("method") {
        Some(Value::String(_)) => {}
        Some(other) => {
            return invalid(format!(
                "Invalid Request: `method` must be a string, not {}",
                kind(other)
            ));
        }
        None if message.contains_key("result") || message.contains_key("error") => {
            return invalid(
                "Invalid Request: a response must have an `id` and one of `result` or `error`"
                    .to_owned(),
            );
        }
        None => return invalid("Invalid Request: `method` is missing".to_owned()),
    }
    match message.get("params") {
        Some(Value::Object(_)) | None => {
            invalid("Invalid Request: the message does not fit the method's shape".to_owned())
        }
        Some(other) => invalid(format!(
            "Invalid Request: `params` must be an object, not {}",
            kind(other)
        )),
    }
}

/// A JSON value's kind, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An HTTP response carrying a JSON-RPC error answering `id`.
pub(crate) fn error_response(status: StatusCode, id: Value, error: &ErrorData) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::mcp::params::invalid_params;

    fn code_and_message(body: &str) -> (i32, String) {
        let error = classify(body.as_bytes());
        (error.code.0, error.message.into_owned())
    }

    #[test]
    fn not_json_is_a_parse_error() {
        for body in ["", "{", "nope", "{\"jsonrpc\": \"2.0\",}"] {
            let (code, message) = code_and_message(body);
            assert_eq!(code, -32700, "{body:?}");
            assert!(
                message.starts_with("Parse error: the body is not JSON"),
                "{message}"
            );
        }
    }

    #[test]
    fn a_batch_is_an_invalid_request_saying_so() {
        let (code, message) = code_and_message(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!(code, -32600);
        assert!(message.contains("batches are not supported"), "{message}");
        assert_eq!(code_and_message("[]").0, -32600);
    }

    #[test]
    fn a_bad_envelope_names_its_field() {
        for (body, field) in [
            ("5", "JSON object"),
            (r#"{"id":1,"method":"ping"}"#, "`jsonrpc`"),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "`jsonrpc`"),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, "`id`"),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, "`id`"),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, "`method`"),
            (r#"{"jsonrpc":"2.0","id":1}"#, "`method` is missing"),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
                "`params`",
            ),
            (r#"{"jsonrpc":"2.0","result":{}}"#, "`id`"),
        ] {
            let (code, message) = code_and_message(body);
            assert_eq!(code, -32600, "{body}");
            assert!(message.contains(field), "{body}: {message}");
        }
    }

    /// Any JSON value, a few levels deep.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z/.]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("jsonrpc".to_owned()),
                        Just("id".to_owned()),
                        Just("method".to_owned()),
                        Just("params".to_owned()),
                        Just("name".to_owned()),
                        Just("arguments".to_owned()),
                        "[a-z]{1,6}",
                    ],
                    inner,
                    0..5,
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_classify_as_a_parse_error_or_an_invalid_request(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)
        ) {
            let code = classify(&bytes).code.0;
            proptest::prop_assert!(code == -32700 || code == -32600, "{code}");
        }

        #[test]
        fn any_json_is_an_invalid_request_never_a_parse_error(value in json_value()) {
            let code = classify(value.to_string().as_bytes()).code.0;
            proptest::prop_assert_eq!(code, -32600);
        }

        #[test]
        fn any_params_of_a_known_method_give_invalid_params(
            method in proptest::sample::select(vec![
                "initialize", "tools/call", "tools/list", "resources/read",
                "resources/subscribe", "prompts/get", "completion/complete", "logging/setLevel",
            ]),
            params in proptest::option::of(json_value()),
        ) {
            let error = invalid_params(method, params.as_ref()).expect("a known method");
            proptest::prop_assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            proptest::prop_assert!(error.message.contains(method));
        }
    }
}
