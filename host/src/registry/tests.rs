//! Unit tests of the registry: order, conflicts, extensions, owners.

use plugin_manifest::Manifest;

use super::*;

fn plugin(name: &str, toolsets: &str, tools: &str) -> DiscoveredPlugin {
    let json = format!(
        r#"{{"abi":"0.1.0","name":"{name}","version":"1","toolsets":{toolsets},"tools":{tools}}}"#
    );
    DiscoveredPlugin::library(format!("{name}.so"), Manifest::from_json(&json).unwrap())
}

#[test]
fn a_tool_offered_twice_is_served_from_the_first_plugin_and_listed() {
    let registry = Registry::new(vec![
        plugin(
            "a",
            r#"[{"name":"a"}]"#,
            r#"[{"name":"t","toolset":"a"},{"name":"u","toolset":"a"}]"#,
        ),
        plugin("b", r#"[{"name":"b"}]"#, r#"[{"name":"t","toolset":"b"}]"#),
    ]);
    assert_eq!(registry.conflicts().len(), 1);
    assert_eq!(registry.conflicts()[0].kept, "a");
    let both = ActiveSet::from_names(["a", "b"]);
    assert_eq!(
        keyed(registry.served_tools(&both)),
        [("t", "a"), ("u", "a")]
    );
    let only_b = ActiveSet::from_names(["b"]);
    assert_eq!(registry.served_tools(&only_b)[0].plugin, "b");
}

#[test]
fn only_conflicts_the_registry_before_did_not_have_are_warned_of() {
    let a = plugin("a", r#"[{"name":"a"}]"#, r#"[{"name":"t","toolset":"a"}]"#);
    let b = plugin("b", r#"[{"name":"b"}]"#, r#"[{"name":"t","toolset":"b"}]"#);
    let c = plugin("c", r#"[{"name":"c"}]"#, r#"[{"name":"t","toolset":"c"}]"#);
    let first = Registry::new(vec![a.clone(), b.clone()]);
    assert_eq!(first.warn_of_new_conflicts(None).len(), 1);
    let same = Registry::new(vec![a.clone(), b.clone()]);
    assert!(same.warn_of_new_conflicts(Some(&first)).is_empty());
    let more = Registry::new(vec![a, b, c]);
    let new = more.warn_of_new_conflicts(Some(&same));
    assert_eq!(
        new.iter().map(|c| c.shadowed.as_str()).collect::<Vec<_>>(),
        ["c"]
    );
}

/// Each entry's key (name, URI) and plugin.
fn keyed<D: Contribution>(entries: Vec<&Entry<D>>) -> Vec<(&str, &str)> {
    entries
        .into_iter()
        .map(|e| (e.decl.key(), e.plugin.as_str()))
        .collect()
}

/// A plugin `base` offering one tool, `t`.
fn base() -> DiscoveredPlugin {
    plugin(
        "base",
        r#"[{"name":"base"}]"#,
        r#"[{"name":"t","toolset":"base"}]"#,
    )
}

/// A plugin with no tools and these `extends`.
fn extending(name: &str, extends: &str) -> DiscoveredPlugin {
    let mut p = plugin(name, "[]", "[]");
    p.manifest.extends = serde_json::from_str(extends).unwrap();
    p
}

fn applied(registry: &Registry, tool: &str) -> Vec<(String, u32)> {
    registry
        .extensions_of(tool)
        .iter()
        .map(|e| (e.plugin.clone(), e.index))
        .collect()
}

#[test]
fn extensions_apply_by_order_then_plugin_name_then_declaration() {
    let plugins = vec![
        base(),
        extending(
            "zeta",
            r#"[{"tool":"t","order":5},{"tool":"other"},{"tool":"t","order":-1}]"#,
        ),
        extending(
            "alpha",
            r#"[{"tool":"t","order":5},{"tool":"t","order":5}]"#,
        ),
        extending("mid", r#"[{"tool":"t"}]"#),
    ];
    let expected = [
        ("zeta".to_owned(), 2),
        ("mid".to_owned(), 0),
        ("alpha".to_owned(), 0),
        ("alpha".to_owned(), 1),
        ("zeta".to_owned(), 0),
    ];
    assert_eq!(applied(&Registry::new(plugins.clone()), "t"), expected);
    // Load order (file names) does not change it.
    let mut reversed = plugins;
    reversed.reverse();
    assert_eq!(applied(&Registry::new(reversed), "t"), expected);
}

#[test]
fn an_extension_of_a_tool_nobody_declares_is_pending() {
    let registry = Registry::new(vec![
        base(),
        extending(
            "x",
            r#"[{"tool":"t","description":"d"},{"tool":"missing","wrap":true}]"#,
        ),
    ]);
    let pending: Vec<_> = registry
        .pending()
        .iter()
        .map(|e| (e.decl.tool.as_str(), e.index))
        .collect();
    assert_eq!(pending, [("missing", 1)]);
    let contributions = crate::reports::ContributionsReport::new(&registry);
    assert_eq!(
        serde_json::to_value(&contributions).unwrap(),
        serde_json::json!({
            "tools": [{"name": "t", "plugin": "base", "provider": "library", "file": "base.so",
                "toolset": "base", "description": "d", "extensions": [
                {"plugin": "x", "index": 0, "order": 0, "wrap": false, "changes": ["description"]}
            ]}],
            "pending": [
                {"tool": "missing", "plugin": "x", "index": 1, "order": 0, "wrap": true, "changes": ["wrap"]}
            ]
        })
    );
}

#[test]
fn a_tool_nobody_extends_has_no_extensions() {
    let registry = Registry::new(vec![base()]);
    assert!(registry.extensions_of("t").is_empty());
    assert_eq!(
        serde_json::to_value(crate::reports::ContributionsReport::new(&registry)).unwrap()["tools"]
            [0]["extensions"],
        serde_json::json!([])
    );
}

#[test]
fn on_toolset_events_open_a_plugin_for_that_toolset() {
    let mut p = plugin("x", r#"[{"name":"x","default":false}]"#, "[]");
    p.manifest
        .activation
        .push(plugin_manifest::Activation::OnToolset("other".into()));
    let registry = Registry::new(vec![p]);
    assert_eq!(
        registry
            .plugins_for(&ActiveSet::from_names(["other"]))
            .len(),
        1
    );
    assert_eq!(registry.plugins_for(&ActiveSet::from_names(["x"])).len(), 1);
    assert!(
        registry
            .plugins_for(&ActiveSet::from_names(["y"]))
            .is_empty()
    );
}

/// A plugin `name` with toolset `name` (off by default) holding these resources,
/// templates, prompts and completions (JSON lists, toolset filled in).
fn contributing(name: &str, resources: &str, templates: &str, prompts: &str) -> DiscoveredPlugin {
    let mut p = plugin(
        name,
        &format!(r#"[{{"name":"{name}","default":false}}]"#),
        "[]",
    );
    let with_toolset = |list: &str| -> serde_json::Value {
        let mut list: serde_json::Value = serde_json::from_str(list).unwrap();
        for item in list.as_array_mut().unwrap() {
            item["toolset"] = name.into();
        }
        list
    };
    let m = &mut p.manifest;
    m.resources = serde_json::from_value(with_toolset(resources)).unwrap();
    m.resource_templates = serde_json::from_value(with_toolset(templates)).unwrap();
    m.prompts = serde_json::from_value(with_toolset(prompts)).unwrap();
    p
}

#[test]
fn resources_templates_and_prompts_are_served_first_come_with_conflicts_listed() {
    let registry = Registry::new(vec![
        contributing(
            "a",
            r#"[{"uri": "test://x", "name": "x"}, {"uri": "test://a", "name": "a"}]"#,
            r#"[{"uri_template": "test://t/{id}", "name": "t"}]"#,
            r#"[{"name": "p"}]"#,
        ),
        contributing(
            "b",
            r#"[{"uri": "test://x", "name": "x from b"}]"#,
            r#"[{"uri_template": "test://t/{id}", "name": "t"}]"#,
            r#"[{"name": "p"}, {"name": "q"}]"#,
        ),
    ]);
    let kinds: Vec<(&str, &str, &str)> = registry
        .conflicts()
        .iter()
        .map(|c| (c.kind, c.name.as_str(), c.kept.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("resource", "test://x", "a"),
            ("resource template", "test://t/{id}", "a"),
            ("prompt", "p", "a")
        ]
    );
    let both = ActiveSet::from_names(["a", "b"]);
    assert_eq!(
        keyed(registry.served_resources(&both)),
        [("test://x", "a"), ("test://a", "a")]
    );
    assert_eq!(
        keyed(registry.served_prompts(&both)),
        [("p", "a"), ("q", "b")]
    );
    let only_b = ActiveSet::from_names(["b"]);
    assert_eq!(registry.served_resources(&only_b)[0].plugin, "b");
    assert_eq!(registry.served_resource_templates(&only_b)[0].plugin, "b");
    assert!(registry.served_prompts(&ActiveSet::default()).is_empty());
}

/// Plugin `a` with the resource `test://t/static` and the template `test://t/{id}`, plugin `b`
/// with the templates `b_templates`.
fn reads(b_templates: &str) -> Registry {
    Registry::new(vec![
        contributing(
            "a",
            r#"[{"uri": "test://t/static", "name": "s"}]"#,
            r#"[{"uri_template": "test://t/{id}", "name": "t"}]"#,
            "[]",
        ),
        contributing("b", "[]", b_templates, "[]"),
    ])
}

/// `plugin uri` or `plugin uri_template`.
fn described(owner: ResourceOwner<'_>) -> String {
    match owner {
        ResourceOwner::Resource(r) => format!("{} {}", r.plugin, r.decl.uri),
        ResourceOwner::Template(t) => format!("{} {}", t.plugin, t.decl.uri_template),
    }
}

#[test]
fn a_read_goes_to_the_resource_then_the_first_template_of_an_active_toolset() {
    let registry = reads(r#"[{"uri_template": "test://{+any}", "name": "u"}]"#);
    let owner = |active: &[&str], uri: &str| {
        let active = ActiveSet::from_names(active.iter().copied());
        registry
            .resource_owner(&active, uri, |_| true)
            .map(described)
    };
    assert_eq!(
        owner(&["a", "b"], "test://t/static").unwrap(),
        "a test://t/static"
    );
    assert_eq!(owner(&["a", "b"], "test://t/7").unwrap(), "a test://t/{id}");
    assert_eq!(
        owner(&["a", "b"], "test://t/7/x").unwrap(),
        "b test://{+any}"
    );
    assert_eq!(owner(&["b"], "test://t/static").unwrap(), "b test://{+any}");
    assert_eq!(owner(&["a"], "other://x"), None);
    assert_eq!(owner(&[], "test://t/static"), None);
}

#[test]
fn a_read_skips_what_is_not_shown_and_brings_back_nothing_it_shadowed() {
    let registry = reads(
        r#"[{"uri_template": "test://t/{id}", "name": "shadowed"},
            {"uri_template": "test://{+any}", "name": "u"}]"#,
    );
    let both = ActiveSet::from_names(["a", "b"]);
    let owner = |uri: &str, shown: &dyn Fn(&ResourceOwner<'_>) -> bool| {
        registry.resource_owner(&both, uri, shown).map(described)
    };
    let no_static = |o: &ResourceOwner<'_>| !matches!(o, ResourceOwner::Resource(_));
    assert_eq!(
        owner("test://t/static", &no_static).unwrap(),
        "a test://t/{id}"
    );
    let not_as_template =
        |o: &ResourceOwner<'_>| !matches!(o, ResourceOwner::Template(t) if t.plugin == "a");
    assert_eq!(
        owner("test://t/7", &not_as_template).unwrap(),
        "b test://{+any}"
    );
    assert_eq!(owner("test://t/7", &|_| false), None);
}

#[test]
fn a_completion_goes_to_the_plugin_of_its_prompt_if_it_completes_that_argument() {
    let mut a = contributing(
        "a",
        "[]",
        "[]",
        r#"[{"name": "p", "arguments": [{"name": "x"}]}]"#,
    );
    a.manifest.completions =
        serde_json::from_str(r#"[{"ref": {"type": "ref/prompt", "name": "p"}, "argument": "x"}]"#)
            .unwrap();
    let registry = Registry::new(vec![a]);
    let active = ActiveSet::from_names(["a"]);
    let prompt = CompletionRef::Prompt { name: "p".into() };
    assert_eq!(
        registry.completion_owner(&active, &prompt, "x"),
        CompletionOwner::Plugin("a")
    );
    assert_eq!(
        registry.completion_owner(&active, &prompt, "y"),
        CompletionOwner::Nobody
    );
    assert_eq!(
        registry.completion_owner(&ActiveSet::default(), &prompt, "x"),
        CompletionOwner::Unknown
    );
    let template = CompletionRef::Resource {
        uri: "test://{id}".into(),
    };
    assert_eq!(
        registry.completion_owner(&active, &template, "id"),
        CompletionOwner::Unknown
    );
}

#[test]
fn a_tool_table_does_not_open_a_plugin_with_only_resources_and_prompts_there() {
    let only_resources = contributing("r", r#"[{"uri": "test://r", "name": "r"}]"#, "[]", "[]");
    let mut asked_for = contributing("e", "[]", "[]", r#"[{"name": "p"}]"#);
    asked_for
        .manifest
        .activation
        .push(plugin_manifest::Activation::OnToolset("e".into()));
    let registry = Registry::new(vec![base(), only_resources, asked_for]);
    let active = ActiveSet::from_names(["base", "r", "e"]);
    assert_eq!(registry.plugins_for(&active).len(), 3);
    let opened: Vec<&str> = registry
        .tool_plugins_for(&active)
        .iter()
        .map(|p| p.manifest.name.as_str())
        .collect();
    assert_eq!(opened, ["base", "e"]);
}
