//! `GET /ui`: a read-only page showing what the server offers, what is open, what is failing
//! and how tool calls perform. Its files (HTML, CSS, one script) are embedded in the binary and
//! hold no data, so they need no credentials; the script fetches `/toolsets`, `/contributions`,
//! `/healthz` and [`metrics`] with the credentials the viewer gives, so the page shows exactly
//! what the caller's bound allows. Nothing runs for it unless someone looks: each request is
//! answered from the current generation, as the JSON routes are.

use std::{collections::BTreeSet, sync::Arc};

use axum::{
    Extension, Router,
    extract::State,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
    routing::get,
};

use crate::{
    auth::RequestIdentity, observe::metrics, reports::toolsets::TOOLSETS_TOOL, serve::ServeState,
};

/// The page's path.
pub(crate) const PATH: &str = "/ui";

/// The page's metrics: the tool calls' durations, in the metrics' text format.
const METRICS_PATH: &str = "/ui/metrics";

/// The page's files: path, content type, content.
const FILES: [(&str, &str, &str); 3] = [
    (
        PATH,
        "text/html; charset=utf-8",
        include_str!("ui/index.html"),
    ),
    (
        "/ui/ui.css",
        "text/css; charset=utf-8",
        include_str!("ui/ui.css"),
    ),
    (
        "/ui/ui.js",
        "text/javascript; charset=utf-8",
        include_str!("ui/ui.js"),
    ),
];

/// What the page's files may load and call: only this server.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// Whether `path` is one of the page's files, which hold no data and need no credentials.
pub(crate) fn is_file(path: &str) -> bool {
    FILES.iter().any(|(file, _, _)| *file == path)
}

/// `router` with the page's files and [`METRICS_PATH`].
pub(crate) fn routes(router: Router<Arc<ServeState>>) -> Router<Arc<ServeState>> {
    FILES
        .iter()
        .fold(router, |router, &(path, content_type, body)| {
            router.route(path, get(move || async move { file(content_type, body) }))
        })
        .route(METRICS_PATH, get(tool_metrics))
}

/// One of the page's files.
fn file(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// `GET /ui/metrics`: the durations of `tools/call` (`mcp_server_operation_duration_seconds`,
/// buckets, sums and counts) of the tools the caller may be served, from which the page
/// computes calls per second and percentiles; 404 while metrics are off (`--metrics-addr`).
async fn tool_metrics(
    State(state): State<Arc<ServeState>>,
    caller: Option<Extension<RequestIdentity>>,
) -> Response {
    let Some(registry) = metrics::get() else {
        return (StatusCode::NOT_FOUND, "metrics are off (--metrics-addr)").into_response();
    };
    let caller = caller.and_then(|Extension(RequestIdentity(identity))| identity);
    let visible: Option<BTreeSet<String>> = caller.map(|caller| {
        let report = ServeState::contributions_report(&state.generation(), Some(&caller));
        let mut tools: BTreeSet<String> = report.tools.into_iter().map(|t| t.name).collect();
        // The host's own tool shows each caller only what it may use.
        tools.insert(TOOLSETS_TOOL.to_owned());
        tools
    });
    let text = tool_call_lines(&registry.render(), |tool| {
        visible.as_ref().is_none_or(|v| v.contains(tool))
    });
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

/// The samples of `text` (the metrics' text format) that are `tools/call` durations of a tool
/// `visible` keeps, one a line.
fn tool_call_lines(text: &str, visible: impl Fn(&str) -> bool) -> String {
    text.lines()
        .filter(|line| {
            line.starts_with("mcp_server_operation_duration_seconds_")
                && line.contains("mcp_method_name=\"tools/call\"")
                && label(line, "gen_ai_tool_name").is_some_and(&visible)
        })
        .fold(String::new(), |mut kept, line| {
            kept.push_str(line);
            kept.push('\n');
            kept
        })
}

/// The value of `name` among the labels of the sample `line`, as written (tool names need no
/// escaping).
fn label<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &line[start..];
    Some(&rest[..rest.find('"')?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tool_calls_of_visible_tools_are_kept() {
        let text = "# TYPE mcp_server_operation_duration_seconds histogram\n\
            mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",le=\"0.005\"} 2\n\
            mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"secret\"} 1\n\
            mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/list\"} 4\n\
            reactor_sessions_open 1\n";
        assert_eq!(
            tool_call_lines(text, |tool| tool == "echo"),
            "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",le=\"0.005\"} 2\n"
        );
        assert_eq!(tool_call_lines(text, |_| true).lines().count(), 2);
    }

    #[test]
    fn the_page_files_are_served_without_data() {
        assert!(is_file("/ui"));
        assert!(is_file("/ui/ui.js"));
        assert!(!is_file(METRICS_PATH));
    }
}
