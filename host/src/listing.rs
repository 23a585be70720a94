//! `reactor-mcp-server list`: what a plugin folder holds, from manifests alone.

use std::{fmt::Write, path::PathBuf};

use plugin_api::manifest::{Activation, ToolsetDecl};
use serde::Serialize;

use crate::discovery::{Discovery, SkipReason};

/// The listing of a plugin folder.
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    /// The folder.
    pub plugin_dir: PathBuf,
    /// Each plugin, in load order.
    pub plugins: Vec<PluginRow>,
    /// Each file skipped, with the reason.
    pub skipped: Vec<SkippedRow>,
    /// Names asked for with `--extension` that match no plugin.
    pub unmatched_extensions: Vec<String>,
}

/// One plugin in a [`Listing`].
#[derive(Debug, Clone, Serialize)]
pub struct PluginRow {
    /// Its library file.
    pub file: PathBuf,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What it is for.
    pub description: String,
    /// When it is opened.
    pub activation: Vec<String>,
    /// Its toolsets.
    pub toolsets: Vec<ToolsetDecl>,
    /// Its tools, in declaration order.
    pub tools: Vec<ToolRow>,
    /// Whether it builds more tools at run time.
    pub dynamic_tools: bool,
}

/// One tool in a [`PluginRow`].
#[derive(Debug, Clone, Serialize)]
pub struct ToolRow {
    /// Its name.
    pub name: String,
    /// Its title.
    pub title: Option<String>,
    /// Its toolset.
    pub toolset: String,
    /// The annotation hints that are set.
    pub annotations: Vec<String>,
    /// The first line of its description.
    pub summary: String,
}

/// One skipped file in a [`Listing`].
#[derive(Debug, Clone, Serialize)]
pub struct SkippedRow {
    /// The file.
    pub file: PathBuf,
    /// Why, in words.
    pub reason: String,
    /// Why, as data.
    pub detail: SkipReason,
}

impl Listing {
    /// The listing of what discovery found in `plugin_dir`.
    pub fn new(plugin_dir: PathBuf, discovery: &Discovery) -> Self {
        let plugins = discovery
            .plugins
            .iter()
            .map(|p| {
                let m = &p.manifest;
                PluginRow {
                    file: p.path.clone(),
                    name: m.name.clone(),
                    version: m.version.clone(),
                    description: m.description.clone(),
                    activation: activation_words(&m.activation),
                    toolsets: m.toolsets.clone(),
                    tools: m
                        .tools
                        .iter()
                        .map(|t| ToolRow {
                            name: t.name.clone(),
                            title: t.title.clone(),
                            toolset: t.toolset.clone(),
                            annotations: t.annotations.flags(),
                            summary: t.summary().to_owned(),
                        })
                        .collect(),
                    dynamic_tools: m.dynamic_tools,
                }
            })
            .collect();
        let skipped = discovery
            .skipped
            .iter()
            .map(|s| SkippedRow {
                file: s.path.clone(),
                reason: s.reason.to_string(),
                detail: s.reason.clone(),
            })
            .collect();
        Self {
            plugin_dir,
            plugins,
            skipped,
            unmatched_extensions: discovery.unmatched.clone(),
        }
    }

    /// The listing as text for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "plugin folder: {}", self.plugin_dir.display());
        if self.plugins.is_empty() {
            let _ = writeln!(out, "\nno plugins");
        }
        for p in &self.plugins {
            let _ = writeln!(out, "\n{} {}  ({})", p.name, p.version, p.file.display());
            if !p.description.is_empty() {
                let _ = writeln!(
                    out,
                    "  {}",
                    p.description.lines().next().unwrap_or_default()
                );
            }
            let _ = writeln!(out, "  activation: {}", p.activation.join(", "));
            for t in &p.toolsets {
                let mut flags = vec![if t.default { "default" } else { "not default" }];
                if t.always {
                    flags.push("always");
                }
                let _ = writeln!(
                    out,
                    "  toolset {} [{}]: {}",
                    t.name,
                    flags.join(", "),
                    t.description
                );
            }
            for t in &p.tools {
                let title = t
                    .title
                    .as_deref()
                    .map(|t| format!(" \"{t}\""))
                    .unwrap_or_default();
                let flags = if t.annotations.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", t.annotations.join(", "))
                };
                let _ = writeln!(
                    out,
                    "  tool {}{title} ({}){flags}: {}",
                    t.name, t.toolset, t.summary
                );
            }
            if p.dynamic_tools {
                let _ = writeln!(
                    out,
                    "  + tools built at run time (listed once the plugin is opened)"
                );
            }
        }
        for s in &self.skipped {
            let _ = writeln!(out, "\nskipped {}: {}", s.file.display(), s.reason);
        }
        for name in &self.unmatched_extensions {
            let _ = writeln!(
                out,
                "\nextension `{name}` was asked for and matches no plugin"
            );
        }
        out
    }
}

fn activation_words(events: &[Activation]) -> Vec<String> {
    if events.is_empty() {
        return vec!["when one of its toolsets is served".to_owned()];
    }
    events
        .iter()
        .map(|e| match e {
            Activation::OnStartup => "on start-up".to_owned(),
            Activation::OnToolset(t) => format!("when toolset `{t}` is served"),
        })
        .collect()
}
