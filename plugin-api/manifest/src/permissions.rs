//! What a plugin needs of the system (`#[plugin(permissions(...))]`): the files and folders it
//! reads and writes, the TCP endpoints it connects to, the ports it listens on and the
//! environment variables it reads. A host that sandboxes the plugin (`--sandbox`) grants these
//! and nothing more; a host that does not only shows them.
//!
//! The forms, checked by [`Permissions::check`] (the `#[plugin]` attribute makes a wrong entry a
//! compile error):
//!
//! - `read`, `write`: absolute paths, a folder standing for everything beneath it. A path may
//!   hold `${VAR}` or `${VAR:-default}`, expanded from the host's environment when it starts
//!   (then it must be absolute), so `"${HOME}/.config/app"` is a path.
//! - `connect`: `port` (any host) or `host:port`, `[v6-address]:port` for an IPv6 address.
//! - `bind`: `port`.
//! - `env`: variable names (letters, digits and `_`, not starting with a digit).
//!
//! Ports may be written `${VAR}` too.

use serde::{Deserialize, Serialize};

/// What a plugin needs of the system. Empty: nothing beyond running its code.
///
/// ```
/// use plugin_manifest::Permissions;
///
/// let permissions: Permissions = serde_json::from_str(
///     r#"{"read": ["/etc/app"], "connect": ["api.example.com:443"], "env": ["APP_TOKEN"]}"#,
/// )
/// .unwrap();
/// assert!(permissions.check().is_ok());
/// assert_eq!(permissions.read, ["/etc/app"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Permissions {
    /// Files and folders it reads (and runs programs from); a folder grants what is beneath it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// Files and folders it reads, writes, creates and removes in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<String>,
    /// TCP endpoints it connects to: `host:port`, or `port` for any host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect: Vec<String>,
    /// TCP ports it listens on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bind: Vec<String>,
    /// Environment variables it reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

/// The kinds of entry of [`Permissions`], as the attribute and the manifest name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PermissionKind {
    /// `read`: a path.
    Read,
    /// `write`: a path.
    Write,
    /// `connect`: an endpoint.
    Connect,
    /// `bind`: a port.
    Bind,
    /// `env`: a variable name.
    Env,
}

impl PermissionKind {
    /// Every kind, in the order a manifest lists them.
    pub const ALL: [Self; 5] = [
        Self::Read,
        Self::Write,
        Self::Connect,
        Self::Bind,
        Self::Env,
    ];

    /// Its name: `read`, `write`, `connect`, `bind` or `env`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Connect => "connect",
            Self::Bind => "bind",
            Self::Env => "env",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether `entry` has this kind's form; why not, when it does not. Placeholders
    /// (`${VAR}`) are taken as they are: what they expand to is checked by
    /// [`PermissionKind::check_expanded`].
    ///
    /// ```
    /// use plugin_manifest::PermissionKind;
    ///
    /// assert!(PermissionKind::Read.check("${HOME}/data").is_ok());
    /// assert_eq!(
    ///     PermissionKind::Read.check("data").unwrap_err(),
    ///     "`data` is not an absolute path (it starts with `/` or `${VAR}`)"
    /// );
    /// assert!(PermissionKind::Connect.check("[::1]:8080").is_ok());
    /// assert!(PermissionKind::Env.check("1X").is_err());
    /// ```
    pub fn check(self, entry: &str) -> Result<(), String> {
        if entry.trim().is_empty() {
            return Err("an entry cannot be empty".to_owned());
        }
        if entry.trim() != entry {
            return Err(format!("`{entry}` has spaces around it"));
        }
        if self != Self::Env && entry.contains("${") {
            check_placeholders(entry)?;
        }
        match self {
            Self::Read | Self::Write if entry.starts_with("${") => Ok(()),
            Self::Connect | Self::Bind if entry.contains("${") => Ok(()),
            _ => self.check_expanded(entry),
        }
    }

    /// Whether `entry`, its placeholders expanded, has this kind's form; why not, when it
    /// does not.
    pub fn check_expanded(self, entry: &str) -> Result<(), String> {
        match self {
            Self::Read | Self::Write => {
                if entry.starts_with('/') {
                    Ok(())
                } else {
                    Err(format!(
                        "`{entry}` is not an absolute path (it starts with `/` or `${{VAR}}`)"
                    ))
                }
            }
            Self::Connect => Endpoint::parse(entry).map(|_| ()),
            Self::Bind => port(entry, entry).map(|_| ()),
            Self::Env => {
                let mut chars = entry.chars();
                let first_ok = chars
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
                if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    Ok(())
                } else {
                    Err(format!(
                        "`{entry}` is not a variable name (letters, digits and `_`, not starting \
                         with a digit)"
                    ))
                }
            }
        }
    }
}

/// Whether every `${` of `entry` is closed and names a variable.
fn check_placeholders(entry: &str) -> Result<(), String> {
    let mut rest = entry;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`${{` without a closing `}}` in `{entry}`"));
        };
        let name = after[..end].split_once(":-").map_or(&after[..end], |n| n.0);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`${{{}}}` in `{entry}` is not a variable name",
                &after[..end]
            ));
        }
        rest = &after[end + 1..];
    }
    Ok(())
}

impl Permissions {
    /// Whether it declares nothing.
    pub fn is_empty(&self) -> bool {
        PermissionKind::ALL
            .iter()
            .all(|k| self.entries(*k).is_empty())
    }

    /// The entries of one kind.
    pub fn entries(&self, kind: PermissionKind) -> &[String] {
        match kind {
            PermissionKind::Read => &self.read,
            PermissionKind::Write => &self.write,
            PermissionKind::Connect => &self.connect,
            PermissionKind::Bind => &self.bind,
            PermissionKind::Env => &self.env,
        }
    }

    /// The entries of one kind, to change them.
    pub fn entries_mut(&mut self, kind: PermissionKind) -> &mut Vec<String> {
        match kind {
            PermissionKind::Read => &mut self.read,
            PermissionKind::Write => &mut self.write,
            PermissionKind::Connect => &mut self.connect,
            PermissionKind::Bind => &mut self.bind,
            PermissionKind::Env => &mut self.env,
        }
    }

    /// Whether every entry has its kind's form; the first that does not, with why.
    ///
    /// ```
    /// use plugin_manifest::{PermissionKind, Permissions};
    ///
    /// let mut permissions = Permissions::default();
    /// permissions.bind.push("http".to_owned());
    /// let error = permissions.check().unwrap_err();
    /// assert_eq!(error.kind, PermissionKind::Bind);
    /// assert_eq!(error.to_string(), "permission `bind`: `http` is not a port (1 to 65535)");
    /// ```
    pub fn check(&self) -> Result<(), PermissionError> {
        for kind in PermissionKind::ALL {
            for entry in self.entries(kind) {
                kind.check(entry).map_err(|reason| PermissionError {
                    kind,
                    entry: entry.clone(),
                    reason,
                })?;
            }
        }
        Ok(())
    }
}

/// A permission entry that does not have its kind's form.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PermissionError {
    /// Its kind.
    pub kind: PermissionKind,
    /// The entry.
    pub entry: String,
    /// Why it is wrong.
    pub reason: String,
}

impl std::fmt::Display for PermissionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "permission `{}`: {}", self.kind.name(), self.reason)
    }
}

impl std::error::Error for PermissionError {}

/// A `connect` entry: a port, and the host it is for, if it names one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Endpoint {
    /// The host (a name or an address, an IPv6 one without its brackets); `None` for any.
    pub host: Option<String>,
    /// The TCP port.
    pub port: u16,
}

impl Endpoint {
    /// Reads `port`, `host:port` or `[v6-address]:port`.
    ///
    /// ```
    /// use plugin_manifest::Endpoint;
    ///
    /// assert_eq!(Endpoint::parse("443").unwrap().host, None);
    /// let v6 = Endpoint::parse("[::1]:8080").unwrap();
    /// assert_eq!((v6.host.as_deref(), v6.port), (Some("::1"), 8080));
    /// assert!(Endpoint::parse("example.com").is_err());
    /// ```
    pub fn parse(entry: &str) -> Result<Self, String> {
        if !entry.contains(':') {
            return port(entry, entry)
                .map(|port| Self { host: None, port })
                .map_err(|_| format!("`{entry}` is neither `host:port` nor a port (1 to 65535)"));
        }
        let (host, text) = if let Some(rest) = entry.strip_prefix('[') {
            let (host, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("`{entry}` opens `[` without closing it"))?;
            let text = after
                .strip_prefix(':')
                .ok_or_else(|| format!("`{entry}` has no `:port` after its address"))?;
            (host, text)
        } else {
            entry.rsplit_once(':').unwrap_or(("", entry))
        };
        if host.is_empty() || host.contains(':') && !entry.starts_with('[') {
            return Err(format!(
                "`{entry}` is not `host:port`, `port` or `[v6-address]:port`"
            ));
        }
        Ok(Self {
            host: Some(host.to_owned()),
            port: port(text, entry)?,
        })
    }
}

/// The port `text` (of the entry `entry`).
fn port(text: &str, entry: &str) -> Result<u16, String> {
    text.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| {
        if text == entry {
            format!("`{entry}` is not a port (1 to 65535)")
        } else {
            format!("the port of `{entry}` is not a port (1 to 65535)")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_checked_and_placeholders_left_for_the_host() {
        use PermissionKind::*;
        for (kind, entry) in [
            (Read, "/etc/app"),
            (Write, "${TMPDIR:-/tmp}/app"),
            (Connect, "example.com:443"),
            (Connect, "127.0.0.1:${PORT}"),
            (Connect, "8080"),
            (Bind, "${PORT}"),
            (Env, "_APP_TOKEN2"),
        ] {
            assert_eq!(kind.check(entry), Ok(()), "{entry}");
        }
        for (kind, entry, reason) in [
            (Read, "", "an entry cannot be empty"),
            (Read, " /x", "` /x` has spaces around it"),
            (
                Write,
                "~/x",
                "`~/x` is not an absolute path (it starts with `/` or `${VAR}`)",
            ),
            (Read, "${HOME/x", "`${` without a closing `}` in `${HOME/x`"),
            (
                Read,
                "${A B}/x",
                "`${A B}` in `${A B}/x` is not a variable name",
            ),
            (
                Connect,
                "0",
                "`0` is neither `host:port` nor a port (1 to 65535)",
            ),
            (
                Connect,
                "example.com:http",
                "the port of `example.com:http` is not a port (1 to 65535)",
            ),
            (
                Connect,
                "::1:80",
                "`::1:80` is not `host:port`, `port` or `[v6-address]:port`",
            ),
            (
                Connect,
                ":80",
                "`:80` is not `host:port`, `port` or `[v6-address]:port`",
            ),
            (Bind, "65536", "`65536` is not a port (1 to 65535)"),
            (
                Env,
                "A-B",
                "`A-B` is not a variable name (letters, digits and `_`, not starting with a digit)",
            ),
        ] {
            assert_eq!(kind.check(entry), Err(reason.to_owned()), "{entry}");
        }
    }

    #[test]
    fn empty_permissions_write_nothing() {
        let permissions = Permissions::default();
        assert!(permissions.is_empty());
        assert_eq!(serde_json::to_string(&permissions).unwrap(), "{}");
        let mut some = Permissions::default();
        some.entries_mut(PermissionKind::Env)
            .push("HOME".to_owned());
        assert!(!some.is_empty());
        assert_eq!(serde_json::to_string(&some).unwrap(), r#"{"env":["HOME"]}"#);
    }
}
