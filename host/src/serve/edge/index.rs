//! `GET /`, and a browser's `GET` of the MCP endpoint: a small page saying what this server is
//! and how to connect to it, instead of a 404 or a 406. Plain HTML, no script, nothing fetched;
//! it names no plugin, so it needs no credentials.

use axum::{
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
};

/// Whether a request with these headers comes from a browser opening a page: it accepts HTML
/// and not the event stream an MCP client's `GET` asks for.
pub(crate) fn wants_page(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    accept.contains("text/html") && !accept.contains("text/event-stream")
}

/// The page of the server `name` `version`, whose MCP endpoint is `mcp_path`, as reached
/// through `host` (the request's `Host` header, when it has one); `ui` says whether it links to
/// the page at `/ui`.
pub(crate) fn page(
    name: &str,
    version: &str,
    mcp_path: &str,
    host: Option<&str>,
    ui: bool,
) -> Response {
    let endpoint = match host {
        Some(host) => format!("http://{host}{mcp_path}"),
        None => mcp_path.to_owned(),
    };
    let (name, version, endpoint) = (escape(name), escape(version), escape(&endpoint));
    let ui = if ui {
        "<li><a href=\"/ui\">/ui</a>: all of this on a page, kept up to date</li>\n"
    } else {
        ""
    };
    let body = format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{name}</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 44rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; background: #fff; }}
code, pre {{ font: 14px ui-monospace, monospace; background: #f2f2f2; border-radius: 4px; }}
pre {{ padding: .75rem; overflow-x: auto; }}
a {{ color: #0645ad; }}
</style>
</head>
<body>
<main>
<h1>{name} <small>{version}</small></h1>
<p>This is a <a href="https://modelcontextprotocol.io">Model Context Protocol</a> server. Its
endpoint is <code>{endpoint}</code>: connect an MCP client to it (streamable HTTP), not a
browser. Add <code>?toolsets=NAME,NAME</code> to the URL to choose its toolsets.</p>
<h2>Connect a client</h2>
<pre><code>{{"mcpServers": {{"reactor": {{"url": "{endpoint}"}}}}}}</code></pre>
<h2>What it serves</h2>
<ul>
{ui}<li><a href="/toolsets">/toolsets</a>: the toolsets, which are active, and what a URL would get</li>
<li><a href="/contributions">/contributions</a>: every tool and the extensions applied to it</li>
<li><a href="/healthz">/healthz</a>: whether it is up, and what failed</li>
<li><a href="/readyz">/readyz</a>: whether it takes new requests (503 once shutting down)</li>
</ul>
</main>
</body>
</html>
"#
    );
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// `text` with the characters HTML gives a meaning escaped.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepting(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn a_browser_wants_the_page_and_an_mcp_client_does_not() {
        assert!(wants_page(&accepting(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        )));
        assert!(!wants_page(&accepting("text/event-stream")));
        assert!(!wants_page(&accepting(
            "application/json, text/event-stream"
        )));
        assert!(!wants_page(&HeaderMap::new()));
    }

    #[test]
    fn what_the_page_shows_is_escaped() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
