//! What a hostile or careless client cannot do to the server, end to end, on loopback: a
//! malformed message gets the JSON-RPC error that names what is wrong (HTTP 400, or `-32602`
//! in band for a known method's bad `params`); a second `Host` header is refused; connections
//! are bounded in number and in the time a client may take to send its headers or its body, or
//! to read its answer; SIGTERM drains, with sessions and without, after turning `/readyz` to 503
//! for the shutdown delay.

use std::{
    io::{ErrorKind, Read, Write},
    net::{SocketAddr, TcpStream},
    time::{Duration, Instant},
};

use e2e::{
    HostProcess, PluginDir,
    mcp::{RawSession, call, connect, text},
};
use serde_json::{Value, json};

/// How long a test waits for something that should happen within a second or two.
const PATIENCE: Duration = Duration::from_secs(10);

/// Posts `body` as JSON to `url`; the HTTP status and the body as JSON (`null` if it is not).
async fn post_text(url: &str, body: &str) -> (u16, Value) {
    let response = e2e::http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned())
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A TCP connection to the host that writes `bytes` and gives the socket back.
fn send_raw(address: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.write_all(bytes).expect("write");
    stream
}

/// Everything the peer sends until it closes the connection, or until `within` is over (then
/// `None`).
fn read_to_close(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buffer = [0; 64 * 1024];
    while started.elapsed() < within {
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buffer[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(got),
        }
    }
    None
}

/// The status line of an HTTP answer.
fn status_line(answer: &[u8]) -> String {
    String::from_utf8_lossy(answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn benchmarks_host(extra_args: &[&str]) -> (PluginDir, HostProcess) {
    let dir = PluginDir::with(&["benchmarks"]);
    let host = HostProcess::serve(&dir, extra_args);
    (dir, host)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_that_is_not_a_message_gets_400_and_the_json_rpc_error_naming_why() {
    let (_dir, host) = benchmarks_host(&[]);
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    for (body, code, needle) in [
        ("{", -32700, "not JSON"),
        ("", -32700, "not JSON"),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            -32600,
            "batches are not supported",
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, -32600, "`method` is missing"),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            -32600,
            "`jsonrpc`",
        ),
        (r#""ping""#, -32600, "JSON object"),
    ] {
        let (status, answer) = post_text(&url, body).await;
        assert_eq!(status, 400, "{body:?}: {answer}");
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{body:?}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{body:?}: {message}");
    }
    assert_eq!(
        e2e::mcp::get_json(&format!("{}/healthz", host.base_url()))
            .await
            .0,
        200
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn params_that_do_not_fit_a_known_method_get_32602_naming_the_field() {
    let (_dir, host) = benchmarks_host(&[]);
    let session = RawSession::open(&format!("{}/mcp?only=benchmarks", host.base_url())).await;
    for (id, method, params, field) in [
        (2, "tools/call", json!({"name": 5}), "params.name"),
        (
            3,
            "tools/call",
            json!({"name": "echo", "arguments": []}),
            "params.arguments",
        ),
        (
            4,
            "logging/setLevel",
            json!({"level": "loud"}),
            "params.level",
        ),
        (5, "resources/read", json!({"uri": false}), "params.uri"),
    ] {
        let (status, answer) = session.request(id, method, params).await;
        assert_eq!(status, 200, "{method}: {answer}");
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("`{method}`")) && message.contains(field),
            "{method}: {message}"
        );
    }
    let (_, answer) = session.request(6, "no/such/method", json!({})).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let (_, answer) = session
        .request(
            7,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "ok"}}),
        )
        .await;
    assert!(answer.get("result").is_some(), "{answer}");
}

#[test]
fn a_second_host_header_is_a_bad_request_whatever_its_order() {
    let (_dir, host) = benchmarks_host(&[]);
    for hosts in [
        "Host: 127.0.0.1\r\nHost: evil.example",
        "Host: evil.example\r\nHost: 127.0.0.1",
    ] {
        let request = format!("GET /healthz HTTP/1.1\r\n{hosts}\r\nConnection: close\r\n\r\n");
        let mut stream = send_raw(host.addr(), request.as_bytes());
        let answer = read_to_close(&mut stream, PATIENCE).expect("an answer");
        assert_eq!(status_line(&answer), "HTTP/1.1 400 Bad Request", "{hosts}");
    }
}

#[test]
fn connections_are_bounded_and_half_sent_headers_time_out() {
    let (_dir, host) = benchmarks_host(&["--max-connections", "3", "--header-timeout", "1"]);
    let half = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    let mut slow: Vec<TcpStream> = (0..3).map(|_| send_raw(host.addr(), half)).collect();
    std::thread::sleep(Duration::from_millis(200));

    let full = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    let mut over = send_raw(host.addr(), full);
    let answer = read_to_close(&mut over, PATIENCE).expect("an answer");
    assert_eq!(status_line(&answer), "HTTP/1.1 503 Service Unavailable");
    assert!(
        String::from_utf8_lossy(&answer).contains("3 connections are open"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    let started = Instant::now();
    for stream in &mut slow {
        assert!(
            read_to_close(stream, PATIENCE).is_some(),
            "a connection that never finished its headers is closed"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut fresh = send_raw(host.addr(), full);
    let answer = read_to_close(&mut fresh, PATIENCE).expect("an answer");
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK");
}

#[test]
fn a_body_that_stalls_gets_408() {
    let (_dir, host) = benchmarks_host(&["--idle-timeout", "1"]);
    let request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
                   accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{\"jsonrpc\"";
    let mut stream = send_raw(host.addr(), request.as_bytes());
    let answer = read_to_close(&mut stream, PATIENCE).expect("an answer, then the close");
    assert_eq!(status_line(&answer), "HTTP/1.1 408 Request Timeout");
    assert!(String::from_utf8_lossy(&answer).contains("no part of the body arrived for 1 s"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_stops_reading_its_answer_is_disconnected() {
    let dir = PluginDir::with(&["benchmarks"]);
    let mut host = HostProcess::serve_with_env(
        &dir,
        &["--stateless", "--idle-timeout", "1"],
        &[(
            "RUST_LOG",
            "info,reactor_mcp_server::serve::edge::listener=debug",
        )],
    );
    // Twice what the server's socket buffer can take (4 MiB at most), the client's being tiny.
    let bytes = 8 * 1024 * 1024;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "blob", "arguments": {"bytes": bytes}}})
    .to_string();
    let request = format!(
        "POST /mcp?only=benchmarks HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(host.addr()).await.expect("connect");
    let mut stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    host.wait_for_stderr("the client read nothing for 1 s", Duration::from_secs(120));
    let answer = read_to_close(&mut stream, PATIENCE).expect("the server closes the connection");
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK");
    assert!(
        answer.len() < bytes,
        "the answer was cut short: {} bytes",
        answer.len()
    );
    let fresh = send_raw(
        host.addr(),
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    let answer = read_to_close(&mut { fresh }, PATIENCE).expect("an answer");
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK");
}

/// Sends SIGTERM to `pid`.
fn terminate(pid: u32) {
    e2e::procs::signal(pid, "TERM");
}

/// SIGTERM while a 2 s call is in flight: a new request gets 503 with `Retry-After`, the call's
/// answer still reaches its client, the plugins' stop hooks run and the host exits 0.
async fn sigterm_drains(extra_args: &[&str]) {
    let (_dir, mut host) = benchmarks_host(extra_args);
    let url = format!("{}/mcp?only=benchmarks", host.base_url());
    let client = connect(&url).await;
    let in_flight = tokio::spawn(async move {
        let result = client
            .call_tool(call("sleep", json!({"ms": 2000})))
            .await
            .map(|r| text(&r));
        drop(client);
        result
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    terminate(host.pid());
    tokio::time::sleep(Duration::from_millis(300)).await;

    let refused = e2e::http()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await
        .expect("a draining server still answers");
    assert_eq!(refused.status().as_u16(), 503);
    assert!(refused.headers().contains_key("retry-after"));

    let answer = tokio::time::timeout(PATIENCE, in_flight)
        .await
        .expect("the call ends")
        .unwrap();
    assert_eq!(answer.expect("the call's answer"), "slept 2000 ms");
    let status = host.wait_for_exit(PATIENCE).expect("the host exits");
    assert!(status.success(), "{status:?}");
    let log = host.stderr_so_far();
    assert!(log.contains("stopped plugin"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_drains_with_sessions() {
    sigterm_drains(&[]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_drains_without_sessions() {
    sigterm_drains(&["--stateless"]).await;
}

/// The status and JSON body of `GET url`.
async fn status_of(url: &str) -> (u16, Value) {
    let answer = e2e::http().get(url).send().await.expect("an answer");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("JSON"))
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_turns_readyz_to_503_and_serves_on_for_the_shutdown_delay() {
    let (_dir, mut host) = benchmarks_host(&["--shutdown-delay", "2"]);
    let base = host.base_url();
    let (status, ready) = status_of(&format!("{base}/readyz")).await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["status"], "ready");
    assert_eq!(ready["watcher"], "running");
    let client = connect(&format!("{base}/mcp?only=benchmarks")).await;

    terminate(host.pid());
    host.wait_for_stderr("serving on for 2 s (--shutdown-delay)", PATIENCE);
    let (status, leaving) = status_of(&format!("{base}/readyz")).await;
    assert_eq!(status, 503, "{leaving}");
    assert_eq!(leaving["reasons"], json!(["shutting down"]));
    let (status, _) = status_of(&format!("{base}/healthz")).await;
    assert_eq!(status, 200, "still alive");
    let echoed = client
        .call_tool(call("echo", json!({"text": "still served"})))
        .await
        .expect("calls are served during the delay");
    assert_eq!(text(&echoed), "still served");

    let status = host.wait_for_exit(PATIENCE).expect("the host exits");
    assert!(status.success(), "{status:?}");
}
