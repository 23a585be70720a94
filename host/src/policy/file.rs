//! The policy file as written: TOML read into plain values ([`PolicyFile`]), every entry with
//! the line it starts on, and every error naming the file, the line and the entry. What the
//! entries mean is [`super::compiled`]'s.

use std::{ops::Range, path::Path, time::Duration};

use serde::Deserialize;
use toml::Spanned;

/// The policy file, as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyFile {
    /// The sessions one caller may hold at once (`[sessions] per_identity`).
    pub(crate) sessions_per_identity: Option<usize>,
    /// What a call no rule matched gets (`[rules] default`): allowed unless `deny`.
    pub(crate) rules_default_deny: bool,
    /// The default cap on a result's size, in bytes (`[results] default_bytes`).
    pub(crate) default_result_bytes: Option<usize>,
    /// Token buckets (`[[limit]]`).
    pub(crate) limits: Vec<Entry<LimitEntry>>,
    /// Calls per caller per period (`[[quota]]`).
    pub(crate) quotas: Vec<Entry<QuotaEntry>>,
    /// Allow and deny rules in CEL (`[[rule]]`), in the order they are tried.
    pub(crate) rules: Vec<Entry<RuleEntry>>,
    /// Concurrency caps (`[[concurrency]]`).
    pub(crate) concurrency: Vec<Entry<ConcurrencyEntry>>,
    /// Result size caps (`[[result]]`).
    pub(crate) results: Vec<Entry<ResultEntry>>,
    /// Circuit breakers (`[[breaker]]`).
    pub(crate) breakers: Vec<Entry<BreakerEntry>>,
}

/// One entry of a list: its name (given, or `limit[2]`), the line it starts on, and itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry<T> {
    /// The entry's `name`, else its table and index (`limit[0]`).
    pub(crate) name: String,
    /// The line of the file it starts on (1-based).
    pub(crate) line: usize,
    /// The entry.
    pub(crate) value: T,
}

/// Which calls an entry applies to: each given pattern must match (`*` any run of characters).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Match {
    /// The caller's name (the key's name or the token's subject; `anonymous` without
    /// authentication).
    pub(crate) identity: Option<String>,
    /// The tool's name.
    pub(crate) tool: Option<String>,
    /// The tool's toolset.
    pub(crate) toolset: Option<String>,
    /// The plugin serving the tool (a bridged server's name, too).
    pub(crate) plugin: Option<String>,
}

/// What one bucket of a limit or a cap is counted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Per {
    /// Each caller.
    Identity,
    /// Each tool.
    Tool,
    /// Each toolset.
    Toolset,
    /// Each plugin.
    Plugin,
}

/// A token bucket: `rate` calls per `period`, up to `burst` at once.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitEntry {
    #[serde(default)]
    name: Option<String>,
    /// The caller's name it applies to (a pattern; `*` any run of characters).
    #[serde(default)]
    pub(crate) identity: Option<String>,
    /// The tool's name it applies to (a pattern).
    #[serde(default)]
    pub(crate) tool: Option<String>,
    /// The tool's toolset it applies to (a pattern).
    #[serde(default)]
    pub(crate) toolset: Option<String>,
    /// The plugin it applies to (a pattern; a bridged server's name too).
    #[serde(default)]
    pub(crate) plugin: Option<String>,
    /// One bucket for each of these (none: one for the whole server).
    #[serde(default)]
    pub(crate) per: Vec<Per>,
    /// Calls per period.
    pub(crate) rate: u32,
    /// The period (`1s`, `500ms`, `1m`, `1h`, `1d`).
    #[serde(deserialize_with = "duration")]
    pub(crate) period: Duration,
    /// The most calls at once after a quiet while (default: `rate`).
    pub(crate) burst: Option<u32>,
}

/// Calls per caller in each period (a fixed window from the first call).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct QuotaEntry {
    #[serde(default)]
    name: Option<String>,
    /// The caller's name it applies to (a pattern; `*` any run of characters).
    #[serde(default)]
    pub(crate) identity: Option<String>,
    /// The tool's name it applies to (a pattern).
    #[serde(default)]
    pub(crate) tool: Option<String>,
    /// The tool's toolset it applies to (a pattern).
    #[serde(default)]
    pub(crate) toolset: Option<String>,
    /// The plugin it applies to (a pattern; a bridged server's name too).
    #[serde(default)]
    pub(crate) plugin: Option<String>,
    /// Calls per period and caller.
    pub(crate) calls: u64,
    /// The period.
    #[serde(deserialize_with = "duration")]
    pub(crate) period: Duration,
}

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Effect {
    /// The call (and the tool's listing) is allowed.
    Allow,
    /// The call is refused and the tool not listed.
    Deny,
}

/// A rule: when its CEL expression is true, its effect decides.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleEntry {
    #[serde(default)]
    name: Option<String>,
    /// Allow or deny.
    pub(crate) effect: Effect,
    /// The condition, in CEL.
    pub(crate) when: String,
}

/// At most `max` calls at once, `queue` more waiting; one cap for each `per`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConcurrencyEntry {
    #[serde(default)]
    name: Option<String>,
    /// The caller's name it applies to (a pattern; `*` any run of characters).
    #[serde(default)]
    pub(crate) identity: Option<String>,
    /// The tool's name it applies to (a pattern).
    #[serde(default)]
    pub(crate) tool: Option<String>,
    /// The tool's toolset it applies to (a pattern).
    #[serde(default)]
    pub(crate) toolset: Option<String>,
    /// The plugin it applies to (a pattern; a bridged server's name too).
    #[serde(default)]
    pub(crate) plugin: Option<String>,
    /// One cap for each of these (none: one for all the calls it matches).
    #[serde(default)]
    pub(crate) per: Vec<Per>,
    /// Calls running at once.
    pub(crate) max: u32,
    /// Calls waiting for a place; past it, the answer is "busy" at once.
    #[serde(default)]
    pub(crate) queue: u32,
}

/// What is done with a result over its cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OverCap {
    /// Its text is cut to the cap, with a notice saying what was cut.
    #[default]
    Cut,
    /// It is replaced by an error result saying its size and the cap.
    Refuse,
}

/// A cap on the size of results.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResultEntry {
    #[serde(default)]
    name: Option<String>,
    /// The caller's name it applies to (a pattern; `*` any run of characters).
    #[serde(default)]
    pub(crate) identity: Option<String>,
    /// The tool's name it applies to (a pattern).
    #[serde(default)]
    pub(crate) tool: Option<String>,
    /// The tool's toolset it applies to (a pattern).
    #[serde(default)]
    pub(crate) toolset: Option<String>,
    /// The plugin it applies to (a pattern; a bridged server's name too).
    #[serde(default)]
    pub(crate) plugin: Option<String>,
    /// The most bytes of content.
    pub(crate) bytes: usize,
    /// Cut or refuse.
    #[serde(default)]
    pub(crate) over: OverCap,
}

/// A circuit breaker for each plugin it matches.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BreakerEntry {
    #[serde(default)]
    name: Option<String>,
    /// The plugins (bridged servers, isolated plugins) it watches.
    pub(crate) plugin: String,
    /// Failures within `window` that open it.
    pub(crate) failures: u32,
    /// The window.
    #[serde(deserialize_with = "duration")]
    pub(crate) window: Duration,
    /// How long it stays open before one probe call is let through.
    #[serde(deserialize_with = "duration")]
    pub(crate) open_for: Duration,
}

/// Why a policy file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PolicyFileError {
    /// The file cannot be read.
    #[error("cannot read the policy file {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a policy.
    #[error("the policy file {path}, line {line}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// The line (1-based).
        line: usize,
        /// What is wrong, naming the entry when there is one.
        message: String,
    },
}

impl PolicyFileError {
    /// The error `message` about `path` at `line`.
    pub(crate) fn invalid(path: &Path, line: usize, message: impl Into<String>) -> Self {
        Self::Invalid {
            path: path.display().to_string(),
            line,
            message: message.into(),
        }
    }
}

/// The file as serde reads it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    sessions: Option<RawSessions>,
    #[serde(default)]
    rules: Option<RawRules>,
    #[serde(default)]
    results: Option<RawResults>,
    #[serde(default)]
    limit: Vec<Spanned<LimitEntry>>,
    #[serde(default)]
    quota: Vec<Spanned<QuotaEntry>>,
    #[serde(default)]
    rule: Vec<Spanned<RuleEntry>>,
    #[serde(default)]
    concurrency: Vec<Spanned<ConcurrencyEntry>>,
    #[serde(default)]
    result: Vec<Spanned<ResultEntry>>,
    #[serde(default)]
    breaker: Vec<Spanned<BreakerEntry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSessions {
    per_identity: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    default: Option<Effect>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResults {
    default_bytes: Option<usize>,
}

/// An entry that may carry its own name.
trait Named {
    fn given_name(&self) -> Option<&str>;
}

macro_rules! named {
    ($($entry:ty),*) => {$(
        impl Named for $entry {
            fn given_name(&self) -> Option<&str> {
                self.name.as_deref()
            }
        }
    )*};
}
named!(
    LimitEntry,
    QuotaEntry,
    RuleEntry,
    ConcurrencyEntry,
    ResultEntry,
    BreakerEntry
);

macro_rules! matching {
    ($($entry:ty),*) => {$(
        impl $entry {
            /// Which calls it applies to.
            pub(crate) fn matching(&self) -> Match {
                Match {
                    identity: self.identity.clone(),
                    tool: self.tool.clone(),
                    toolset: self.toolset.clone(),
                    plugin: self.plugin.clone(),
                }
            }
        }
    )*};
}
matching!(LimitEntry, QuotaEntry, ConcurrencyEntry, ResultEntry);

impl PolicyFile {
    /// Reads the policy file at `path`.
    pub(crate) fn read(path: &Path) -> Result<Self, PolicyFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyFileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses `text`, the policy file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, PolicyFileError> {
        let raw: Raw = toml::from_str(text).map_err(|error| {
            let line = error.span().map_or(1, |span| line_of(text, span.start));
            PolicyFileError::invalid(path, line, error.message().trim_end_matches('\n'))
        })?;
        Ok(Self {
            sessions_per_identity: raw.sessions.and_then(|s| s.per_identity),
            rules_default_deny: raw
                .rules
                .and_then(|r| r.default)
                .is_some_and(|d| d == Effect::Deny),
            default_result_bytes: raw.results.and_then(|r| r.default_bytes),
            limits: entries(text, "limit", raw.limit),
            quotas: entries(text, "quota", raw.quota),
            rules: entries(text, "rule", raw.rule),
            concurrency: entries(text, "concurrency", raw.concurrency),
            results: entries(text, "result", raw.result),
            breakers: entries(text, "breaker", raw.breaker),
        })
    }
}

/// The entries of the array of tables `table`, each named and placed.
fn entries<T: Named>(text: &str, table: &str, raw: Vec<Spanned<T>>) -> Vec<Entry<T>> {
    raw.into_iter()
        .enumerate()
        .map(|(index, spanned)| {
            let Range { start, .. } = spanned.span();
            let value = spanned.into_inner();
            Entry {
                name: value
                    .given_name()
                    .map_or_else(|| format!("{table}[{index}]"), str::to_owned),
                line: line_of(text, start),
                value,
            }
        })
        .collect()
}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// A duration written as a whole number and a unit: `ms`, `s`, `m`, `h` or `d`.
fn duration<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

/// `text` as a duration (`500ms`, `1s`, `5m`, `1h`, `1d`); never zero.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let bad = || format!("`{text}` is not a duration such as `500ms`, `1s`, `5m`, `1h` or `1d`");
    let number: u64 = number.parse().map_err(|_| bad())?;
    let millis = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    if number == 0 {
        return Err(format!("the duration `{text}` is zero"));
    }
    Ok(Duration::from_millis(number.saturating_mul(millis)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PolicyFile, String> {
        PolicyFile::parse(Path::new("policy.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn entries_are_read_with_their_names_and_lines() {
        let file = parse(
            "[sessions]\nper_identity = 3\n\n[[limit]]\nname = \"each key\"\nper = \
             [\"identity\"]\nrate = 10\nperiod = \"1s\"\n\n[[limit]]\ntool = \"fs_*\"\nrate = \
             1\nperiod = \"1m\"\nburst = 5\n\n[[rule]]\neffect = \"deny\"\nwhen = \"true\"\n",
        )
        .unwrap();
        assert_eq!(file.sessions_per_identity, Some(3));
        assert_eq!(file.limits.len(), 2);
        assert_eq!(file.limits[0].name, "each key");
        assert_eq!(file.limits[0].line, 4);
        assert_eq!(file.limits[0].value.per, [Per::Identity]);
        assert_eq!(file.limits[1].name, "limit[1]");
        assert_eq!(file.limits[1].line, 10);
        assert_eq!(file.limits[1].value.tool.as_deref(), Some("fs_*"));
        assert_eq!(file.limits[1].value.period, Duration::from_secs(60));
        assert_eq!(file.rules[0].value.effect, Effect::Deny);
        assert!(!file.rules_default_deny);
    }

    #[test]
    fn an_error_names_the_file_and_line() {
        let error = parse("[[limit]]\nrate = 10\nperiod = \"soon\"\n").unwrap_err();
        assert!(
            error.starts_with("the policy file policy.toml, line 3: ") && error.contains("soon"),
            "{error}"
        );
        let error =
            parse("\n[[rule]]\neffect = \"deny\"\nwhen = \"true\"\ncolour = 1\n").unwrap_err();
        assert!(
            error.contains("line 5") && error.contains("colour"),
            "{error}"
        );
        let error = parse("[[limit]\n").unwrap_err();
        assert!(error.contains("line 1"), "{error}");
    }

    #[test]
    fn durations_have_a_unit_and_are_not_zero() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("1.5s").is_err());
    }
}
