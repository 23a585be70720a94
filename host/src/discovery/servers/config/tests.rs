//! One test per rule of an `mcp.json`, each with its message.

use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("s3cret".to_owned()),
        "HOME" => Some("/home/u".to_owned()),
        _ => None,
    }
}

/// `json` read as the file `dir/mcp.json`.
fn load_text(json: &str) -> ServerConfig {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    std::fs::write(&file, json).unwrap();
    let mut config = load(std::slice::from_ref(&file), &env);
    for s in &mut config.skipped {
        assert_eq!(s.file, file);
        s.file = PathBuf::from("mcp.json");
    }
    for s in &mut config.servers {
        s.file = PathBuf::from("mcp.json");
    }
    config
}

/// The one entry `entry` declares as server `s`, or its skip message.
fn entry(entry: &str) -> Result<ServerEntry, String> {
    let mut config = load_text(&format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#));
    match (config.servers.pop(), config.skipped.pop()) {
        (Some(server), None) => Ok(server),
        (None, Some(skipped)) => Err(skipped.to_string()),
        other => panic!("{other:?}"),
    }
}

fn file_error(json: &str) -> String {
    let config = load_text(json);
    assert!(config.servers.is_empty());
    assert_eq!(config.skipped.len(), 1);
    config.skipped[0].to_string()
}

#[test]
fn a_command_is_a_stdio_server_with_our_defaults() {
    let server = entry(r#"{"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}}"#).unwrap();
    assert_eq!(
        server.transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "pkg".into()],
            env: BTreeMap::from([("K".into(), "v".into())]),
            cwd: None,
        }
    );
    assert_eq!(server.toolset.name, "s");
    assert!(!server.toolset.default && !server.toolset.always);
    assert_eq!(server.connect_timeout, Duration::from_secs(30));
    assert_eq!(server.call_timeout, Duration::from_secs(60));
    assert!(server.namespace);
}

#[test]
fn servers_is_the_other_root_key() {
    let config = load_text(r#"{"servers": {"a": {"command": "x"}}}"#);
    assert_eq!(config.servers[0].name, "a");
}

#[test]
fn a_root_with_both_keys_is_skipped() {
    assert_eq!(
        file_error(r#"{"mcpServers": {}, "servers": {}}"#),
        "mcp.json: has both `mcpServers` and `servers`: keep one"
    );
}

#[test]
fn a_root_with_neither_key_is_skipped() {
    assert_eq!(
        file_error(r#"{"mcp": {}}"#),
        "mcp.json: has neither `mcpServers` nor `servers`"
    );
}

#[test]
fn a_file_that_is_not_json_is_skipped() {
    assert!(file_error("{").starts_with("mcp.json: not valid JSON: "));
    assert_eq!(file_error("[]"), "mcp.json: the root is not a JSON object");
    assert_eq!(
        file_error(r#"{"servers": []}"#),
        "mcp.json: the servers are not a JSON object (name to entry)"
    );
}

#[test]
fn a_missing_file_is_skipped() {
    let config = load(&[PathBuf::from("/nonexistent/x.mcp.json")], &env);
    assert!(
        config.skipped[0]
            .to_string()
            .starts_with("/nonexistent/x.mcp.json: cannot be read: ")
    );
}

#[test]
fn transport_names_are_case_insensitive_and_have_aliases() {
    for name in [
        "http",
        "HTTP",
        "streamable-http",
        "streamable_http",
        "Streamable",
    ] {
        let server = entry(&format!(r#"{{"type": "{name}", "url": "http://h/mcp"}}"#)).unwrap();
        assert!(matches!(server.transport, Transport::Http { .. }), "{name}");
    }
    let server = entry(r#"{"transport": "STDIO", "command": "x"}"#).unwrap();
    assert!(matches!(server.transport, Transport::Stdio { .. }));
}

#[test]
fn a_url_without_type_is_http() {
    let server = entry(r#"{"url": "https://h/mcp"}"#).unwrap();
    assert!(matches!(server.transport, Transport::Http { .. }));
}

#[test]
fn sse_is_refused_saying_so() {
    assert_eq!(
        entry(r#"{"type": "sse", "url": "http://h/sse"}"#).unwrap_err(),
        "mcp.json: server `s`: the SSE transport is not supported (it is deprecated): use streamable HTTP, `\"type\": \"http\"`"
    );
}

#[test]
fn an_unknown_transport_is_named() {
    assert_eq!(
        entry(r#"{"type": "ws", "url": "ws://h"}"#).unwrap_err(),
        "mcp.json: server `s`: unknown transport `ws`: use `stdio` or `http` (streamable HTTP)"
    );
}

#[test]
fn type_and_transport_must_agree() {
    assert_eq!(
        entry(r#"{"type": "stdio", "transport": "http", "command": "x"}"#).unwrap_err(),
        "mcp.json: server `s`: `type` (stdio) and `transport` (http) disagree"
    );
}

#[test]
fn an_entry_without_command_or_url_is_skipped() {
    assert_eq!(
        entry(r#"{"args": []}"#).unwrap_err(),
        "mcp.json: server `s`: has neither `command` (stdio) nor `url` (HTTP)"
    );
    assert_eq!(
        entry(r#"{"command": "x", "url": "http://h"}"#).unwrap_err(),
        "mcp.json: server `s`: has both `command` and `url`: give a `type`"
    );
}

#[test]
fn a_stdio_entry_needs_a_command() {
    assert_eq!(
        entry(r#"{"type": "stdio"}"#).unwrap_err(),
        "mcp.json: server `s`: `command` is missing"
    );
    assert_eq!(
        entry(r#"{"command": " "}"#).unwrap_err(),
        "mcp.json: server `s`: `command` is blank"
    );
}

#[test]
fn an_http_entry_needs_an_http_url() {
    assert_eq!(
        entry(r#"{"type": "http"}"#).unwrap_err(),
        "mcp.json: server `s`: `url` is missing"
    );
    assert_eq!(
        entry(r#"{"type": "http", "url": "ftp://h"}"#).unwrap_err(),
        "mcp.json: server `s`: `url` is not an http:// or https:// URL: ftp://h"
    );
}

#[test]
fn args_must_be_strings() {
    assert_eq!(
        entry(r#"{"command": "x", "args": ["a", 1]}"#).unwrap_err(),
        "mcp.json: server `s`: `args[1]` is not a string"
    );
    assert_eq!(
        entry(r#"{"command": "x", "args": "a b"}"#).unwrap_err(),
        "mcp.json: server `s`: `args` is not an array of strings"
    );
}

#[test]
fn env_and_headers_must_map_strings_to_strings() {
    assert_eq!(
        entry(r#"{"command": "x", "env": {"K": 1}}"#).unwrap_err(),
        "mcp.json: server `s`: `env.K` is not a string"
    );
    assert_eq!(
        entry(r#"{"url": "http://h", "headers": ["a"]}"#).unwrap_err(),
        "mcp.json: server `s`: `headers` is not an object of strings"
    );
}

#[test]
fn cwd_is_resolved_against_the_files_folder() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    std::fs::write(
        &file,
        r#"{"servers": {"s": {"command": "x", "cwd": "work"}}}"#,
    )
    .unwrap();
    let config = load(&[file], &env);
    let Transport::Stdio { cwd, .. } = &config.servers[0].transport else {
        panic!()
    };
    assert_eq!(cwd.as_deref(), Some(dir.path().join("work").as_path()));
}

#[test]
fn variables_expand_in_args_env_url_and_headers() {
    let server = entry(
        r#"{"command": "x", "args": ["--t=${TOKEN}"], "env": {"T": "${TOKEN}", "D": "${NO:-d}"}}"#,
    )
    .unwrap();
    let Transport::Stdio { args, env, .. } = server.transport else {
        panic!()
    };
    assert_eq!(args, ["--t=s3cret"]);
    assert_eq!(env["T"], "s3cret");
    assert_eq!(env["D"], "d");
    let server =
        entry(r#"{"url": "http://${NO:-h}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}"#)
            .unwrap();
    assert_eq!(
        server.transport,
        Transport::Http {
            url: "http://h/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer s3cret".into())]),
        }
    );
}

#[test]
fn variables_expand_in_the_command_and_its_folder_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    std::fs::write(
        &file,
        r#"{"servers": {"s": {"command": "${HOME}/bin/x", "cwd": "${HOME}/work"}}}"#,
    )
    .unwrap();
    let config = load(&[file], &env);
    let Transport::Stdio { command, cwd, .. } = &config.servers[0].transport else {
        panic!("{config:?}")
    };
    assert_eq!(command, "/home/u/bin/x");
    assert_eq!(cwd.as_deref(), Some(Path::new("/home/u/work")));
    assert!(
        entry(r#"{"command": "${NOPE}/x"}"#)
            .unwrap_err()
            .contains("`command`"),
        "an unset variable in the command names the field"
    );
}

#[test]
fn an_unset_variable_names_the_field() {
    assert_eq!(
        entry(r#"{"url": "http://h", "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}"#)
            .unwrap_err(),
        "mcp.json: server `s`: `headers.Authorization`: the environment variable `SEARCH_TOKEN` is not set (write `${SEARCH_TOKEN:-default}` for a default)"
    );
}

#[test]
fn the_toolset_key_sets_the_toolset() {
    let server = entry(
        r#"{"command": "x", "toolset": {"title": "S", "description": "d", "instructions": "i", "default": true, "always": true}}"#,
    )
    .unwrap();
    assert_eq!(
        server.toolset,
        ToolsetDecl {
            name: "s".into(),
            title: "S".into(),
            description: "d".into(),
            instructions: "i".into(),
            default: true,
            always: true,
        }
    );
}

#[test]
fn a_bad_toolset_key_is_named() {
    assert_eq!(
        entry(r#"{"command": "x", "toolset": {"titel": "S"}}"#).unwrap_err(),
        "mcp.json: server `s`: `toolset.titel` is not a toolset key (title, description, instructions, default, always)"
    );
    assert_eq!(
        entry(r#"{"command": "x", "toolset": {"default": "yes"}}"#).unwrap_err(),
        "mcp.json: server `s`: `toolset.default` is not true or false"
    );
    assert_eq!(
        entry(r#"{"command": "x", "toolset": true}"#).unwrap_err(),
        "mcp.json: server `s`: `toolset` is not a JSON object"
    );
}

#[test]
fn timeouts_are_positive_seconds() {
    let server =
        entry(r#"{"command": "x", "connect_timeout": 5, "call_timeout": 0.5, "cache_ttl": 0}"#)
            .unwrap();
    assert_eq!(server.connect_timeout, Duration::from_secs(5));
    assert_eq!(server.call_timeout, Duration::from_millis(500));
    assert_eq!(server.cache_ttl, Duration::ZERO);
    assert_eq!(
        entry(r#"{"command": "x", "call_timeout": 0}"#).unwrap_err(),
        "mcp.json: server `s`: `call_timeout` is zero"
    );
    assert_eq!(
        entry(r#"{"command": "x", "connect_timeout": "30s"}"#).unwrap_err(),
        "mcp.json: server `s`: `connect_timeout` is not a number of seconds"
    );
}

#[test]
fn namespace_is_a_boolean() {
    assert!(
        !entry(r#"{"command": "x", "namespace": false}"#)
            .unwrap()
            .namespace
    );
    assert_eq!(
        entry(r#"{"command": "x", "namespace": "no"}"#).unwrap_err(),
        "mcp.json: server `s`: `namespace` is not true or false"
    );
}

#[test]
fn an_entry_that_is_not_an_object_is_skipped() {
    assert_eq!(
        entry(r#""npx x""#).unwrap_err(),
        "mcp.json: server `s`: the entry is not a JSON object"
    );
}

#[test]
fn names_are_not_blank_and_have_no_double_underscore() {
    let config = load_text(r#"{"servers": {" ": {"command": "x"}, "a__b": {"command": "x"}}}"#);
    let messages: Vec<String> = config.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "mcp.json: server ` `: the server name is blank",
            "mcp.json: server `a__b`: the server name contains `__`, which separates server and tool",
        ]
    );
}

#[test]
fn names_no_url_can_select_are_skipped_naming_the_rule() {
    let config = load_text(
        r#"{"servers": {"a,b": {"command": "x"}, "../../esc": {"command": "x"}, "r\u202Etl": {"command": "x"}, "ok.1-b_c": {"command": "x"}}}"#,
    );
    let messages: Vec<String> = config.skipped.iter().map(ToString::to_string).collect();
    let rule = crate::util::names::NAME_RULE;
    assert_eq!(
        messages,
        [
            format!(
                "mcp.json: server `../../esc`: the name holds `/`, which no URL can select: {rule}"
            ),
            format!("mcp.json: server `a,b`: the name holds `,`, which no URL can select: {rule}"),
            format!(
                "mcp.json: server `r\\u{{202e}}tl`: the name holds the invisible character U+202E, which no URL can select: {rule}"
            ),
        ]
    );
    let served: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(served, ["ok.1-b_c"]);
}

#[test]
fn names_are_unique_across_files_the_first_wins() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.mcp.json");
    let b = dir.path().join("b.mcp.json");
    std::fs::write(&a, r#"{"servers": {"s": {"command": "first"}}}"#).unwrap();
    std::fs::write(&b, r#"{"servers": {"s": {"command": "second"}}}"#).unwrap();
    let config = load(&files(dir.path(), &[]), &env);
    assert_eq!(config.servers.len(), 1);
    assert_eq!(config.servers[0].file, a);
    assert_eq!(
        config.skipped[0].to_string(),
        format!(
            "{}: server `s`: the name is already taken by the entry in {}",
            b.display(),
            a.display()
        )
    );
}

#[test]
fn the_folder_files_come_first_then_the_named_ones() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "mcp.json",
        "b.mcp.json",
        "a.mcp.json",
        "other.json",
        ".mcp.json",
    ] {
        std::fs::write(dir.path().join(name), "{}").unwrap();
    }
    let extra = PathBuf::from("/elsewhere/x.json");
    assert_eq!(
        files(dir.path(), std::slice::from_ref(&extra)),
        [
            dir.path().join("mcp.json"),
            dir.path().join("a.mcp.json"),
            dir.path().join("b.mcp.json"),
            extra,
        ]
    );
}
