//! Plugins run out of process (`--isolate`): the same library file, served by a child process
//! of the host's own binary, so that nothing it does (an abort, a segfault, `exit()`, a stack
//! overflow, an out-of-memory kill, a deadlock) takes the host down.
//!
//! Host side, [`isolate`] turns the named libraries' provider into
//! [`Provider::Isolated`]: discovery's manifest stays what listings, selection and extensions
//! read, and on first need the build stage starts the child and reaches it as an MCP server over
//! its stdio, with the bridge's client and supervision (calls multiplexed on one connection,
//! progress, logs, sampling and elicitation relayed to the calling request, cancellation both
//! ways, restart with backoff, crashes named by signal or exit code).
//!
//! Child side, the hidden `isolated LIBRARY` command serves that one library on stdio
//! ([`child_options`]): every toolset of it active, its own extensions applied there (the host
//! leaves them out), and the process exits when its parent is gone ([`watch_parent`]).
//!
//! A library whose wraps extend another plugin's tools cannot be isolated (its code would need
//! to call that tool in the host): it is skipped with the reason. What a tool answers crosses the
//! pipe as it was answered, a value or an error of its kind ([`wire`]), so an in-process
//! wrapper of an isolated tool sees what it would see in process.
//!
//! A sandboxed plugin (`--sandbox`) is an isolated one whose child is held to the permissions
//! its manifest declares: the host makes its [`sandbox`] (the policy, and the account of what
//! this kernel enforces, warned about at start-up and shown by `list` and `/toolsets`), starts
//! the child with the declared variables alone (`isolated --confine POLICY LIBRARY`), and the
//! child applies it to itself before it opens the library ([`confine`]).

use std::{
    path::{Path, PathBuf},
    str::FromStr,
    sync::Arc,
    time::Duration,
};

use plugin_manifest::Manifest;

pub(crate) mod confine;
pub(crate) mod sandbox;

use crate::{
    discovery::servers::config::{Sandboxing, ServerEntry, Transport},
    discovery::{Discovery, Provider, SkipReason, trust::Checked},
};

/// The hidden command a child runs.
pub(crate) const CHILD_COMMAND: &str = "isolated";

/// The child command's option carrying its sandbox policy (JSON).
pub(crate) const CONFINE_FLAG: &str = "confine";

/// How long an isolated plugin's child has to start and list its tools.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an isolated plugin's call may go with neither its answer nor a progress report,
/// unless `--call-timeout` says otherwise.
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Which plugins run out of process, which of them sandboxed, and their call timeouts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Isolation {
    /// Plugin names; `*` names every library.
    pub(crate) plugins: Vec<String>,
    /// The names of the plugins run sandboxed (and so isolated); `*` names every library.
    pub(crate) sandboxed: Vec<String>,
    /// `--call-timeout` values, in order: a later one wins.
    pub(crate) call_timeouts: Vec<CallTimeout>,
    /// Whether calls to the children go through rmcp's client and server alone
    /// (`--no-hot-path`).
    pub(crate) rmcp_only: bool,
}

/// One `--call-timeout` value: `SECONDS`, or `PLUGIN=SECONDS` for one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallTimeout {
    /// The plugin it is for; every isolated plugin when `None`.
    pub(crate) plugin: Option<String>,
    /// The timeout.
    pub(crate) timeout: Duration,
}

/// Why a `--call-timeout` value does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CallTimeoutError {
    /// `=SECONDS`, with no plugin before the `=`.
    #[error("`{0}` names no plugin before `=`")]
    NoPlugin(String),
    /// The seconds are not a positive number.
    #[error("`{0}` is not a positive number of seconds")]
    NotSeconds(String),
}

impl FromStr for CallTimeout {
    type Err = CallTimeoutError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let (plugin, seconds) = match value.split_once('=') {
            Some((plugin, seconds)) if !plugin.trim().is_empty() => {
                (Some(plugin.trim().to_owned()), seconds)
            }
            Some(_) => return Err(CallTimeoutError::NoPlugin(value.to_owned())),
            None => (None, value),
        };
        let seconds: f64 = seconds
            .trim()
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0)
            .ok_or_else(|| CallTimeoutError::NotSeconds(seconds.to_owned()))?;
        Ok(Self {
            plugin,
            timeout: Duration::from_secs_f64(seconds),
        })
    }
}

impl Isolation {
    /// Whether no plugin is isolated.
    pub(crate) fn is_empty(&self) -> bool {
        self.plugins.is_empty() && self.sandboxed.is_empty()
    }

    /// Whether the plugin called `name` is isolated (sandboxed ones are).
    pub(crate) fn isolates(&self, name: &str) -> bool {
        self.sandboxes(name) || self.plugins.iter().any(|p| p == "*" || p == name)
    }

    /// Whether the plugin called `name` is sandboxed.
    pub(crate) fn sandboxes(&self, name: &str) -> bool {
        self.sandboxed.iter().any(|p| p == "*" || p == name)
    }

    /// The call timeout of the plugin called `name`.
    pub(crate) fn call_timeout(&self, name: &str) -> Duration {
        self.call_timeouts
            .iter()
            .rev()
            .find(|t| t.plugin.as_deref().is_none_or(|p| p == name))
            .map_or(DEFAULT_CALL_TIMEOUT, |t| t.timeout)
    }
}

/// Serves the libraries `isolation` names among `discovery`'s from child processes running
/// `program` (the host's own binary); a name that matches no library is logged, and the
/// extensions of an isolated library that wrap another plugin's tool are refused, each with a
/// warning naming the tool. A sandboxed library's child is started confined, and what its
/// sandbox does not enforce or grant is warned about, naming the plugin.
pub(crate) fn isolate(discovery: &mut Discovery, isolation: &Isolation, program: &Path) {
    for (flag, names) in [
        ("--isolate", &isolation.plugins),
        ("--sandbox", &isolation.sandboxed),
    ] {
        for name in names.iter().filter(|n| *n != "*") {
            if !discovery.plugins.iter().any(|p| p.manifest.name == *name) {
                tracing::warn!("{flag} names `{name}`, and no plugin has that name");
            }
        }
    }
    for plugin in &mut discovery.plugins {
        let name = plugin.manifest.name.clone();
        if matches!(plugin.provider, Provider::Bridged { .. }) && isolation.sandboxes(&name) {
            tracing::warn!(
                "`{name}` is an MCP server bridged from {}: it is not sandboxed (--sandbox holds \
                 plugin libraries alone)",
                plugin.path.display()
            );
        }
        if !matches!(plugin.provider, Provider::Library) || !isolation.isolates(&name) {
            continue;
        }
        for refused in refuse_foreign_wraps(&mut plugin.manifest) {
            tracing::warn!(
                "plugin `{name}` ({}) is isolated without its extension of `{}`: {refused}; its \
                 own tools, and its extensions that only describe, are served",
                plugin.path.display(),
                refused.tool
            );
        }
        let sandbox = isolation.sandboxes(&name).then(|| {
            let sandbox = sandbox::Sandbox::new(&plugin.manifest.permissions, &|variable| {
                std::env::var(variable).ok()
            });
            let account = sandbox.account(confine::support());
            for line in account.not_enforced.iter().chain(&account.not_granted) {
                tracing::warn!("plugin `{name}` is sandboxed, but: {line}");
            }
            (sandbox.policy, account)
        });
        plugin.provider = Provider::Isolated {
            server: Arc::new(child_entry(
                &plugin.manifest,
                &plugin.path,
                plugin.checked.as_ref(),
                program,
                isolation.call_timeout(&name),
                sandbox,
                isolation.rmcp_only,
            )),
        };
    }
}

/// Why a plugin's code cannot run out of process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "its extension of `{tool}` wraps another plugin's tool, which its code could not call from a child process"
)]
pub(crate) struct CannotIsolate {
    /// The tool its extension wraps.
    tool: String,
}

/// Takes out of an isolated plugin's manifest (the host's copy; its child reads its own) the
/// extensions whose wrap needs another plugin's tool, which its code could not call from a
/// child process; the tools they target are served without them. The host never calls an
/// isolated plugin's wrap, so the indices of the extensions left do not matter here.
fn refuse_foreign_wraps(manifest: &mut Manifest) -> Vec<CannotIsolate> {
    let own: Vec<String> = manifest.tools.iter().map(|t| t.name.clone()).collect();
    let foreign = |e: &plugin_manifest::ExtensionDecl| e.wrap && !own.contains(&e.tool);
    let refused = manifest
        .extends
        .iter()
        .filter(|e| foreign(e))
        .map(|e| CannotIsolate {
            tool: e.tool.clone(),
        })
        .collect();
    manifest.extends.retain(|e| !foreign(e));
    refused
}

/// How the child serving `library` is started: `program isolated LIBRARY`, with its tools
/// under their own names; sandboxed, `program isolated --confine POLICY LIBRARY`; with
/// `--sha256 HEX` when discovery checked the library's bytes, so the child opens those bytes
/// alone; with `--no-hot-path` when calls go through rmcp alone (`rmcp_only`).
fn child_entry(
    manifest: &Manifest,
    library: &Path,
    checked: Option<&Checked>,
    program: &Path,
    call_timeout: Duration,
    sandbox: Option<(sandbox::Policy, Sandboxing)>,
    rmcp_only: bool,
) -> ServerEntry {
    let mut args = vec![CHILD_COMMAND.to_owned()];
    if rmcp_only {
        args.push("--no-hot-path".to_owned());
    }
    if let Some((policy, _)) = &sandbox {
        args.push(format!("--{CONFINE_FLAG}"));
        args.push(serde_json::to_string(policy).unwrap_or_default());
    }
    if let Some(checked) = checked {
        args.extend(["--sha256".to_owned(), checked.sha256.clone()]);
    }
    args.push(library.display().to_string());
    ServerEntry {
        name: manifest.name.clone(),
        file: library.to_owned(),
        transport: Transport::Stdio {
            command: program.display().to_string(),
            args,
            env: std::collections::BTreeMap::new(),
            cwd: None,
        },
        toolset: manifest
            .toolsets
            .first()
            .cloned()
            .unwrap_or_else(|| crate::discovery::servers::config::plain_toolset(&manifest.name)),
        connect_timeout: CONNECT_TIMEOUT,
        call_timeout,
        cache_ttl: Duration::ZERO,
        max_message_bytes: crate::discovery::servers::config::DEFAULT_MAX_MESSAGE_BYTES,
        namespace: false,
        isolated: true,
        sandbox: sandbox.map(|(_, account)| account),
        lane: !rmcp_only,
    }
}

/// Ends the process when its parent is gone (the host was killed), checking every second, so a
/// child stuck in a plugin's code does not outlive the host.
pub(crate) fn watch_parent() {
    #[cfg(unix)]
    {
        let parent = rustix::process::getppid();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(1));
                if rustix::process::getppid() != parent {
                    tracing::warn!("the host is gone: the isolated plugin's process exits");
                    std::process::exit(1);
                }
            }
        });
    }
}

/// The library a child is asked to serve is not a usable plugin.
#[derive(Debug, thiserror::Error)]
#[error("{} is not a plugin library this host can serve", path.display())]
pub(crate) struct NotAPlugin {
    /// The library.
    path: PathBuf,
    /// What discovery says of it.
    source: SkipReason,
}

/// The library the child serves, checked to be a plugin.
///
/// # Errors
///
/// If the file is not a usable plugin library, with the reason.
pub(crate) fn child_plugin(
    library: PathBuf,
    sha256: Option<String>,
) -> Result<crate::discovery::DiscoveredPlugin, NotAPlugin> {
    match crate::discovery::read(&library) {
        Ok(manifest) => Ok(crate::discovery::DiscoveredPlugin {
            checked: sha256.map(|sha256| Checked {
                sha256,
                signer: None,
            }),
            ..crate::discovery::DiscoveredPlugin::library(library, manifest)
        }),
        Err(source) => Err(NotAPlugin {
            path: library,
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Manifest;

    use super::*;
    use crate::discovery::DiscoveredPlugin;

    fn plugin(name: &str, extends: &str) -> DiscoveredPlugin {
        let json = format!(
            r#"{{"abi":"0.1.0","name":"{name}","version":"1","toolsets":[{{"name":"{name}"}}],
                "tools":[{{"name":"own","toolset":"{name}"}}],"extends":{extends}}}"#
        );
        DiscoveredPlugin::library(format!("lib{name}.so"), Manifest::from_json(&json).unwrap())
    }

    #[test]
    fn call_timeouts_parse_and_the_last_matching_wins() {
        let isolation = Isolation {
            plugins: vec!["*".to_owned()],
            sandboxed: Vec::new(),
            call_timeouts: ["30", "a=5", "b=0.5"]
                .iter()
                .map(|v| v.parse().unwrap())
                .collect(),
            rmcp_only: false,
        };
        assert_eq!(isolation.call_timeout("a"), Duration::from_secs(5));
        assert_eq!(isolation.call_timeout("b"), Duration::from_millis(500));
        assert_eq!(isolation.call_timeout("c"), Duration::from_secs(30));
        assert_eq!(
            "=3".parse::<CallTimeout>().unwrap_err().to_string(),
            "`=3` names no plugin before `=`"
        );
        assert_eq!(
            "a=soon".parse::<CallTimeout>().unwrap_err().to_string(),
            "`soon` is not a positive number of seconds"
        );
    }

    #[test]
    fn named_libraries_are_isolated_without_their_wraps_of_other_plugins_tools() {
        let mut discovery = Discovery {
            plugins: vec![
                plugin("a", "[]"),
                plugin("b", r#"[{"tool":"own","wrap":true}]"#),
                plugin(
                    "c",
                    r#"[{"tool":"other","wrap":true},{"tool":"other","description":"d"},
                        {"tool":"own","wrap":true}]"#,
                ),
                plugin("d", "[]"),
            ],
            ..Discovery::default()
        };
        let isolation = Isolation {
            plugins: vec!["a".to_owned(), "b".to_owned(), "c".to_owned()],
            ..Isolation::default()
        };
        isolate(&mut discovery, &isolation, Path::new("/bin/host"));
        let kinds: Vec<(&str, bool)> = discovery
            .plugins
            .iter()
            .map(|p| (p.manifest.name.as_str(), p.provider.is_out_of_process()))
            .collect();
        assert_eq!(kinds, [("a", true), ("b", true), ("c", true), ("d", false)]);
        assert!(discovery.skipped.is_empty());
        let kept: Vec<(&str, bool)> = discovery.plugins[2]
            .manifest
            .extends
            .iter()
            .map(|e| (e.tool.as_str(), e.wrap))
            .collect();
        assert_eq!(
            kept,
            [("other", false), ("own", true)],
            "only the foreign wrap goes"
        );
        assert_eq!(discovery.plugins[1].manifest.extends.len(), 1);
        let Provider::Isolated { server } = &discovery.plugins[0].provider else {
            unreachable!()
        };
        assert_eq!(
            server.transport,
            Transport::Stdio {
                command: "/bin/host".to_owned(),
                args: vec!["isolated".to_owned(), "liba.so".to_owned()],
                env: std::collections::BTreeMap::new(),
                cwd: None,
            }
        );
    }

    #[test]
    fn a_sandboxed_library_is_isolated_and_its_child_told_its_policy() {
        let json = r#"{"abi":"0.1.0","name":"s","version":"1","toolsets":[{"name":"s"}],
            "permissions":{"read":["/"],"connect":["8080"],"env":["HOME"]}}"#;
        let mut discovery = Discovery {
            plugins: vec![
                DiscoveredPlugin::library("libs.so", Manifest::from_json(json).unwrap()),
                plugin("plain", "[]"),
            ],
            ..Discovery::default()
        };
        let isolation = Isolation {
            sandboxed: vec!["s".to_owned()],
            ..Isolation::default()
        };
        assert!(!isolation.is_empty() && isolation.isolates("s") && !isolation.isolates("plain"));
        isolate(&mut discovery, &isolation, Path::new("/bin/host"));
        assert!(matches!(discovery.plugins[1].provider, Provider::Library));
        let Provider::Isolated { server } = &discovery.plugins[0].provider else {
            panic!("a sandboxed plugin is isolated")
        };
        let Transport::Stdio { args, .. } = &server.transport else {
            unreachable!()
        };
        assert_eq!(
            args,
            &[
                "isolated",
                "--confine",
                r#"{"read":["/"],"connect":[8080],"env":["HOME"]}"#,
                "libs.so"
            ]
        );
        let sandbox = server.sandbox.as_ref().expect("its account is kept");
        assert_eq!(sandbox.env, ["HOME"]);
        assert!(sandbox.not_granted.is_empty(), "{sandbox:?}");
        assert!(
            sandbox.not_enforced.iter().any(|l| l.starts_with("UDP")),
            "{sandbox:?}"
        );
    }
}
