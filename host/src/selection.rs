//! Selection: a URL's query and the declared toolsets give the active set.
//!
//! | URL | active set |
//! | --- | --- |
//! | `/mcp` | every `default` toolset, plus always-on ones |
//! | `/mcp?benchmarks` | defaults plus `benchmarks` (a bare key names a toolset) |
//! | `/mcp?sandboxes=false` | defaults less `sandboxes` (`=false`, `=0`, `=off`, `=no` turn a bare key off) |
//! | `/mcp?toolsets=a,b` | defaults plus those |
//! | `/mcp?only=a` | `a` plus always-on ones (bare names and `toolsets` are ignored) |
//! | `/mcp?without=a` | defaults less `a` (always-on toolsets cannot be removed) |
//!
//! Names split on `,` and spaces, empties dropped, case-sensitive; keys may repeat. Unknown
//! names are reported, never an error. A default selection (`--toolsets`) applies when the URL
//! selects nothing.
//!
//! Selection reads plain values only (a query, the declared toolsets); `crate::registry` says
//! what is declared, and `crate::reports` what an active set is served.

use std::collections::BTreeSet;

use serde::Serialize;

/// Whether a bare key's value turns its toolset off (`?name=false`, `=0`, `=off`, `=no`, in
/// any case); any other value, or none, turns it on.
fn is_off(value: &str) -> bool {
    ["false", "0", "off", "no"]
        .iter()
        .any(|off| value.trim().eq_ignore_ascii_case(off))
}

/// What a query string asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Names given as bare keys (`?benchmarks`).
    pub bare: Vec<String>,
    /// Names given with `toolsets=`.
    pub toolsets: Vec<String>,
    /// Names given with `only=`; `Some` as soon as an `only` key is present.
    pub only: Option<Vec<String>>,
    /// Names given with `without=`.
    pub without: Vec<String>,
}

impl Query {
    /// Parses a URL query string (without the `?`).
    pub fn parse(query: &str) -> Self {
        let mut parsed = Self::default();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "toolsets" => parsed.toolsets.extend(split_names([value.as_ref()])),
                "only" => parsed
                    .only
                    .get_or_insert_with(Vec::new)
                    .extend(split_names([value.as_ref()])),
                "without" => parsed.without.extend(split_names([value.as_ref()])),
                _ if is_off(&value) => parsed.without.extend(split_names([key.as_ref()])),
                _ => parsed.bare.extend(split_names([key.as_ref()])),
            }
        }
        parsed
    }

    /// Whether the query selects nothing, so a default selection applies.
    pub fn is_empty(&self) -> bool {
        self.bare.is_empty()
            && self.toolsets.is_empty()
            && self.only.is_none()
            && self.without.is_empty()
    }

    fn names(&self) -> impl Iterator<Item = &String> {
        self.bare
            .iter()
            .chain(&self.toolsets)
            .chain(self.only.iter().flatten())
            .chain(&self.without)
    }
}

/// The toolsets a request is served, sorted by name. Equal sets share one tool table however
/// the URL spelled them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ActiveSet(BTreeSet<String>);

impl ActiveSet {
    /// A set of these names.
    pub fn from_names<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self(names.into_iter().map(Into::into).collect())
    }

    /// Whether `toolset` is active.
    pub fn contains(&self, toolset: &str) -> bool {
        self.0.contains(toolset)
    }

    /// The names, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.0.iter()
    }

    /// Whether no toolset is active.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The outcome of selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The active toolsets.
    pub active: ActiveSet,
    /// Names the query used that no plugin declares, sorted.
    pub unknown: Vec<String>,
}

/// One declared toolset, as selection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared<'a> {
    /// Its name.
    pub name: &'a str,
    /// On by default.
    pub default: bool,
    /// Always on.
    pub always: bool,
}

/// Resolves `query` against the declared toolsets; `fallback` applies when `query` is empty.
pub fn resolve(query: &Query, declared: &[Declared<'_>], fallback: Option<&Query>) -> Resolution {
    let query = match fallback {
        Some(fallback) if query.is_empty() => fallback,
        _ => query,
    };
    let known = |name: &str| declared.iter().any(|d| d.name == name);
    let mut active: BTreeSet<String> = match &query.only {
        Some(only) => only.iter().filter(|n| known(n)).cloned().collect(),
        None => declared
            .iter()
            .filter(|d| d.default)
            .map(|d| d.name.to_owned())
            .chain(
                query
                    .bare
                    .iter()
                    .chain(&query.toolsets)
                    .filter(|n| known(n))
                    .cloned(),
            )
            .collect(),
    };
    for name in &query.without {
        active.remove(name);
    }
    active.extend(
        declared
            .iter()
            .filter(|d| d.always)
            .map(|d| d.name.to_owned()),
    );
    let unknown: BTreeSet<String> = query.names().filter(|n| !known(n)).cloned().collect();
    Resolution {
        active: ActiveSet(active),
        unknown: unknown.into_iter().collect(),
    }
}

/// Splits a comma- or space-separated list of names, dropping empties.
pub fn split_names<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    values
        .into_iter()
        .flat_map(|v| v.split([',', ' ', '\t', '\n']))
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod properties;

#[cfg(test)]
mod tests {
    use super::*;

    const DECLARED: &[Declared<'static>] = &[
        Declared {
            name: "benchmarks",
            default: false,
            always: false,
        },
        Declared {
            name: "core",
            default: true,
            always: true,
        },
        Declared {
            name: "library",
            default: false,
            always: false,
        },
        Declared {
            name: "sandboxes",
            default: true,
            always: false,
        },
        Declared {
            name: "spaces",
            default: true,
            always: false,
        },
    ];

    fn active(query: &str) -> Vec<String> {
        resolve(&Query::parse(query), DECLARED, None)
            .active
            .iter()
            .cloned()
            .collect()
    }

    #[test]
    fn no_query_gives_defaults_and_always_on() {
        assert_eq!(active(""), ["core", "sandboxes", "spaces"]);
    }

    #[test]
    fn a_bare_key_adds_a_toolset() {
        assert_eq!(
            active("benchmarks"),
            ["benchmarks", "core", "sandboxes", "spaces"]
        );
        assert_eq!(
            active("benchmarks=1"),
            ["benchmarks", "core", "sandboxes", "spaces"]
        );
    }

    #[test]
    fn toolsets_adds_to_the_defaults() {
        assert_eq!(
            active("toolsets=library,benchmarks"),
            ["benchmarks", "core", "library", "sandboxes", "spaces"]
        );
        assert_eq!(
            active("toolsets=library&toolsets=benchmarks"),
            active("toolsets=library,benchmarks")
        );
        assert_eq!(
            active("toolsets=library%20benchmarks"),
            active("toolsets=library,benchmarks")
        );
    }

    #[test]
    fn only_keeps_those_and_always_on_and_ignores_bare_names() {
        assert_eq!(active("only=spaces"), ["core", "spaces"]);
        assert_eq!(active("only=spaces&benchmarks"), ["core", "spaces"]);
        assert_eq!(
            active("only=spaces&only=library"),
            ["core", "library", "spaces"]
        );
        assert_eq!(active("only="), ["core"]);
    }

    #[test]
    fn without_removes_but_never_an_always_on_toolset() {
        assert_eq!(active("without=sandboxes"), ["core", "spaces"]);
        assert_eq!(active("without=core,spaces"), ["core", "sandboxes"]);
        assert_eq!(
            active("only=spaces,library&without=library"),
            ["core", "spaces"]
        );
    }

    #[test]
    fn unknown_toolset_is_listed_not_rejected() {
        let r = resolve(
            &Query::parse("toolsets=nope,spaces&zzz&without=gone"),
            DECLARED,
            None,
        );
        assert_eq!(r.unknown, ["gone", "nope", "zzz"]);
        assert_eq!(
            r.active.iter().cloned().collect::<Vec<_>>(),
            ["core", "sandboxes", "spaces"]
        );
    }

    #[test]
    fn names_are_case_sensitive() {
        let r = resolve(&Query::parse("Benchmarks"), DECLARED, None);
        assert_eq!(r.unknown, ["Benchmarks"]);
        assert!(!r.active.contains("benchmarks"));
    }

    #[test]
    fn the_default_selection_applies_only_to_an_empty_query() {
        let fallback = Query::parse("only=library");
        let with = |q: &str| {
            resolve(&Query::parse(q), DECLARED, Some(&fallback))
                .active
                .iter()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(with(""), ["core", "library"]);
        assert_eq!(
            with("benchmarks"),
            ["benchmarks", "core", "sandboxes", "spaces"]
        );
    }

    #[test]
    fn spellings_of_one_set_are_equal() {
        let a = resolve(&Query::parse("benchmarks"), DECLARED, None).active;
        let b = resolve(&Query::parse("toolsets=benchmarks"), DECLARED, None).active;
        assert_eq!(a, b);
    }

    #[test]
    fn names_split_on_commas_and_spaces() {
        assert_eq!(split_names(["a,b", " c  d,,"]), ["a", "b", "c", "d"]);
    }

    #[test]
    fn a_bare_key_with_a_false_value_leaves_its_toolset_off() {
        for off in ["false", "0", "off", "no", "FALSE", "Off"] {
            assert_eq!(
                active(&format!("benchmarks={off}")),
                ["core", "sandboxes", "spaces"]
            );
            assert_eq!(
                active(&format!("sandboxes={off}")),
                ["core", "spaces"],
                "{off}"
            );
        }
        assert_eq!(
            active("benchmarks=true"),
            ["benchmarks", "core", "sandboxes", "spaces"]
        );
        assert_eq!(
            active("benchmarks=yes"),
            ["benchmarks", "core", "sandboxes", "spaces"]
        );
    }
}
