//! The permissions a plugin declares and, when it runs sandboxed (`--sandbox`), what of them
//! is enforced, not enforced and not granted: one row per plugin, part of `list` and of
//! `/toolsets`.

use plugin_manifest::{PermissionKind, Permissions};
use serde::Serialize;

use crate::discovery::{DiscoveredPlugin, Provider, servers::config::Sandboxing};

/// A plugin's permissions, and its sandbox if it runs in one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PermissionsRow {
    /// The plugin.
    pub(crate) plugin: String,
    /// What its manifest declares.
    pub(crate) declared: Permissions,
    /// Whether it runs sandboxed.
    pub(crate) sandboxed: bool,
    /// What its sandbox enforces, does not enforce and does not grant.
    #[serde(flatten)]
    pub(crate) sandbox: Option<Sandboxing>,
}

impl PermissionsRow {
    /// The row of `plugin`, if it declares permissions or runs sandboxed.
    pub(crate) fn of(plugin: &DiscoveredPlugin) -> Option<Self> {
        let sandbox = match &plugin.provider {
            Provider::Isolated { server } => server.sandbox.clone(),
            Provider::Library | Provider::Bridged { .. } => None,
        };
        let declared = &plugin.manifest.permissions;
        (sandbox.is_some() || !declared.is_empty()).then(|| Self {
            plugin: plugin.manifest.name.clone(),
            declared: declared.clone(),
            sandboxed: sandbox.is_some(),
            sandbox,
        })
    }

    /// The rows of `plugins` that have one, in their order.
    pub(crate) fn all<'a>(plugins: impl IntoIterator<Item = &'a DiscoveredPlugin>) -> Vec<Self> {
        plugins.into_iter().filter_map(Self::of).collect()
    }

    /// The row as lines of a text listing, indented under its plugin.
    pub(crate) fn lines(&self) -> Vec<String> {
        let declared: Vec<String> = PermissionKind::ALL
            .into_iter()
            .filter(|k| !self.declared.entries(*k).is_empty())
            .map(|k| format!("{} {}", k.name(), self.declared.entries(k).join(", ")))
            .collect();
        let mut lines = vec![format!(
            "  permissions: {}",
            if declared.is_empty() {
                "none".to_owned()
            } else {
                declared.join("; ")
            }
        )];
        match &self.sandbox {
            None => lines.push("  not sandboxed: nothing of them is enforced".to_owned()),
            Some(sandbox) => {
                lines.push("  sandboxed:".to_owned());
                for (what, entries) in [
                    ("enforced", &sandbox.enforced),
                    ("NOT enforced", &sandbox.not_enforced),
                    ("not granted", &sandbox.not_granted),
                ] {
                    lines.extend(entries.iter().map(|line| format!("    {what}: {line}")));
                }
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Manifest;

    use super::*;

    fn plugin(permissions: &str) -> DiscoveredPlugin {
        let json =
            format!(r#"{{"abi":"0.1.0","name":"p","version":"1","permissions":{permissions}}}"#);
        DiscoveredPlugin::library("libp.so", Manifest::from_json(&json).unwrap())
    }

    #[test]
    fn a_plugin_that_declares_nothing_and_is_not_sandboxed_has_no_row() {
        assert_eq!(PermissionsRow::of(&plugin("{}")), None);
    }

    #[test]
    fn declared_permissions_are_shown_and_said_to_be_unenforced_out_of_a_sandbox() {
        let row = PermissionsRow::of(&plugin(r#"{"read":["/a","/b"],"env":["X"]}"#)).unwrap();
        assert_eq!(
            serde_json::to_value(&row).unwrap(),
            serde_json::json!({"plugin": "p", "declared": {"read": ["/a", "/b"], "env": ["X"]},
                               "sandboxed": false})
        );
        assert_eq!(
            row.lines(),
            [
                "  permissions: read /a, /b; env X",
                "  not sandboxed: nothing of them is enforced"
            ]
        );
        let sandboxed = PermissionsRow {
            sandboxed: true,
            sandbox: Some(Sandboxing {
                env: vec!["X".to_owned()],
                enforced: vec!["files".to_owned()],
                not_enforced: vec!["UDP".to_owned()],
                not_granted: Vec::new(),
            }),
            ..row
        };
        assert_eq!(
            serde_json::to_value(&sandboxed).unwrap()["not_enforced"],
            serde_json::json!(["UDP"])
        );
        assert_eq!(
            sandboxed.lines()[1..],
            [
                "  sandboxed:",
                "    enforced: files",
                "    NOT enforced: UDP"
            ]
        );
    }
}
