//! The sandbox of a plugin run with `--sandbox`: its [`Policy`], made from the permissions its
//! manifest declares (a plain value, handed to the child that applies it to itself:
//! [`super::confine`]), and the account of what this kernel enforces of it ([`Sandbox::account`]),
//! which start-up logs and `list` and `/toolsets` show, so that nothing is skipped silently.
//!
//! Entries may hold `${VAR}` and `${VAR:-default}`, expanded from the host's environment as
//! `mcp.json` values are; an entry that cannot be expanded, or is not of its kind's form once
//! expanded, or names a path that is not there, is not granted, and the account says why.

use std::path::PathBuf;

use plugin_manifest::{Endpoint, PermissionKind, Permissions};
use serde::{Deserialize, Serialize};

use crate::discovery::servers::{config::Sandboxing, expand::expand};

/// What a sandboxed plugin's child may do beyond running: the plugin's permissions, expanded
/// and checked. The child adds what running needs (the system's libraries, its own library and
/// private folder).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Policy {
    /// Read (and run programs) beneath these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) read: Vec<PathBuf>,
    /// Read, write, create and remove beneath these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) write: Vec<PathBuf>,
    /// The TCP ports it may connect to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) connect: Vec<u16>,
    /// The TCP ports it may listen on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) bind: Vec<u16>,
    /// The host's variables it starts with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) env: Vec<String>,
}

/// What this system can enforce: the Landlock ABI of its kernel and whether seccomp filters
/// are applied here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Support {
    /// The kernel's Landlock ABI version; 0 without Landlock (or off Linux).
    pub(crate) landlock: u8,
    /// Whether the system calls filter is applied (Linux on x86_64 or aarch64).
    pub(crate) seccomp: bool,
}

/// The Landlock ABI from which TCP ports are enforced (Linux 6.7).
pub(crate) const LANDLOCK_TCP: u8 = 4;
/// The Landlock ABI from which signals and abstract UNIX sockets are scoped (Linux 6.12).
pub(crate) const LANDLOCK_SCOPES: u8 = 6;

/// The system calls the filter refuses with EPERM, as the account names them.
pub(crate) const REFUSED_CALLS: &str = "ptrace, process_vm_readv/writev, mount (and the new \
     mount calls), umount2, pivot_root, chroot, module loading, kexec, reboot, swapon/swapoff, \
     bpf, perf_event_open, keyrings, unshare/setns and clone into new namespaces, \
     open_by_handle_at, userfaultfd, and setting the clock or the host name";

/// A plugin's sandbox: its policy, and what it declares that is not granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sandbox {
    /// What the child may do.
    pub(crate) policy: Policy,
    /// The `connect` entries that name a host: only their ports are enforced.
    pub(crate) hosts: Vec<String>,
    /// What is declared and not granted, with why.
    pub(crate) not_granted: Vec<String>,
}

impl Sandbox {
    /// The sandbox of a plugin declaring `permissions`, its variables read from `env`.
    pub(crate) fn new(permissions: &Permissions, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut sandbox = Self::default();
        for kind in PermissionKind::ALL {
            for entry in permissions.entries(kind) {
                if let Err(reason) = sandbox.grant(kind, entry, env) {
                    sandbox
                        .not_granted
                        .push(format!("{} `{entry}`: {reason}", kind.name()));
                }
            }
        }
        sandbox
    }

    /// Adds `entry`, of `kind`, to the policy; why not, when it cannot be.
    fn grant(
        &mut self,
        kind: PermissionKind,
        entry: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String> {
        let value = if kind == PermissionKind::Env {
            entry.to_owned()
        } else {
            expand(entry, env).map_err(|e| e.to_string())?
        };
        kind.check_expanded(&value)?;
        let policy = &mut self.policy;
        match kind {
            PermissionKind::Read | PermissionKind::Write => {
                let path = PathBuf::from(&value);
                if !path.exists() {
                    return Err(format!("{} does not exist", path.display()));
                }
                let paths = if kind == PermissionKind::Read {
                    &mut policy.read
                } else {
                    &mut policy.write
                };
                paths.push(path);
            }
            PermissionKind::Connect => {
                let endpoint = Endpoint::parse(&value)?;
                if endpoint.host.is_some() {
                    self.hosts.push(value);
                }
                policy.connect.push(endpoint.port);
            }
            PermissionKind::Bind => policy.bind.push(Endpoint::parse(&value)?.port),
            PermissionKind::Env => policy.env.push(value),
            _ => return Err("this host does not know this kind of permission".to_owned()),
        }
        Ok(())
    }

    /// What a system with `support` enforces of this sandbox, and what it does not.
    pub(crate) fn account(&self, support: Support) -> Sandboxing {
        let policy = &self.policy;
        let mut enforced = Vec::new();
        let mut not_enforced = Vec::new();
        if support.landlock > 0 {
            enforced.push(format!(
                "files (Landlock ABI {}): reads {}, writes {}; beyond them only the system's \
                 libraries and its own library",
                support.landlock,
                paths(&policy.read),
                paths(&policy.write)
            ));
        } else {
            not_enforced.push(
                "files: not restricted: this system has no Landlock (it reads and writes \
                 wherever the host's user may)"
                    .to_owned(),
            );
        }
        if support.landlock >= LANDLOCK_TCP {
            enforced.push(format!(
                "TCP (Landlock): connects to {}, listens on {}",
                ports(&policy.connect),
                ports(&policy.bind)
            ));
            for host in &self.hosts {
                not_enforced.push(format!(
                    "connect `{host}`: its port is enforced, to any host (Landlock knows ports, \
                     not hosts)"
                ));
            }
        } else {
            not_enforced.push(format!(
                "TCP: not restricted: ports need Landlock ABI {LANDLOCK_TCP} (Linux 6.7), this \
                 system has {}",
                abi(support.landlock)
            ));
        }
        not_enforced.push(
            "UDP, and UNIX sockets reached by path: not restricted (Landlock does not cover them \
             here)"
                .to_owned(),
        );
        if support.landlock >= LANDLOCK_SCOPES {
            enforced.push(
                "signals and abstract UNIX sockets (Landlock): to its own processes only"
                    .to_owned(),
            );
        } else {
            not_enforced.push(format!(
                "signals and abstract UNIX sockets: not restricted: they need Landlock ABI \
                 {LANDLOCK_SCOPES} (Linux 6.12), this system has {}",
                abi(support.landlock)
            ));
        }
        if support.seccomp {
            enforced.push(format!(
                "system calls (seccomp): {REFUSED_CALLS} fail with EPERM"
            ));
        } else {
            not_enforced.push(
                "system calls: not filtered: seccomp filters are applied on Linux x86_64 and \
                 aarch64 only"
                    .to_owned(),
            );
        }
        enforced.push(if policy.env.is_empty() {
            "environment: none of the host's variables (but how to log)".to_owned()
        } else {
            format!(
                "environment: only {} of the host's variables (and how to log)",
                policy.env.join(", ")
            )
        });
        Sandboxing {
            env: policy.env.clone(),
            enforced,
            not_enforced,
            not_granted: self.not_granted.clone(),
        }
    }
}

/// `nothing`, or the paths joined.
fn paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nothing".to_owned();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `no port`, or the ports joined.
fn ports(ports: &[u16]) -> String {
    match ports {
        [] => "no port".to_owned(),
        [one] => format!("port {one} only"),
        many => format!(
            "ports {} only",
            many.iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// How an account names a Landlock ABI: `none`, or `ABI N`.
fn abi(version: u8) -> String {
    if version == 0 {
        "none".to_owned()
    } else {
        format!("ABI {version}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permissions(json: serde_json::Value) -> Permissions {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn entries_are_expanded_and_checked_and_what_is_not_granted_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let env = |name: &str| (name == "ROOT").then(|| root.clone());
        let sandbox = Sandbox::new(
            &permissions(serde_json::json!({
                "read": ["${ROOT}", "${UNSET}/x", "${ROOT}/missing"],
                "write": ["${EMPTY:-relative}"],
                "connect": ["127.0.0.1:8080", "${PORT:-443}"],
                "bind": ["9000"],
                "env": ["HOME", "APP_TOKEN"],
            })),
            &env,
        );
        assert_eq!(
            sandbox.policy,
            Policy {
                read: vec![dir.path().to_owned()],
                write: vec![],
                connect: vec![8080, 443],
                bind: vec![9000],
                env: vec!["HOME".to_owned(), "APP_TOKEN".to_owned()],
            }
        );
        assert_eq!(sandbox.hosts, ["127.0.0.1:8080"]);
        assert_eq!(
            sandbox.not_granted,
            [
                "read `${UNSET}/x`: the environment variable `UNSET` is not set (write \
                 `${UNSET:-default}` for a default)"
                    .to_owned(),
                format!("read `${{ROOT}}/missing`: {root}/missing does not exist"),
                "write `${EMPTY:-relative}`: `relative` is not an absolute path (it starts with \
                 `/` or `${VAR}`)"
                    .to_owned(),
            ]
        );
        let json = serde_json::to_string(&sandbox.policy).unwrap();
        assert_eq!(
            serde_json::from_str::<Policy>(&json).unwrap(),
            sandbox.policy
        );
    }

    #[test]
    fn the_account_says_what_this_kernel_enforces_and_what_it_does_not() {
        let sandbox = Sandbox::new(
            &permissions(serde_json::json!({
                "read": ["/"], "connect": ["example.com:443"], "env": ["APP_TOKEN"]
            })),
            &|_| None,
        );
        let full = sandbox.account(Support {
            landlock: 7,
            seccomp: true,
        });
        assert_eq!(full.env, ["APP_TOKEN"]);
        assert_eq!(
            full.enforced[..2],
            [
                "files (Landlock ABI 7): reads /, writes nothing; beyond them only the system's \
                 libraries and its own library",
                "TCP (Landlock): connects to port 443 only, listens on no port",
            ]
        );
        assert!(full.enforced[3].starts_with("system calls (seccomp): ptrace,"));
        assert_eq!(
            full.enforced[4],
            "environment: only APP_TOKEN of the host's variables (and how to log)"
        );
        assert_eq!(
            full.not_enforced,
            [
                "connect `example.com:443`: its port is enforced, to any host (Landlock knows \
                 ports, not hosts)",
                "UDP, and UNIX sockets reached by path: not restricted (Landlock does not cover \
                 them here)",
            ]
        );

        let old = sandbox.account(Support {
            landlock: 3,
            seccomp: true,
        });
        assert!(
            old.not_enforced.iter().any(|l| l
                == "TCP: not restricted: ports need Landlock ABI 4 (Linux 6.7), this \
                               system has ABI 3"),
            "{old:?}"
        );
        let none = sandbox.account(Support {
            landlock: 0,
            seccomp: false,
        });
        assert!(
            none.not_enforced[0].starts_with("files: not restricted: this system has no Landlock"),
            "{none:?}"
        );
        assert!(
            none.not_enforced
                .last()
                .unwrap()
                .starts_with("system calls: not filtered"),
            "{none:?}"
        );
        assert_eq!(none.enforced.len(), 1, "the environment alone: {none:?}");
    }
}
