//! Caps on the size of a result: the first `[[result]]` entry matching a call gives its cap
//! and whether a larger result is cut or refused; `[results] default_bytes` (or
//! [`DEFAULT_RESULT_BYTES`]) caps the others, so no result grows the host's memory without end.

use super::{
    Caller, ToolFacts,
    file::{Entry, OverCap, ResultEntry},
    matcher::Matcher,
};

/// The cap on a result no entry matches, without `[results] default_bytes`: 32 MiB.
pub(crate) const DEFAULT_RESULT_BYTES: usize = 32 * 1024 * 1024;

/// The cap a call's result gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResultCap {
    /// The entry that set it (`[results] default_bytes` for the default).
    pub(crate) rule: String,
    /// The most bytes of content.
    pub(crate) bytes: usize,
    /// Cut or refuse.
    pub(crate) over: OverCap,
}

/// The result caps of a policy.
#[derive(Debug)]
pub(crate) struct ResultCaps {
    default: ResultCap,
    caps: Vec<(Matcher, ResultCap)>,
}

impl Default for ResultCaps {
    fn default() -> Self {
        Self::compile(None, &[])
    }
}

impl ResultCaps {
    /// The caps of `entries`, with `default_bytes` for the calls none matches.
    pub(crate) fn compile(default_bytes: Option<usize>, entries: &[Entry<ResultEntry>]) -> Self {
        Self {
            default: ResultCap {
                rule: "[results] default_bytes".to_owned(),
                bytes: default_bytes.unwrap_or(DEFAULT_RESULT_BYTES),
                over: OverCap::Cut,
            },
            caps: entries
                .iter()
                .map(|entry| {
                    let cap = ResultCap {
                        rule: entry.name.clone(),
                        bytes: entry.value.bytes,
                        over: entry.value.over,
                    };
                    (Matcher::new(entry.value.matching()), cap)
                })
                .collect(),
        }
    }

    /// How many caps it has besides the default.
    pub(crate) fn len(&self) -> usize {
        self.caps.len()
    }

    /// The cap of `caller` calling `tool`.
    pub(crate) fn cap(&self, caller: &Caller<'_>, tool: &ToolFacts<'_>) -> &ResultCap {
        self.caps
            .iter()
            .find(|(matcher, _)| matcher.matches(caller, tool))
            .map_or(&self.default, |(_, cap)| cap)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::policy::{
        file::PolicyFile,
        tests::{alice, tool},
    };

    #[test]
    fn the_first_matching_entry_caps_and_the_default_the_rest() {
        let file = PolicyFile::parse(
            Path::new("p"),
            "[results]\ndefault_bytes = 1000\n[[result]]\ntool = \"big\"\nbytes = 10\nover = \"refuse\"\n",
        )
        .unwrap();
        let caps = ResultCaps::compile(file.default_result_bytes, &file.results);
        let big = caps.cap(&alice(), &tool("big", "s", true));
        assert_eq!((big.bytes, big.over), (10, OverCap::Refuse));
        assert_eq!(caps.cap(&alice(), &tool("small", "s", true)).bytes, 1000);
        assert_eq!(
            ResultCaps::default()
                .cap(&alice(), &tool("x", "s", true))
                .bytes,
            DEFAULT_RESULT_BYTES
        );
    }
}
