//! Who may call what, how often and how much: the policy file (`--policy FILE`), compiled once
//! per load and read again when it changes.
//!
//! - [`file`]: the TOML file as plain values, each entry with its line.
//! - [`rules`]: allow and deny rules in CEL, which decide a call and the listing of a tool.
//! - [`limits`]: rate limits (token buckets of [`buckets`]) and call quotas, composed.
//! - [`concurrency`]: calls at once per plugin, tool or caller, with a bounded wait.
//! - [`breakers`]: circuit breakers per plugin (bridged servers, isolated plugins).
//! - [`results`]: caps on the size of a result.
//! - [`store`]: the file as the server holds it, re-read on change; a file that stops
//!   parsing keeps the last good policy.
//!
//! Nothing here knows HTTP or MCP: `crate::serve` asks with a [`Caller`] and [`ToolFacts`]
//! and turns a [`Denial`] into its answer. Counters live in this process: replicas do not share
//! them.

pub(crate) mod breakers;
mod buckets;
pub(crate) mod concurrency;
pub(crate) mod file;
mod limits;
mod matcher;
pub(crate) mod results;
pub(crate) mod rules;
mod shared_limits;
pub(crate) mod store;

use std::{path::Path, time::Duration, time::Instant};

use plugin_manifest::Annotations;

use crate::auth::{Identity, Proof, TokenClaims};

pub(crate) use concurrency::Held;
pub(crate) use results::ResultCap;
pub(crate) use store::PolicyStore;

use breakers::Breakers;
use concurrency::Caps;
use file::{PolicyFile, PolicyFileError};
use limits::Limits;
use results::ResultCaps;
use rules::Rules;

/// Who calls, as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// What its counters are kept under: `key:NAME`, `oauth:SUB`, `relayed:NAME`, or
    /// `anonymous`.
    pub key: &'a str,
    /// The key's name or the token's subject; `anonymous` without authentication.
    pub name: &'a str,
    /// `key`, `oauth`, `relayed` or `anonymous`.
    pub kind: &'a str,
    /// The token's scopes.
    pub scopes: &'a [String],
    /// The token's claims (OAuth only).
    pub claims: Option<&'a TokenClaims>,
}

/// The caller without authentication.
pub(crate) const ANONYMOUS: Caller<'static> = Caller {
    key: "anonymous",
    name: "anonymous",
    kind: "anonymous",
    scopes: &[],
    claims: None,
};

impl Identity {
    /// This identity as the policy sees it; `key` is its [`Identity::owner`].
    pub(crate) fn as_caller<'a>(&'a self, key: &'a str) -> Caller<'a> {
        Caller {
            key,
            name: &self.name,
            kind: match self.proof {
                Proof::Key => "key",
                Proof::OAuth => "oauth",
                Proof::Relayed => "relayed",
            },
            scopes: &self.scopes,
            claims: self.claims.as_deref(),
        }
    }
}

/// The tool called, as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct ToolFacts<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its toolset.
    pub toolset: &'a str,
    /// The plugin serving it.
    pub plugin: &'a str,
    /// Its annotations, as its extensions leave them.
    pub annotations: &'a Annotations,
}

/// Why the policy refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenialKind {
    /// A rule denied it.
    Rule,
    /// A rate limit is reached.
    RateLimited,
    /// A quota is used up.
    QuotaExhausted,
    /// A concurrency cap and its queue are full.
    Busy,
    /// A circuit breaker is open.
    BreakerOpen,
    /// The caller holds all the sessions it may.
    Sessions,
    /// The counters shared with other replicas cannot be reached.
    Unshared,
}

impl DenialKind {
    /// Its name in logs, audit events and error data.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Rule => "rule",
            Self::RateLimited => "rate_limited",
            Self::QuotaExhausted => "quota_exhausted",
            Self::Busy => "busy",
            Self::BreakerOpen => "breaker_open",
            Self::Sessions => "sessions",
            Self::Unshared => "unshared",
        }
    }
}

/// A refusal: the entry of the policy that refused, why, and when to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The entry's name.
    pub rule: String,
    /// Why.
    pub kind: DenialKind,
    /// What to tell the caller.
    pub message: String,
    /// How long until a call may pass.
    pub retry_after: Option<Duration>,
}

impl Denial {
    /// Whole seconds to wait, rounded up, at least one: `Retry-After` and
    /// `retryAfterSeconds`.
    pub(crate) fn retry_after_seconds(&self) -> Option<u64> {
        self.retry_after
            .map(|wait| (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1))
    }
}

/// A policy, compiled.
#[derive(Debug)]
pub struct Policy {
    /// The sessions one caller may hold at once.
    pub(crate) sessions_per_identity: Option<usize>,
    /// Allow and deny rules.
    pub(crate) rules: Rules,
    limits: Limits,
    /// Concurrency caps.
    pub(crate) caps: Caps,
    /// Circuit breakers.
    pub(crate) breakers: Breakers,
    /// Result size caps.
    pub(crate) results: ResultCaps,
}

impl Default for Policy {
    /// The policy without a file: everything allowed, nothing counted, the default result cap.
    fn default() -> Self {
        Self {
            sessions_per_identity: None,
            rules: Rules::compile(Path::new(""), &[], false)
                .unwrap_or_else(|_| unreachable!("no rules compile")),
            limits: Limits::default(),
            caps: Caps::default(),
            breakers: Breakers::default(),
            results: ResultCaps::default(),
        }
    }
}

impl Policy {
    /// Compiles `file`, read from `path`, keeping the counters, caps and breakers of
    /// `previous`'s entries that did not change.
    pub fn compile(
        path: &Path,
        file: &PolicyFile,
        previous: Option<&Policy>,
    ) -> Result<Self, PolicyFileError> {
        Ok(Self {
            sessions_per_identity: file.sessions_per_identity,
            rules: Rules::compile(path, &file.rules, file.rules_default_deny)?,
            limits: Limits::compile(&file.limits, &file.quotas, previous.map(|p| &p.limits)),
            caps: Caps::compile(&file.concurrency, previous.map(|p| &p.caps)),
            breakers: Breakers::compile(path, &file.breakers, previous.map(|p| &p.breakers))?,
            results: ResultCaps::compile(file.default_result_bytes, &file.results),
        })
    }

    /// What it holds, for the log.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{} rule(s), {} limit(s) and quota(s), {} concurrency cap(s), {} breaker(s), {} \
             result cap(s){}",
            self.rules.len(),
            self.limits.len(),
            self.caps.len(),
            self.breakers.len(),
            self.results.len(),
            self.sessions_per_identity
                .map(|n| format!(", {n} session(s) per caller"))
                .unwrap_or_default()
        )
    }

    /// Whether a rule may hide a tool from some caller's `tools/list`.
    pub(crate) fn has_rules(&self) -> bool {
        !self.rules.allow_all()
    }

    /// Whether counting calls against limits is needed at all.
    pub(crate) fn counts_calls(&self) -> bool {
        !self.limits.is_empty()
    }

    /// The rule that hides `tool` from `caller` and refuses it its calls, if one does.
    pub fn hides(&self, caller: &Caller<'_>, tool: &ToolFacts<'_>) -> Option<Denial> {
        let rule = self.rules.denies(caller, tool)?;
        Some(Denial {
            message: format!("the policy rule `{rule}` denies tool `{}`", tool.name),
            rule: rule.to_string(),
            kind: DenialKind::Rule,
            retry_after: None,
        })
    }

    /// Counts `caller` calling `tool` now against the rate limits and quotas.
    pub fn admit(&self, caller: &Caller<'_>, tool: &ToolFacts<'_>) -> Result<(), Denial> {
        if self.limits.is_empty() {
            return Ok(());
        }
        self.limits.admit(caller, tool, Instant::now())
    }

    /// [`Policy::admit`] with the counters every replica shares in Redis.
    pub(crate) async fn admit_shared(
        &self,
        caller: &Caller<'_>,
        tool: &ToolFacts<'_>,
        shared: &crate::shared::Shared,
    ) -> Result<(), Denial> {
        if self.limits.is_empty() {
            return Ok(());
        }
        let keys = self.limits.keys(caller, tool);
        let counters = self.limits.counters(caller, tool, &keys);
        shared_limits::admit(shared, &counters).await
    }

    /// The refusal of a session `caller` would open while holding `held`, if over its quota.
    pub(crate) fn refuses_session(&self, caller: &Caller<'_>, held: usize) -> Option<Denial> {
        let most = self.sessions_per_identity?;
        (held >= most).then(|| Denial {
            rule: "[sessions] per_identity".to_owned(),
            kind: DenialKind::Sessions,
            message: format!(
                "`{}` holds {held} session(s), the most one caller may ({most}); end one first",
                caller.name
            ),
            retry_after: None,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    static NO_SCOPES: [String; 0] = [];
    static READ_ONLY: Annotations = Annotations {
        read_only: Some(true),
        destructive: None,
        idempotent: None,
        open_world: None,
    };
    static WRITES: Annotations = Annotations {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
    };

    /// The key caller `alice`.
    pub(crate) fn alice() -> Caller<'static> {
        Caller {
            key: "key:alice",
            name: "alice",
            kind: "key",
            scopes: &NO_SCOPES,
            claims: None,
        }
    }

    /// The key caller `bob`.
    pub(crate) fn bob() -> Caller<'static> {
        Caller {
            key: "key:bob",
            name: "bob",
            kind: "key",
            scopes: &NO_SCOPES,
            claims: None,
        }
    }

    /// A tool of plugin `p`.
    pub(crate) fn tool(
        name: &'static str,
        toolset: &'static str,
        read_only: bool,
    ) -> ToolFacts<'static> {
        ToolFacts {
            name,
            toolset,
            plugin: "p",
            annotations: if read_only { &READ_ONLY } else { &WRITES },
        }
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        let denial = |wait| Denial {
            rule: String::new(),
            kind: DenialKind::RateLimited,
            message: String::new(),
            retry_after: Some(wait),
        };
        assert_eq!(
            denial(Duration::from_millis(1)).retry_after_seconds(),
            Some(1)
        );
        assert_eq!(
            denial(Duration::from_millis(1500)).retry_after_seconds(),
            Some(2)
        );
        assert_eq!(
            denial(Duration::from_secs(30)).retry_after_seconds(),
            Some(30)
        );
    }

    #[test]
    fn the_readmes_example_compiles_and_decides() {
        let readme = include_str!("../../../README.md");
        let section = &readme[readme.find("## Policies").unwrap()..];
        let start = section.find("```toml\n").unwrap() + "```toml\n".len();
        let example = &section[start..start + section[start..].find("```").unwrap()];
        let path = Path::new("README.md");
        let file = PolicyFile::parse(path, example).unwrap();
        let policy = Policy::compile(path, &file, None).unwrap();
        let trial = Caller {
            key: "key:trial-1",
            name: "trial-1",
            kind: "key",
            scopes: &NO_SCOPES,
            claims: None,
        };
        assert!(policy.hides(&trial, &tool("write", "s", false)).is_some());
        assert!(policy.hides(&trial, &tool("read", "s", true)).is_none());
        assert!(policy.hides(&alice(), &tool("write", "s", false)).is_none());
        assert_eq!(
            policy.summary(),
            "2 rule(s), 4 limit(s) and quota(s), 1 concurrency cap(s), 1 breaker(s), 1 result cap(s), 5 session(s) per caller"
        );
    }

    #[test]
    fn session_quota_counts_what_the_caller_holds() {
        let file = PolicyFile::parse(Path::new("p"), "[sessions]\nper_identity = 2\n").unwrap();
        let policy = Policy::compile(Path::new("p"), &file, None).unwrap();
        assert!(policy.refuses_session(&alice(), 1).is_none());
        let denial = policy.refuses_session(&alice(), 2).unwrap();
        assert_eq!(denial.kind, DenialKind::Sessions);
        assert!(
            Policy::default()
                .refuses_session(&alice(), 1_000_000)
                .is_none()
        );
    }
}
