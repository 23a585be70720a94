//! Property tests of selection: any query string parses without panicking, and whatever it
//! asks, the active set holds only declared toolsets, always every always-on one (`without`
//! cannot remove it), never a toolset the query turned off, and every name the query used that
//! no plugin declares is reported as unknown.

use std::collections::BTreeMap;

use proptest::{collection::vec, option, prelude::*};

use super::*;

/// Names queries and declarations draw from, so that they meet often.
fn name() -> impl Strategy<Value = String> {
    "[a-e]{1,2}"
}

/// Declared toolsets with distinct names.
fn declared() -> impl Strategy<Value = Vec<(String, bool, bool)>> {
    vec((name(), any::<bool>(), any::<bool>()), 0..6).prop_map(|toolsets| {
        let unique: BTreeMap<String, (bool, bool)> = toolsets
            .into_iter()
            .map(|(name, default, always)| (name, (default, always)))
            .collect();
        unique
            .into_iter()
            .map(|(name, (default, always))| (name, default, always))
            .collect()
    })
}

fn as_declared(toolsets: &[(String, bool, bool)]) -> Vec<Declared<'_>> {
    toolsets
        .iter()
        .map(|(name, default, always)| Declared {
            name,
            default: *default,
            always: *always,
        })
        .collect()
}

/// One `key=value` pair (or a bare key) as a URL may write it.
fn pair() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("toolsets".to_owned()),
        Just("only".to_owned()),
        Just("without".to_owned()),
        Just("tools".to_owned()),
        Just("exclude_tools".to_owned()),
        Just("readonly".to_owned()),
        name(),
        "[a-e%+ ,=]{0,4}",
    ];
    let value = prop_oneof![
        vec(name(), 0..3).prop_map(|names| names.join(",")),
        vec(name(), 0..3).prop_map(|names| names.join("+")),
        Just("false".to_owned()),
        Just("OFF".to_owned()),
        Just("0".to_owned()),
        Just("no".to_owned()),
        Just("true".to_owned()),
        "[a-e%+ ,=0-9]{0,6}",
    ];
    (key, option::of(value)).prop_map(|(key, value)| match value {
        Some(value) => format!("{key}={value}"),
        None => key,
    })
}

/// A query string: pairs joined by `&`, or any text at all.
fn query() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => vec(pair(), 0..5).prop_map(|pairs| pairs.join("&")),
        1 => any::<String>(),
    ]
}

proptest! {
    #[test]
    fn any_query_string_parses(query in any::<String>()) {
        let _ = Query::parse(&query);
    }

    #[test]
    fn the_active_set_keeps_to_what_is_declared_and_asked(
        toolsets in declared(),
        query in query(),
        fallback in option::of(query()),
    ) {
        let declared = as_declared(&toolsets);
        let asked = Query::parse(&query);
        let fallback = fallback.map(|f| Query::parse(&f));
        let resolution = resolve(&asked, &declared, fallback.as_ref());
        let used = match &fallback {
            Some(fallback) if asked.is_empty() => fallback,
            _ => &asked,
        };
        let known = |name: &str| declared.iter().any(|d| d.name == name);

        for name in resolution.active.iter() {
            prop_assert!(known(name), "{name} is active but not declared");
        }
        for toolset in declared.iter().filter(|d| d.always) {
            prop_assert!(resolution.active.contains(toolset.name), "always-on {} is off", toolset.name);
        }
        for name in &used.without {
            let always = declared.iter().any(|d| d.name == name && d.always);
            prop_assert!(always || !resolution.active.contains(name), "{name} was turned off");
        }
        if let Some(only) = &used.only {
            for name in resolution.active.iter() {
                let always = declared.iter().any(|d| d.name == name && d.always);
                prop_assert!(always || only.contains(name), "{name} is active beyond `only`");
            }
        } else {
            let asked_for = declared
                .iter()
                .filter(|d| d.default)
                .map(|d| d.name.to_owned())
                .chain(used.bare.iter().chain(&used.toolsets).filter(|n| known(n)).cloned());
            for name in asked_for.filter(|n| !used.without.contains(n)) {
                prop_assert!(resolution.active.contains(&name), "{name} was asked for");
            }
        }

        let names = used
            .bare
            .iter()
            .chain(&used.toolsets)
            .chain(used.only.iter().flatten())
            .chain(&used.without);
        for name in names {
            prop_assert!(known(name) || resolution.unknown.contains(name), "{name} is not reported");
        }
        for name in &resolution.unknown {
            prop_assert!(!known(name), "{name} is declared but reported unknown");
        }
        prop_assert!(resolution.unknown.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_fallback_applies_exactly_when_the_query_selects_nothing(
        toolsets in declared(),
        query in query(),
        fallback in query(),
    ) {
        let declared = as_declared(&toolsets);
        let asked = Query::parse(&query);
        let fallback = Query::parse(&fallback);
        let expected = if asked.is_empty() {
            let mut by_fallback = resolve(&fallback, &declared, None);
            by_fallback.filter = asked.filter().narrow(by_fallback.filter);
            by_fallback
        } else {
            resolve(&asked, &declared, None)
        };
        prop_assert_eq!(resolve(&asked, &declared, Some(&fallback)), expected);
    }

    #[test]
    fn a_request_never_shows_a_tool_its_bounds_url_or_headers_hide(
        toolsets in declared(),
        query in query(),
        headers in query(),
        bounds in query(),
        tool in name(),
        read_only in any::<bool>(),
    ) {
        let declared = as_declared(&toolsets);
        let (url, headers, bounds) =
            (Query::parse(&query), Query::parse(&headers), Query::parse(&bounds).filter());
        let resolution = resolve_request(&url, &headers, &declared, None, &bounds);
        let shown = resolution.filter.allows(&tool, read_only);
        prop_assert_eq!(
            shown,
            bounds.allows(&tool, read_only)
                && url.filter().allows(&tool, read_only)
                && headers.filter().allows(&tool, read_only)
        );
        let by_url = resolve(&url, &declared, None).active;
        for name in resolution.active.iter() {
            prop_assert!(url.is_empty() || by_url.contains(name), "{name} is beyond the URL");
        }
    }
}
