//! The `mcp.json` files: which MCP servers to bridge, as MCP clients read them.
//!
//! A file's root holds exactly one of `mcpServers` / `servers`, an object of entries by server
//! name. An entry is a stdio command (`command`, `args`, `env`, `cwd`) or a streamable HTTP
//! endpoint (`url`, `headers`), chosen by `type` (or `transport`), else by which of `command` /
//! `url` it has. `${VAR}` and `${VAR:-default}` expand from the host's environment in
//! `command`, `args`, `env`, `cwd`, `url` and `headers` ([`super::expand`]). Our own keys (`toolset`, `connect_timeout`,
//! `call_timeout`, `cache_ttl`, `namespace`) are ignored by other clients; other clients' keys
//! are ignored here.
//!
//! Reading is lenient: a file or an entry that cannot be used is skipped with the reason
//! ([`Skipped`]), and everything else is kept. Clashes with plugins are discovery's to check.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use plugin_manifest::ToolsetDecl;
use serde_json::{Map, Value};

use super::expand::expand;
use crate::util::names::Shown;

/// The file of bridged servers in a plugin folder, beside every `*.mcp.json` there.
pub(crate) const FOLDER_FILE: &str = "mcp.json";
/// The name ending of the other files of bridged servers in a plugin folder.
pub(crate) const FOLDER_SUFFIX: &str = ".mcp.json";

const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(300);
/// The largest message read from a server by default: rmcp's and the MCP SDKs' line limit.
pub(crate) const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// One MCP server to bridge, as its entry declares it (variables expanded).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEntry {
    /// The server's name: its toolset's name and its tools' prefix.
    pub(crate) name: String,
    /// The file that declares it.
    pub(crate) file: PathBuf,
    /// How to reach it.
    pub(crate) transport: Transport,
    /// Its toolset: named after the server, off by default.
    pub(crate) toolset: ToolsetDecl,
    /// How long starting (or connecting) and listing its tools may take.
    pub(crate) connect_timeout: Duration,
    /// How long one tool call may take.
    pub(crate) call_timeout: Duration,
    /// How long a tool list read from it is reused; zero reads it every time.
    pub(crate) cache_ttl: Duration,
    /// The largest message read from it, in bytes; an answer over it fails its call at once.
    pub(crate) max_message_bytes: usize,
    /// Whether its tools are served as `<server>__<tool>` (else by their own names).
    pub(crate) namespace: bool,
    /// Whether it is an isolated plugin's child process rather than an `mcp.json` server.
    pub(crate) isolated: bool,
    /// For a sandboxed plugin's child (`--sandbox`): what it is held to.
    pub(crate) sandbox: Option<Sandboxing>,
    /// Whether tool calls to a stdio server are written and answered outside rmcp's client
    /// service (`crate::providers::bridged`'s lane); not with `--no-hot-path`.
    pub(crate) lane: bool,
}

/// What a sandboxed plugin's child (`--sandbox`) is held to: the host variables it starts with,
/// and what the kernel enforces of the plugin's permissions, one line each, as start-up, `list`
/// and `/toolsets` say it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Sandboxing {
    /// The host's variables the child starts with (with how to log): those the plugin declares.
    #[serde(skip)]
    pub(crate) env: Vec<String>,
    /// What is enforced.
    pub(crate) enforced: Vec<String>,
    /// What the plugin may do beyond its permissions, since this kernel (or this sandbox)
    /// cannot hold it to them.
    pub(crate) not_enforced: Vec<String>,
    /// What it declares and is not granted, with why (a variable not set, a path that is not
    /// there).
    pub(crate) not_granted: Vec<String>,
}

impl ServerEntry {
    /// How messages name it: ``server `NAME` `` or, isolated, ``plugin `NAME` ``.
    pub(crate) fn label(&self) -> String {
        let kind = if self.isolated { "plugin" } else { "server" };
        format!("{kind} `{}`", Shown(&self.name))
    }
}

/// How a bridged server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A command the host starts, speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the host's environment for it.
        env: BTreeMap<String, String>,
        /// Its working directory (relative ones are resolved against the file's folder).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

/// A file or an entry that was not taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// The file.
    pub(crate) file: PathBuf,
    /// The entry, when one entry (not the whole file) is skipped.
    pub(crate) server: Option<String>,
    /// Why.
    pub(crate) reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.server {
            Some(server) => write!(
                f,
                "{}: server `{}`: {}",
                self.file.display(),
                Shown(server),
                self.reason
            ),
            None => write!(f, "{}: {}", self.file.display(), self.reason),
        }
    }
}

/// What the files declare.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ServerConfig {
    /// Usable entries, in file then entry order, the first of each name.
    pub(crate) servers: Vec<ServerEntry>,
    /// Files and entries not taken.
    pub(crate) skipped: Vec<Skipped>,
}

/// The files of bridged servers: the plugin folder's `mcp.json`, then its `*.mcp.json` in name
/// order (those that exist), then `extra` (named explicitly, so kept even when missing).
pub(crate) fn files(plugin_dir: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(plugin_dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(FOLDER_SUFFIX) && n != FOLDER_SUFFIX)
        })
        .collect();
    found.sort();
    let main = plugin_dir.join(FOLDER_FILE);
    main.is_file()
        .then_some(main)
        .into_iter()
        .chain(found)
        .chain(extra.iter().cloned())
        .collect()
}

/// Reads `files` with `env` as the environment; a later entry with a name already taken is
/// skipped.
pub(crate) fn load(files: &[PathBuf], env: &dyn Fn(&str) -> Option<String>) -> ServerConfig {
    let mut config = ServerConfig::default();
    for file in files {
        let skip_file = |reason: String| Skipped {
            file: file.clone(),
            server: None,
            reason,
        };
        let entries = match std::fs::read_to_string(file) {
            Ok(text) => parse_root(&text),
            Err(e) => Err(format!("cannot be read: {e}")),
        };
        let entries = match entries {
            Ok(entries) => entries,
            Err(reason) => {
                config.skipped.push(skip_file(reason));
                continue;
            }
        };
        for (name, value) in entries {
            let entry = match config.servers.iter().find(|s| s.name == name) {
                Some(first) => Err(format!(
                    "the name is already taken by the entry in {}",
                    first.file.display()
                )),
                None => parse_entry(&name, &value, file, env),
            };
            match entry {
                Ok(entry) => config.servers.push(entry),
                Err(reason) => config.skipped.push(Skipped {
                    file: file.clone(),
                    server: Some(name),
                    reason,
                }),
            }
        }
    }
    config
}

/// The entries of a file's text, by name, in file order.
fn parse_root(text: &str) -> Result<Map<String, Value>, String> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(mut root) = root else {
        return Err("the root is not a JSON object".to_owned());
    };
    let servers = match (root.remove("mcpServers"), root.remove("servers")) {
        (Some(_), Some(_)) => {
            return Err("has both `mcpServers` and `servers`: keep one".to_owned());
        }
        (None, None) => return Err("has neither `mcpServers` nor `servers`".to_owned()),
        (Some(v), None) | (None, Some(v)) => v,
    };
    match servers {
        Value::Object(entries) => Ok(entries),
        _ => Err("the servers are not a JSON object (name to entry)".to_owned()),
    }
}

/// One entry, checked.
fn parse_entry(
    name: &str,
    value: &Value,
    file: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerEntry, String> {
    check_name(name)?;
    let Value::Object(entry) = value else {
        return Err("the entry is not a JSON object".to_owned());
    };
    let fields = Fields::new(entry, "");
    let transport = match transport_kind(&fields)? {
        Kind::Stdio => Transport::Stdio {
            command: expand(&fields.required_str("command")?, env)
                .map_err(|e| format!("`command`: {e}"))?,
            args: fields
                .strings("args")?
                .into_iter()
                .enumerate()
                .map(|(i, a)| expand(&a, env).map_err(|e| format!("`args[{i}]`: {e}")))
                .collect::<Result<_, _>>()?,
            env: expand_map(fields.string_map("env")?, "env", env)?,
            cwd: fields
                .str("cwd")?
                .map(|cwd| expand(&cwd, env).map_err(|e| format!("`cwd`: {e}")))
                .transpose()?
                .map(|cwd| file.parent().unwrap_or(Path::new("")).join(cwd)),
        },
        Kind::Http => {
            let url =
                expand(&fields.required_str("url")?, env).map_err(|e| format!("`url`: {e}"))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("`url` is not an http:// or https:// URL: {url}"));
            }
            Transport::Http {
                url,
                headers: expand_map(fields.string_map("headers")?, "headers", env)?,
            }
        }
    };
    Ok(ServerEntry {
        name: name.to_owned(),
        file: file.to_owned(),
        transport,
        toolset: toolset(name, entry.get("toolset"))?,
        connect_timeout: fields.seconds("connect_timeout", DEFAULT_CONNECT_TIMEOUT, false)?,
        call_timeout: fields.seconds("call_timeout", DEFAULT_CALL_TIMEOUT, false)?,
        cache_ttl: fields.seconds("cache_ttl", DEFAULT_CACHE_TTL, true)?,
        max_message_bytes: fields.bytes("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES)?,
        namespace: fields.bool("namespace")?.unwrap_or(true),
        isolated: false,
        sandbox: None,
        lane: true,
    })
}

/// A server name must be usable as a toolset name and a tool prefix, and follow the rule
/// for names ([`crate::util::names::NAME_RULE`]).
fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the server name is blank".to_owned());
    }
    crate::util::names::check_name(name)?;
    if name.contains("__") {
        return Err("the server name contains `__`, which separates server and tool".to_owned());
    }
    Ok(())
}

/// The two transports.
enum Kind {
    Stdio,
    Http,
}

/// The transport `type` / `transport` names, else the one `command` or `url` implies.
fn transport_kind(fields: &Fields<'_>) -> Result<Kind, String> {
    let named = match (fields.str("type")?, fields.str("transport")?) {
        (Some(a), Some(b)) if !a.eq_ignore_ascii_case(&b) => {
            return Err(format!("`type` ({a}) and `transport` ({b}) disagree"));
        }
        (Some(a), _) | (None, Some(a)) => Some(a),
        (None, None) => None,
    };
    let Some(named) = named else {
        return match (
            fields.map.contains_key("command"),
            fields.map.contains_key("url"),
        ) {
            (true, false) => Ok(Kind::Stdio),
            (false, true) => Ok(Kind::Http),
            (true, true) => Err("has both `command` and `url`: give a `type`".to_owned()),
            (false, false) => Err("has neither `command` (stdio) nor `url` (HTTP)".to_owned()),
        };
    };
    match named.to_ascii_lowercase().as_str() {
        "stdio" => Ok(Kind::Stdio),
        "http" | "streamable-http" | "streamable_http" | "streamable" => Ok(Kind::Http),
        "sse" => Err(
            "the SSE transport is not supported (it is deprecated): use streamable HTTP, `\"type\": \"http\"`"
                .to_owned(),
        ),
        other => Err(format!(
            "unknown transport `{other}`: use `stdio` or `http` (streamable HTTP)"
        )),
    }
}

/// The toolset of server `name` when its entry has no `toolset` key: untitled, off by default.
pub(crate) fn plain_toolset(name: &str) -> ToolsetDecl {
    ToolsetDecl {
        name: name.to_owned(),
        title: String::new(),
        description: String::new(),
        instructions: String::new(),
        default: false,
        always: false,
    }
}

/// The `toolset` object: our keys for the server's toolset, all optional; the title is the
/// server's name and the description says it is an MCP server's when the entry gives none.
fn toolset(name: &str, value: Option<&Value>) -> Result<ToolsetDecl, String> {
    let mut decl = declared_toolset(name, value)?;
    if decl.title.is_empty() {
        decl.title = name.to_owned();
    }
    if decl.description.is_empty() {
        decl.description = format!("The tools of the MCP server `{name}` (mcp.json)");
    }
    Ok(decl)
}

/// The `toolset` object as the entry writes it.
fn declared_toolset(name: &str, value: Option<&Value>) -> Result<ToolsetDecl, String> {
    let mut decl = plain_toolset(name);
    let Some(value) = value else {
        return Ok(decl);
    };
    let Value::Object(object) = value else {
        return Err("`toolset` is not a JSON object".to_owned());
    };
    if let Some(key) = object.keys().find(|k| {
        !["title", "description", "instructions", "default", "always"].contains(&k.as_str())
    }) {
        return Err(format!(
            "`toolset.{key}` is not a toolset key (title, description, instructions, default, always)"
        ));
    }
    let fields = Fields::new(object, "toolset.");
    decl.title = fields.str("title")?.unwrap_or_default();
    decl.description = fields.str("description")?.unwrap_or_default();
    decl.instructions = fields.str("instructions")?.unwrap_or_default();
    decl.default = fields.bool("default")?.unwrap_or_default();
    decl.always = fields.bool("always")?.unwrap_or_default();
    Ok(decl)
}

/// Expands every value of `map`, naming `field.key` in an error.
fn expand_map(
    map: BTreeMap<String, String>,
    field: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, String> {
    map.into_iter()
        .map(|(k, v)| {
            let v = expand(&v, env).map_err(|e| format!("`{field}.{k}`: {e}"))?;
            Ok((k, v))
        })
        .collect()
}

/// Typed reads of an object's fields, each error naming the field (after `prefix`).
struct Fields<'a> {
    map: &'a Map<String, Value>,
    prefix: &'static str,
}

impl<'a> Fields<'a> {
    fn new(map: &'a Map<String, Value>, prefix: &'static str) -> Self {
        Self { map, prefix }
    }

    /// How an error names `key`.
    fn name(&self, key: &str) -> String {
        format!("`{}{key}`", self.prefix)
    }

    fn str(&self, key: &str) -> Result<Option<String>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{} is not a string", self.name(key))),
        }
    }

    fn required_str(&self, key: &str) -> Result<String, String> {
        match self.str(key)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(format!("{} is blank", self.name(key))),
            None => Err(format!("{} is missing", self.name(key))),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        match self.map.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(format!("`{}{key}[{i}]` is not a string", self.prefix)),
                })
                .collect(),
            Some(_) => Err(format!("{} is not an array of strings", self.name(key))),
        }
    }

    fn string_map(&self, key: &str) -> Result<BTreeMap<String, String>, String> {
        match self.map.get(key) {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    _ => Err(format!("`{}{key}.{k}` is not a string", self.prefix)),
                })
                .collect(),
            Some(_) => Err(format!("{} is not an object of strings", self.name(key))),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(format!("{} is not true or false", self.name(key))),
        }
    }

    /// A duration in seconds, `default` when absent; zero only if `zero_ok`.
    /// A positive whole number of bytes under `key`, else `default`.
    fn bytes(&self, key: &str, default: usize) -> Result<usize, String> {
        let Some(value) = self.map.get(key) else {
            return Ok(default);
        };
        value
            .as_u64()
            .filter(|b| *b > 0)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| format!("{} is not a positive whole number of bytes", self.name(key)))
    }

    fn seconds(&self, key: &str, default: Duration, zero_ok: bool) -> Result<Duration, String> {
        let Some(value) = self.map.get(key) else {
            return Ok(default);
        };
        let seconds = value
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 1e9)
            .ok_or_else(|| format!("{} is not a number of seconds", self.name(key)))?;
        if seconds == 0.0 && !zero_ok {
            return Err(format!("{} is zero", self.name(key)));
        }
        Ok(Duration::from_secs_f64(seconds))
    }
}

#[cfg(test)]
mod tests;
