//! Selection: a request's URL query and headers, and the declared toolsets, give the active set
//! and the tool filter.
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
//! selects no toolset (filters alone do not count).
//!
//! Then the active set's tools are filtered ([`ToolFilter`]): `tools=a,b` shows only those (`*`
//! globs), `exclude_tools=` hides some (always wins), `readonly` shows only tools annotated
//! read-only. Headers say the same for clients that cannot change a URL ([`Headers`]):
//! `X-MCP-Toolsets` selects as `only=` does, `X-MCP-Tools`, `X-MCP-Exclude-Tools` and
//! `X-MCP-Readonly` filter. URL and headers narrow each other (when both select toolsets, the
//! active set is what both select), and both narrow inside the operator's bounds
//! ([`resolve_request`]).
//!
//! Two keys choose how the tools are offered ([`Mode`]): `search` adds the host's `search_tools`
//! to `tools/list`; `discover` lists only `search_tools`, `call_tool` and the tools marked
//! always visible, and turns every toolset on by default (nothing is opened before it is
//! called), so `/mcp?discover` reaches every tool the caller may use. Neither counts as
//! selecting a toolset.
//!
//! Selection reads plain values only (a query, header values, the declared toolsets);
//! `crate::registry` says what is declared, and `crate::reports` what an active set is served.

mod filter;

use std::collections::BTreeSet;

use serde::Serialize;

pub(crate) use filter::{ToolFilter, glob_matches};

/// Whether a bare key's value turns its toolset off (`?name=false`, `=0`, `=off`, `=no`, in
/// any case); any other value, or none, turns it on.
fn is_off(value: &str) -> bool {
    ["false", "0", "off", "no"]
        .iter()
        .any(|off| value.trim().eq_ignore_ascii_case(off))
}

/// The names of the headers selection reads, lower-case: toolsets, tools, excluded tools,
/// read-only.
pub(crate) const HEADER_NAMES: [&str; 4] = [
    "x-mcp-toolsets",
    "x-mcp-tools",
    "x-mcp-exclude-tools",
    "x-mcp-readonly",
];

/// The values of a request's selection headers ([`HEADER_NAMES`]), `None` when absent; a
/// header given more than once is one comma-joined value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Headers<'a> {
    /// `X-MCP-Toolsets`: the toolsets, as `only=` selects them.
    pub(crate) toolsets: Option<&'a str>,
    /// `X-MCP-Tools`: the tools shown, as `tools=`.
    pub(crate) tools: Option<&'a str>,
    /// `X-MCP-Exclude-Tools`: the tools hidden, as `exclude_tools=`.
    pub(crate) exclude_tools: Option<&'a str>,
    /// `X-MCP-Readonly`: read-only tools only, unless `false`, `0`, `off` or `no`.
    pub(crate) readonly: Option<&'a str>,
}

impl<'a> Headers<'a> {
    /// The values in [`HEADER_NAMES`] order.
    pub(crate) fn from_values(
        [toolsets, tools, exclude_tools, readonly]: [Option<&'a str>; 4],
    ) -> Self {
        Self {
            toolsets,
            tools,
            exclude_tools,
            readonly,
        }
    }
}

/// What a query string asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Query {
    /// Names given as bare keys (`?benchmarks`).
    pub(crate) bare: Vec<String>,
    /// Names given with `toolsets=`.
    pub(crate) toolsets: Vec<String>,
    /// Names given with `only=`; `Some` as soon as an `only` key is present.
    pub(crate) only: Option<Vec<String>>,
    /// Names given with `without=`.
    pub(crate) without: Vec<String>,
    /// Tool patterns given with `tools=`; `Some` as soon as a `tools` key is present.
    pub(crate) tools: Option<Vec<String>>,
    /// Tool patterns given with `exclude_tools=`.
    pub(crate) exclude_tools: Vec<String>,
    /// `readonly` given (bare, or with a value that does not turn it off).
    pub(crate) readonly: bool,
    /// How the tools are offered (`search`, `discover`).
    pub(crate) mode: Mode,
}

/// How a URL is offered its tools: all in `tools/list` (the default), with the host's
/// `search_tools` too (`?search`), or through `search_tools` and `call_tool` alone
/// (`?discover`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) struct Mode {
    /// `search_tools` is served.
    pub(crate) search: bool,
    /// `tools/list` is `search_tools`, `call_tool` and the tools marked always visible.
    pub(crate) discover: bool,
}

impl Mode {
    /// Both modes' keys given in either.
    #[must_use]
    fn or(self, other: Self) -> Self {
        Self {
            search: self.search || other.search,
            discover: self.discover || other.discover,
        }
    }

    /// Whether `search_tools` is served.
    pub(crate) fn searches(self) -> bool {
        self.search || self.discover
    }
}

impl Query {
    /// Parses a URL query string (without the `?`).
    pub(crate) fn parse(query: &str) -> Self {
        let mut parsed = Self::default();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "toolsets" => parsed.toolsets.extend(split_names([value.as_ref()])),
                "only" => parsed
                    .only
                    .get_or_insert_with(Vec::new)
                    .extend(split_names([value.as_ref()])),
                "without" => parsed.without.extend(split_names([value.as_ref()])),
                "tools" => parsed
                    .tools
                    .get_or_insert_with(Vec::new)
                    .extend(split_names([value.as_ref()])),
                "exclude_tools" => parsed.exclude_tools.extend(split_names([value.as_ref()])),
                "readonly" => parsed.readonly |= !is_off(&value),
                "search" => parsed.mode.search |= !is_off(&value),
                "discover" => parsed.mode.discover |= !is_off(&value),
                _ if is_off(&value) => parsed.without.extend(split_names([key.as_ref()])),
                _ => parsed.bare.extend(split_names([key.as_ref()])),
            }
        }
        parsed
    }

    /// What the selection headers ask for: `X-MCP-Toolsets` as `only=`, the others as the URL
    /// keys of the same names.
    pub(crate) fn from_headers(headers: &Headers<'_>) -> Self {
        Self {
            only: headers.toolsets.map(|v| split_names([v])),
            tools: headers.tools.map(|v| split_names([v])),
            exclude_tools: headers
                .exclude_tools
                .map(|v| split_names([v]))
                .unwrap_or_default(),
            readonly: headers.readonly.is_some_and(|v| !is_off(v)),
            ..Self::default()
        }
    }

    /// The tool filter the query gives.
    pub(crate) fn filter(&self) -> ToolFilter {
        ToolFilter::new(self.tools.as_deref(), &self.exclude_tools, self.readonly)
    }

    /// Whether the query selects no toolset, so a default selection applies; tool filters do
    /// not count.
    pub(crate) fn is_empty(&self) -> bool {
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
    pub(crate) fn contains(&self, toolset: &str) -> bool {
        self.0.contains(toolset)
    }

    /// The names, sorted.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &String> {
        self.0.iter()
    }

    /// The toolsets active in both.
    #[must_use]
    pub(crate) fn intersection(&self, other: &Self) -> Self {
        Self(self.0.intersection(&other.0).cloned().collect())
    }
}

/// The outcome of selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Resolution {
    /// The active toolsets.
    pub(crate) active: ActiveSet,
    /// Names the query used that no plugin declares, sorted.
    pub(crate) unknown: Vec<String>,
    /// Which of the active set's tools are shown.
    pub(crate) filter: ToolFilter,
    /// How the tools are offered.
    pub(crate) mode: Mode,
}

/// One declared toolset, as selection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Declared<'a> {
    /// Its name.
    pub(crate) name: &'a str,
    /// On by default.
    pub(crate) default: bool,
    /// Always on.
    pub(crate) always: bool,
}

/// Resolves a request: its URL `query` and its `headers` (see [`Query::from_headers`]) against
/// the declared toolsets, inside the operator's `bounds`. The toolsets come from the URL and the
/// headers, their intersection when both select some, else `fallback`; the filter is `bounds`
/// narrowed by the URL's, the headers' and, when it applies, the fallback's.
pub(crate) fn resolve_request(
    query: &Query,
    headers: &Query,
    declared: &[Declared<'_>],
    fallback: Option<&Query>,
    bounds: &ToolFilter,
) -> Resolution {
    let mut resolution = if headers.is_empty() {
        resolve(query, declared, fallback)
    } else {
        let by_headers = resolve(headers, declared, None);
        if query.is_empty() {
            Resolution {
                filter: by_headers.filter.clone().narrow(query.filter()),
                ..by_headers
            }
        } else {
            let by_url = resolve(query, declared, None);
            let mut unknown: BTreeSet<String> = by_url.unknown.into_iter().collect();
            unknown.extend(by_headers.unknown);
            Resolution {
                active: by_url.active.intersection(&by_headers.active),
                unknown: unknown.into_iter().collect(),
                filter: by_url.filter.narrow(by_headers.filter),
                mode: by_url.mode,
            }
        }
    };
    resolution.mode = resolution.mode.or(query.mode);
    resolution.filter = bounds
        .clone()
        .narrow(resolution.filter)
        .narrow(headers.filter());
    resolution
}

/// Resolves `query` against the declared toolsets; `fallback` applies when `query` selects no
/// toolset, and then its filter narrows the query's and its mode adds to the query's. In
/// discovery mode every toolset is on by default.
pub(crate) fn resolve(
    query: &Query,
    declared: &[Declared<'_>],
    fallback: Option<&Query>,
) -> Resolution {
    let filter = query.filter();
    let (query, filter, mode) = match fallback {
        Some(fallback) if query.is_empty() => (
            fallback,
            filter.narrow(fallback.filter()),
            query.mode.or(fallback.mode),
        ),
        _ => (query, filter, query.mode),
    };
    let known = |name: &str| declared.iter().any(|d| d.name == name);
    let mut active: BTreeSet<String> = match &query.only {
        Some(only) => only.iter().filter(|n| known(n)).cloned().collect(),
        None => declared
            .iter()
            .filter(|d| d.default || mode.discover)
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
        filter,
        mode,
    }
}

/// Splits a comma- or space-separated list of names, dropping empties.
pub(crate) fn split_names<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<String> {
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
    fn discover_turns_every_toolset_on_by_default_and_selects_none_itself() {
        let all = ["benchmarks", "core", "library", "sandboxes", "spaces"];
        assert_eq!(active("discover"), all);
        assert_eq!(
            active("discover&without=library"),
            ["benchmarks", "core", "sandboxes", "spaces"]
        );
        assert_eq!(active("discover&only=library"), ["core", "library"]);
        assert_eq!(active("search"), active(""));
        let mode = |query: &str| resolve(&Query::parse(query), DECLARED, None).mode;
        assert!(mode("discover").discover && mode("discover").searches());
        assert!(mode("search").searches() && !mode("search").discover);
        assert_eq!(mode("discover=false"), Mode::default());
        assert!(
            Query::parse("discover").is_empty(),
            "a mode selects no toolset"
        );
        let fallback = Query::parse("discover");
        assert!(
            resolve(&Query::parse(""), DECLARED, Some(&fallback))
                .mode
                .discover
        );
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

    fn request(query: &str, headers: Headers<'_>, bounds: &ToolFilter) -> Resolution {
        resolve_request(
            &Query::parse(query),
            &Query::from_headers(&headers),
            DECLARED,
            None,
            bounds,
        )
    }

    fn names(r: &Resolution) -> Vec<String> {
        r.active.iter().cloned().collect()
    }

    #[test]
    fn filter_keys_parse_and_do_not_name_toolsets() {
        let q = Query::parse("tools=echo,list_*&tools=add&exclude_tools=stop_*&readonly");
        assert_eq!(
            q.tools,
            Some(vec!["echo".into(), "list_*".into(), "add".into()])
        );
        assert_eq!(q.exclude_tools, ["stop_*"]);
        assert!(q.readonly);
        assert!(q.is_empty(), "filters select no toolset");
        let r = resolve(&q, DECLARED, None);
        assert!(r.unknown.is_empty(), "{:?}", r.unknown);
        assert_eq!(names(&r), ["core", "sandboxes", "spaces"]);
        assert_eq!(Query::parse("tools=").tools, Some(Vec::new()));
        assert_eq!(Query::parse("spaces").tools, None);
    }

    #[test]
    fn readonly_takes_the_spellings_of_a_bare_key() {
        for on in [
            "readonly",
            "readonly=true",
            "readonly=1",
            "readonly=yes",
            "readonly=on",
        ] {
            assert!(Query::parse(on).readonly, "{on}");
        }
        for off in [
            "readonly=false",
            "readonly=0",
            "readonly=off",
            "readonly=no",
            "",
        ] {
            assert!(!Query::parse(off).readonly, "{off}");
        }
    }

    #[test]
    fn a_filter_only_url_still_gets_the_default_selection_and_narrows_it() {
        let fallback = Query::parse("only=library&exclude_tools=ab");
        let r = resolve(&Query::parse("tools=a*"), DECLARED, Some(&fallback));
        assert_eq!(names(&r), ["core", "library"]);
        assert!(r.filter.allows("add", false));
        assert!(
            !r.filter.allows("ab", false),
            "the fallback's filter applies"
        );
        assert!(!r.filter.allows("echo", false), "the URL's filter applies");
        let r = resolve(&Query::parse("spaces&tools=a*"), DECLARED, Some(&fallback));
        assert!(
            r.filter.allows("ab", false),
            "no fallback, no fallback filter"
        );
    }

    #[test]
    fn the_toolsets_header_selects_as_only_does() {
        let headers = Headers {
            toolsets: Some("library, benchmarks"),
            ..Headers::default()
        };
        let r = request("", headers, &ToolFilter::default());
        assert_eq!(names(&r), ["benchmarks", "core", "library"]);
    }

    #[test]
    fn url_and_headers_narrow_each_other() {
        let headers = Headers {
            toolsets: Some("library,spaces,nope"),
            tools: Some("a*,b*"),
            ..Headers::default()
        };
        let r = request(
            "toolsets=library&without=spaces&tools=b*,c*",
            headers,
            &ToolFilter::default(),
        );
        assert_eq!(
            names(&r),
            ["core", "library"],
            "both select: the intersection"
        );
        assert_eq!(r.unknown, ["nope"]);
        assert!(r.filter.allows("b1", false));
        assert!(!r.filter.allows("a1", false), "the URL leaves it out");
        assert!(!r.filter.allows("c1", false), "the header leaves it out");
    }

    #[test]
    fn filter_headers_alone_keep_the_urls_toolsets() {
        let headers = Headers {
            exclude_tools: Some("stop_*"),
            readonly: Some("true"),
            ..Headers::default()
        };
        let r = request("benchmarks", headers, &ToolFilter::default());
        assert_eq!(names(&r), ["benchmarks", "core", "sandboxes", "spaces"]);
        assert!(r.filter.readonly);
        assert!(!r.filter.allows("stop_x", true));
        let off = Headers {
            readonly: Some("false"),
            ..Headers::default()
        };
        assert!(!request("", off, &ToolFilter::default()).filter.readonly);
    }

    #[test]
    fn url_and_headers_narrow_inside_the_bounds_never_widen_them() {
        let bounds = ToolFilter::new(Some(&["echo".into(), "add".into()]), &["add".into()], false);
        let widen = Headers {
            tools: Some("*"),
            readonly: Some("0"),
            ..Headers::default()
        };
        let r = request("tools=*,sleep", widen, &bounds);
        assert!(r.filter.allows("echo", false));
        assert!(!r.filter.allows("sleep", false));
        assert!(!r.filter.allows("add", false));
        let bounds = ToolFilter::new(None, &[], true);
        assert!(
            !request("readonly=false", Headers::default(), &bounds)
                .filter
                .allows("echo", false)
        );
    }

    #[test]
    fn header_names_are_in_from_values_order() {
        let h = Headers::from_values([Some("a"), Some("b"), Some("c"), Some("d")]);
        assert_eq!(
            (h.toolsets, h.tools, h.exclude_tools, h.readonly),
            (Some("a"), Some("b"), Some("c"), Some("d"))
        );
        assert_eq!(HEADER_NAMES[0], "x-mcp-toolsets");
        assert_eq!(HEADER_NAMES[3], "x-mcp-readonly");
    }
}
