//! Tool filters: which of the active set's tools a request is shown.
//!
//! Each source (the operator's flags, the URL, the headers, the `--toolsets` fallback) gives
//! at most one allow-list (`tools=`), some excluded patterns (`exclude_tools=`) and perhaps
//! `readonly`. Sources combine by [`ToolFilter::narrow`], which never widens: a tool is shown
//! only if it matches a pattern of every allow-list, matches no excluded pattern (exclusion
//! always wins), and, when any source asks for `readonly`, is annotated `readOnlyHint: true`.
//! Patterns are tool names in which `*` stands for any run of characters.
//!
//! A filter is a plain value in a normal form (sorted sets), so equal filters however spelled
//! are equal and hash alike.

use std::collections::BTreeSet;

use serde::Serialize;

/// Which tools a request is shown; the default shows every tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub(crate) struct ToolFilter {
    /// The allow-lists, one per source that gave one: a tool must match a pattern of each.
    pub(crate) allow: BTreeSet<BTreeSet<String>>,
    /// Patterns of tools never shown.
    pub(crate) exclude: BTreeSet<String>,
    /// Show only tools annotated `readOnlyHint: true`.
    pub(crate) readonly: bool,
}

impl ToolFilter {
    /// The operator's bounds from pattern lists as flags give them (each entry may hold several
    /// names split on `,` and spaces): `tools` bounds nothing when it names none.
    pub(crate) fn bounds<'a>(
        tools: impl IntoIterator<Item = &'a str>,
        exclude: impl IntoIterator<Item = &'a str>,
        readonly: bool,
    ) -> Self {
        let tools = super::split_names(tools);
        Self::new(
            Some(tools.as_slice()).filter(|t| !t.is_empty()),
            &super::split_names(exclude),
            readonly,
        )
    }

    /// The filter one source gives: `tools` (an allow-list, when given), `exclude` and
    /// `readonly`.
    pub(crate) fn new(tools: Option<&[String]>, exclude: &[String], readonly: bool) -> Self {
        Self {
            allow: tools
                .map(|tools| tools.iter().cloned().collect())
                .into_iter()
                .collect(),
            exclude: exclude.iter().cloned().collect(),
            readonly,
        }
    }

    /// Whether the tool `name`, read-only or not as its annotations say, is shown.
    pub(crate) fn allows(&self, name: &str, read_only_hint: bool) -> bool {
        (read_only_hint || !self.readonly)
            && !self.exclude.iter().any(|p| glob_matches(p, name))
            && self
                .allow
                .iter()
                .all(|list| list.iter().any(|p| glob_matches(p, name)))
    }

    /// What both filters show, and nothing more.
    #[must_use]
    pub(crate) fn narrow(mut self, other: Self) -> Self {
        self.allow.extend(other.allow);
        self.exclude.extend(other.exclude);
        self.readonly |= other.readonly;
        self
    }

    /// Whether the filter shows every tool.
    pub(crate) fn shows_all(&self) -> bool {
        self.allow.is_empty() && self.exclude.is_empty() && !self.readonly
    }
}

/// Whether `name` matches `pattern`, in which `*` stands for any run of characters (none
/// included) and every other character for itself.
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == name;
    };
    let Some(mut name) = name.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = rest.split('*').collect();
    let last = parts.pop().unwrap_or_default();
    for part in parts {
        match name.find(part) {
            Some(at) => name = &name[at + part.len()..],
            None => return false,
        }
    }
    name.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn only(tools: &[&str]) -> ToolFilter {
        ToolFilter::new(Some(&names(tools)), &[], false)
    }

    fn excluding(tools: &[&str]) -> ToolFilter {
        ToolFilter::new(None, &names(tools), false)
    }

    fn readonly() -> ToolFilter {
        ToolFilter::new(None, &[], true)
    }

    #[test]
    fn a_star_stands_for_any_run_of_characters() {
        for (pattern, name) in [
            ("echo", "echo"),
            ("*", "anything"),
            ("*", ""),
            ("list_*", "list_sandboxes"),
            ("list_*", "list_"),
            ("*_sandbox", "launch_sandbox"),
            ("*sand*", "stop_sandbox"),
            ("l*_*x", "launch_sandbox"),
            ("a**b", "ab"),
        ] {
            assert!(glob_matches(pattern, name), "{pattern} {name}");
        }
        for (pattern, name) in [
            ("echo", "echo2"),
            ("echo", "Echo"),
            ("list_*", "lis"),
            ("*_sandbox", "launch_sandboxes"),
            ("a*a", "a"),
            ("a*b*c", "acb"),
            ("", "x"),
        ] {
            assert!(!glob_matches(pattern, name), "{pattern} {name}");
        }
    }

    #[test]
    fn the_default_shows_every_tool() {
        let filter = ToolFilter::default();
        assert!(filter.shows_all());
        assert!(filter.allows("anything", false));
    }

    #[test]
    fn tools_shows_only_the_tools_it_matches() {
        let filter = only(&["echo", "list_*"]);
        assert!(filter.allows("echo", false));
        assert!(filter.allows("list_sandboxes", false));
        assert!(!filter.allows("add", true));
        assert!(
            !only(&[]).allows("echo", true),
            "an empty list shows nothing"
        );
    }

    #[test]
    fn exclusion_always_wins() {
        let filter = only(&["*"]).narrow(excluding(&["stop_*"]));
        assert!(filter.allows("launch_sandbox", false));
        assert!(!filter.allows("stop_sandbox", false));
        assert!(
            !only(&["echo"])
                .narrow(excluding(&["echo"]))
                .allows("echo", true)
        );
    }

    #[test]
    fn readonly_keeps_only_read_only_tools() {
        assert!(readonly().allows("list_sandboxes", true));
        assert!(!readonly().allows("launch_sandbox", false));
    }

    #[test]
    fn narrowing_never_widens() {
        let tools = [
            ("echo", true),
            ("add", true),
            ("launch_sandbox", false),
            ("list_sandboxes", true),
        ];
        let filters = [
            ToolFilter::default(),
            only(&["echo", "*_sandbox*"]),
            only(&["a*", "launch_*"]),
            excluding(&["list_*"]),
            readonly(),
        ];
        for a in &filters {
            for b in &filters {
                let both = a.clone().narrow(b.clone());
                for (name, ro) in tools {
                    assert_eq!(
                        both.allows(name, ro),
                        a.allows(name, ro) && b.allows(name, ro),
                        "{a:?} {b:?} {name}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_request_narrows_inside_the_operators_bounds() {
        let bounds = only(&["echo", "add", "*_sandbox"]).narrow(excluding(&["stop_*"]));
        let url = only(&["echo", "stop_sandbox", "sleep"]);
        let headers = readonly();
        let filter = bounds.narrow(url).narrow(headers);
        assert!(filter.allows("echo", true));
        assert!(!filter.allows("add", true), "the URL leaves it out");
        assert!(!filter.allows("sleep", true), "the bounds leave it out");
        assert!(
            !filter.allows("stop_sandbox", true),
            "the bounds exclude it"
        );
        assert!(
            !only(&["launch_sandbox"])
                .narrow(readonly())
                .allows("launch_sandbox", false)
        );
    }

    #[test]
    fn spellings_of_one_filter_are_equal() {
        assert_eq!(only(&["b", "a", "a"]), only(&["a", "b"]));
        assert_eq!(
            only(&["a"]).narrow(only(&["a"])),
            only(&["a"]),
            "narrowing by itself changes nothing"
        );
    }
}
