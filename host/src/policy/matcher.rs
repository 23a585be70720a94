//! Which calls an entry applies to: its patterns over the caller's name, the tool, its toolset
//! and its plugin, and the key of the counter a call is counted under.

use super::{Caller, ToolFacts, file::Match, file::Per};
use crate::selection::glob_matches;

/// An entry's patterns: each given one must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Matcher(Match);

impl Matcher {
    /// The matcher of `matching`.
    pub(crate) fn new(matching: Match) -> Self {
        Self(matching)
    }

    /// Whether `caller` calling `tool` is matched.
    pub(crate) fn matches(&self, caller: &Caller<'_>, tool: &ToolFacts<'_>) -> bool {
        let one = |pattern: &Option<String>, value: &str| {
            pattern.as_deref().is_none_or(|p| glob_matches(p, value))
        };
        one(&self.0.identity, caller.name)
            && one(&self.0.tool, tool.name)
            && one(&self.0.toolset, tool.toolset)
            && one(&self.0.plugin, tool.plugin)
    }
}

/// The key of the counter `caller` calling `tool` is counted under, for an entry counted
/// `per` these: the values joined by NUL (which no name holds); empty for one counter in all.
pub(crate) fn key(per: &[Per], caller: &Caller<'_>, tool: &ToolFacts<'_>) -> String {
    let mut key = String::new();
    for (i, part) in per.iter().enumerate() {
        if i > 0 {
            key.push('\0');
        }
        key.push_str(match part {
            Per::Identity => caller.key,
            Per::Tool => tool.name,
            Per::Toolset => tool.toolset,
            Per::Plugin => tool.plugin,
        });
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{alice, tool};

    #[test]
    fn every_given_pattern_must_match() {
        let matcher = Matcher::new(Match {
            identity: Some("ali*".into()),
            tool: Some("fs_*".into()),
            ..Match::default()
        });
        assert!(matcher.matches(&alice(), &tool("fs_read", "files", true)));
        assert!(!matcher.matches(&alice(), &tool("net_get", "files", true)));
        assert!(Matcher::new(Match::default()).matches(&alice(), &tool("x", "y", false)));
    }

    #[test]
    fn keys_join_what_the_entry_is_counted_per() {
        let t = tool("fs_read", "files", true);
        assert_eq!(key(&[], &alice(), &t), "");
        assert_eq!(
            key(&[Per::Identity, Per::Tool], &alice(), &t),
            "key:alice\0fs_read"
        );
        assert_eq!(key(&[Per::Toolset], &alice(), &t), "files");
    }
}
