//! The environment a child process starts with: never the host's whole environment.
//!
//! A bridged server is a third party's program: it gets the variables its `mcp.json` entry
//! declares and the few every program needs, the MCP TypeScript SDK's default set
//! ([`INHERITED`]), nothing else. An isolated plugin's child is the host's own binary running a
//! plugin the operator chose to keep apart: it gets the host's environment (the plugin may
//! need its variables, as it would in process) without the host's own settings and secrets,
//! every `REACTOR_MCP_*` variable (the request-state key, the keys file, OAuth settings), but
//! for how to log. A sandboxed plugin's child (`--sandbox`) gets only the variables its manifest
//! declares, and how to log.

use std::ffi::{OsStr, OsString};

/// What a bridged server inherits from the host: the MCP TypeScript SDK's default environment
/// (`getDefaultEnvironment`) and the locale and temporary folder.
pub(crate) const INHERITED: [&str; 8] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR",
];

/// The host's own variables an isolated child keeps: how to log.
const CHILD_KEEPS: [&str; 2] = ["REACTOR_MCP_LOG_LEVEL", "REACTOR_MCP_LOG_FORMAT"];

/// What a sandboxed child keeps besides its declared variables: how to log.
const SANDBOX_KEEPS: [&str; 3] = [
    "REACTOR_MCP_LOG_LEVEL",
    "REACTOR_MCP_LOG_FORMAT",
    "RUST_LOG",
];

/// The prefix of the host's own variables.
const HOST_PREFIX: &str = "REACTOR_MCP_";

/// The variables, of the host's `environment`, a child starts with before its entry's own:
/// [`INHERITED`] for a bridged server, all but the host's own for an `isolated` child, and
/// for a sandboxed one only those `sandboxed` names and how to log.
pub(crate) fn inherited(
    environment: impl IntoIterator<Item = (OsString, OsString)>,
    isolated: bool,
    sandboxed: Option<&[String]>,
) -> Vec<(OsString, OsString)> {
    environment
        .into_iter()
        .filter(|(name, _)| {
            if let Some(declared) = sandboxed {
                let kept = |kept: &str| name == OsStr::new(kept);
                declared.iter().any(|d| kept(d)) || SANDBOX_KEEPS.iter().any(|k| kept(k))
            } else if isolated {
                !is_host_setting(name)
            } else {
                INHERITED.iter().any(|kept| name == OsStr::new(kept))
            }
        })
        .collect()
}

/// Whether `name` is one of the host's own settings a child must not see.
fn is_host_setting(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.starts_with(HOST_PREFIX) && !CHILD_KEEPS.contains(&name.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
            ("REACTOR_MCP_REQUEST_STATE_KEY", "k"),
            ("REACTOR_MCP_AUTH_KEYS", "/etc/keys.toml"),
            ("REACTOR_MCP_LOG_LEVEL", "debug"),
            ("RUST_LOG", "info"),
        ]
        .into_iter()
        .map(|(n, v)| (n.into(), v.into()))
        .collect()
    }

    fn names(vars: Vec<(OsString, OsString)>) -> Vec<String> {
        vars.into_iter()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_bridged_server_gets_the_default_set_alone() {
        assert_eq!(names(inherited(host(), false, None)), ["PATH", "HOME"]);
    }

    #[test]
    fn an_isolated_child_gets_all_but_the_hosts_settings_and_secrets() {
        assert_eq!(
            names(inherited(host(), true, None)),
            [
                "PATH",
                "HOME",
                "AWS_SECRET_ACCESS_KEY",
                "REACTOR_MCP_LOG_LEVEL",
                "RUST_LOG"
            ]
        );
    }

    #[test]
    fn a_sandboxed_child_gets_its_declared_variables_and_how_to_log_alone() {
        let declared = ["HOME".to_owned(), "UNSET".to_owned()];
        assert_eq!(
            names(inherited(host(), true, Some(&declared))),
            ["HOME", "REACTOR_MCP_LOG_LEVEL", "RUST_LOG"]
        );
    }
}
