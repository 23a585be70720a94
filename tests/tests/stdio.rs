//! `reactor-mcp-server stdio`: MCP over stdin and stdout, end to end. The selection comes from
//! `--toolsets`; what a plugin prints (Rust's `println!`, C's `printf`, when instantiated and
//! when called) lands in the log, never in the protocol stream; the log has no colour codes when
//! redirected (over HTTP too); EOF on stdin and SIGTERM both run the plugins' stop hooks and
//! exit 0. The official Rust SDK's child-process client drives it as desktop clients do. Pipes
//! are read and written through the reactor; a socket given as stdin and stdout is served too.

use std::{
    io::{BufRead, BufReader, Read, Write},
    process::{Child, ChildStdin, ExitStatus, Stdio},
    sync::mpsc::{Receiver, channel},
    time::{Duration, Instant},
};

use e2e::{
    HostProcess, PluginDir, host_command,
    mcp::{call, text},
};
use rmcp::{ServiceExt as _, transport::TokioChildProcess};
use serde_json::{Value, json};

/// How long a test waits for something that should happen within a second.
const PATIENCE: Duration = Duration::from_secs(10);

/// A host on stdio, driven by hand: JSON lines in, every line out kept.
struct StdioHost {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl StdioHost {
    fn start(dir: &PluginDir, args: &[&str]) -> Self {
        let mut child = host_command(&[&["stdio"], args].concat(), dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the host");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        }
    }

    /// Writes `bytes` to the host's stdin as they are.
    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("write to the host");
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("write to the host");
        stdin.flush().unwrap();
    }

    /// The next line the host writes, which must be a JSON-RPC message.
    fn receive(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the host answers on stdout");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC, got {line:?}: {e}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// Sends request `id` and returns its answer.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = self.receive();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    fn initialize(&mut self) -> Value {
        let answer = self.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "stdio-test", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    fn wait(&mut self) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < PATIENCE, "the host did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the exit; the status, the log, and any stdout lines left unread.
    fn finish(mut self) -> (ExitStatus, String, Vec<String>) {
        let status = self.wait();
        let log = self.stderr.join().unwrap();
        let rest = self.lines.try_iter().collect();
        (status, log, rest)
    }
}

/// A client that hands the server one end of a socket as stdin and stdout (not a pipe: the
/// server reads and writes it through tokio's blocking pool) is served as over pipes, and EOF
/// ends the server.
#[cfg(unix)]
#[test]
fn a_socket_as_stdin_and_stdout_is_served_too() {
    use std::os::{fd::OwnedFd, unix::net::UnixStream};
    let dir = printer_dir();
    let (client, server) = UnixStream::pair().unwrap();
    let mut child = host_command(&["stdio", "--toolsets", "only=printer"], &dir)
        .stdin(Stdio::from(OwnedFd::from(server.try_clone().unwrap())))
        .stdout(Stdio::from(OwnedFd::from(server)))
        .stderr(Stdio::null())
        .spawn()
        .expect("start the host");
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    let (mut writer, closer) = (client.try_clone().unwrap(), client.try_clone().unwrap());
    let mut lines = BufReader::new(client).lines();
    let mut send = |message: Value| writeln!(writer, "{message}").unwrap();
    let mut next = || {
        let line = lines
            .next()
            .expect("an answer")
            .expect("read within PATIENCE");
        serde_json::from_str::<Value>(&line).unwrap()
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "socket-test", "version": "1"}}}));
    let initialized = next();
    assert_eq!(
        initialized["result"]["serverInfo"]["name"], "reactor-mcp-server",
        "{initialized}"
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "shout", "arguments": {"text": "over a socket"}}}));
    let called = next();
    assert_eq!(
        called["result"]["content"][0]["text"], "over a socket",
        "{called}"
    );
    closer.shutdown(std::net::Shutdown::Write).unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < PATIENCE, "the host did not exit at EOF");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

fn printer_dir() -> PluginDir {
    PluginDir::with(&["fixture-printer", "benchmarks"])
}

#[test]
fn stdio_serves_the_selection_and_what_plugins_print_goes_to_the_log() {
    let dir = printer_dir();
    let mut host = StdioHost::start(&dir, &["--toolsets", "only=printer"]);
    let answer = host.initialize();
    assert_eq!(answer["result"]["serverInfo"]["name"], "reactor-mcp-server");

    let tools = host.request(2, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shout", "list_server_toolsets"]);

    let called = host.request(
        3,
        "tools/call",
        json!({"name": "shout", "arguments": {"text": "over the stream"}}),
    );
    assert_eq!(
        called["result"]["content"][0]["text"], "over the stream",
        "{called}"
    );
    let hidden = host.request(4, "tools/call", json!({"name": "echo", "arguments": {}}));
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    assert_eq!(
        hidden["error"]["data"]["hint"],
        "tool `echo` is in toolset `benchmarks`, which this server does not serve; start it with --toolsets toolsets=benchmarks",
        "no URL to change over stdio"
    );

    let toolsets = host.request(
        5,
        "tools/call",
        json!({"name": "list_server_toolsets", "arguments": {}}),
    );
    let how = toolsets["result"]["structuredContent"]["how_to_ask_for_more"]
        .as_str()
        .unwrap_or_default();
    assert!(how.contains("--toolsets"), "{how}");

    host.stdin = None;
    let (status, log, rest) = host.finish();
    assert!(status.success(), "{status:?}\n{log}");
    assert!(rest.is_empty(), "stdout after the answers: {rest:?}");
    for printed in [
        "println: instantiated",
        "printf: instantiated",
        "println: over the stream",
        "printf: over the stream",
        "stopped plugin",
    ] {
        assert!(
            log.contains(printed),
            "`{printed}` is not in the log:\n{log}"
        );
    }
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a redirected log:\n{log}"
    );
}

#[test]
fn every_request_line_is_answered_even_garbage_and_an_over_long_one() {
    let dir = printer_dir();
    let mut host = StdioHost::start(&dir, &["--toolsets", "only=printer"]);
    host.initialize();
    host.send_raw(b"garbage\n");
    let parse_error = host.receive();
    assert_eq!(
        (&parse_error["id"], &parse_error["error"]["code"]),
        (&json!(null), &json!(-32700)),
        "{parse_error}"
    );
    host.send(&json!({"jsonrpc": "2.0", "id": 2, "method": {"not": "a string"}}));
    let invalid = host.receive();
    assert_eq!(
        (&invalid["id"], &invalid["error"]["code"]),
        (&json!(2), &json!(-32600))
    );
    host.send(&json!([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]));
    let batch = host.receive();
    assert_eq!(batch["error"]["code"], -32600, "{batch}");

    // 5 MiB of arguments, over the 4 MiB a message may have, with the id after them.
    let huge = json!({"jsonrpc": "2.0", "method": "tools/call",
        "params": {"name": "shout", "arguments": {"text": "x".repeat(5 << 20)}}, "id": 4});
    let huge = format!("{huge}\n");
    host.send_raw(huge.as_bytes());
    let too_long = host.receive();
    assert_eq!(too_long["id"], 4, "{too_long}");
    assert_eq!(too_long["error"]["code"], -32600);
    assert_eq!(
        too_long["error"]["message"],
        format!(
            "the message is {} bytes, over the limit of {} bytes for one message",
            huge.len() - 1,
            4 << 20
        )
    );
    let shout = host.request(
        5,
        "tools/call",
        json!({"name": "shout", "arguments": {"text": "still here"}}),
    );
    assert_eq!(
        shout["result"]["content"][0]["text"], "still here",
        "{shout}"
    );
    host.stdin = None;
    let (status, _, rest) = host.finish();
    assert!(status.success(), "{status}");
    assert_eq!(rest, Vec::<String>::new(), "nothing else was written");
}

#[test]
fn sigterm_stops_a_stdio_server_and_its_plugins() {
    let dir = printer_dir();
    let mut host = StdioHost::start(&dir, &["--toolsets", "only=printer"]);
    host.initialize();
    let called = host.request(
        2,
        "tools/call",
        json!({"name": "shout", "arguments": {"text": "hi"}}),
    );
    assert_eq!(called["result"]["content"][0]["text"], "hi");
    e2e::procs::signal(host.child.id(), "TERM");
    let (status, log, _) = host.finish();
    assert!(status.success(), "{status:?}\n{log}");
    assert!(log.contains("stopped plugin"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rust_sdk_child_process_client_lists_and_calls() {
    let dir = printer_dir();
    let mut command = tokio::process::Command::from(host_command(
        &["stdio", "--toolsets", "only=benchmarks"],
        &dir,
    ));
    command.stderr(Stdio::null());
    let client =
        ().serve(TokioChildProcess::new(command).expect("spawn"))
            .await
            .expect("initialize over stdio");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["echo", "add", "sleep", "blob", "list_server_toolsets"]
    );
    let result = client
        .call_tool(call("add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(text(&result), "5");
    client.cancel().await.unwrap();
}

#[test]
fn the_http_log_has_no_colour_codes_when_redirected() {
    let dir = PluginDir::with(&["benchmarks"]);
    let host = HostProcess::serve(&dir, &["--log-level", "debug"]);
    let log = host.stderr_so_far();
    assert!(log.contains("INFO") || log.contains("DEBUG"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a redirected log:\n{log}"
    );
}
