//! `reactor-mcp-server list`: what a plugin folder holds, from manifests alone.
//!
//! Besides each plugin's toolsets, tools, resources, resource templates, prompts,
//! completions and permissions (with what its sandbox enforces, when it runs in one), it shows
//! the extensions: under each tool, those
//! applied to it in the order they apply ([`crate::registry::Extensions`]); under each plugin,
//! the tools it extends; and, at the end, the pending ones (extensions of a tool no plugin
//! here declares).

use std::{fmt::Write, path::PathBuf};

use plugin_manifest::{
    Activation, CompletionDecl, Manifest, PromptDecl, ResourceDecl, ResourceTemplateDecl,
    ToolsetDecl,
};
use serde::Serialize;

use super::permissions::PermissionsRow;
use crate::{
    discovery::{Discovery, SkipReason, Skipped},
    registry::{ExtensionSummary, Extensions, TargetedExtension},
};

/// The listing of a plugin folder.
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    /// The folder.
    pub(crate) plugin_dir: PathBuf,
    /// Each plugin, in load order.
    pub(crate) plugins: Vec<PluginRow>,
    /// Each file skipped, with the reason.
    pub(crate) skipped: Vec<SkippedRow>,
    /// Names asked for with `--extension` that match no plugin.
    pub(crate) unmatched_extensions: Vec<String>,
    /// Extensions of tools no plugin here declares: stored, never applied.
    pub(crate) pending: Vec<TargetedExtension>,
}

/// One plugin in a [`Listing`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PluginRow {
    /// Its library file.
    pub(crate) file: PathBuf,
    /// Its name.
    pub(crate) name: String,
    /// Its version.
    pub(crate) version: String,
    /// What it is for.
    pub(crate) description: String,
    /// When it is opened.
    pub(crate) activation: Vec<String>,
    /// Its toolsets.
    pub(crate) toolsets: Vec<ToolsetDecl>,
    /// Its tools, in declaration order.
    pub(crate) tools: Vec<ToolRow>,
    /// Whether it builds more tools at run time.
    pub(crate) dynamic_tools: bool,
    /// The tools it extends, in declaration order.
    pub(crate) extends: Vec<ExtendsRow>,
    /// Its resources, in declaration order.
    pub(crate) resources: Vec<ResourceDecl>,
    /// Its resource templates, in declaration order.
    pub(crate) resource_templates: Vec<ResourceTemplateDecl>,
    /// Its prompts, in declaration order.
    pub(crate) prompts: Vec<PromptDecl>,
    /// The prompt arguments and template variables it completes, in declaration order.
    pub(crate) completions: Vec<CompletionDecl>,
    /// What it declares it needs of the system and, sandboxed, what is enforced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) permissions: Option<PermissionsRow>,
    /// Its skills (`skills/<plugin>/<skill>/SKILL.md` beside the library), by URI.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) skills: Vec<SkillRow>,
}

/// One skill of a plugin, in a [`PluginRow`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SkillRow {
    /// The URI of its `SKILL.md`.
    pub(crate) uri: String,
    /// Its frontmatter's name.
    pub(crate) name: String,
    /// Its frontmatter's description.
    pub(crate) description: String,
}

/// One extension a plugin declares, in a [`PluginRow`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ExtendsRow {
    /// The extension and the tool it extends.
    #[serde(flatten)]
    pub(crate) extension: TargetedExtension,
    /// Whether no plugin here declares that tool.
    pub(crate) pending: bool,
}

/// One tool in a [`PluginRow`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ToolRow {
    /// Its name.
    pub(crate) name: String,
    /// Its title.
    pub(crate) title: Option<String>,
    /// Its toolset.
    pub(crate) toolset: String,
    /// The annotation hints that are set.
    pub(crate) annotations: Vec<String>,
    /// The first line of its description.
    pub(crate) summary: String,
    /// The extensions applied to it, in the order they apply: the last is the outermost.
    pub(crate) extensions: Vec<ExtensionSummary>,
}

/// One skipped file in a [`Listing`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SkippedRow {
    /// The file.
    pub(crate) file: PathBuf,
    /// Why, in words.
    pub(crate) reason: String,
    /// Why, as data.
    pub(crate) detail: SkipReason,
}

impl SkippedRow {
    /// The `skipped` files, each with why.
    pub(crate) fn all(skipped: &[Skipped]) -> Vec<Self> {
        skipped
            .iter()
            .map(|s| Self {
                file: s.path.clone(),
                reason: s.reason.to_string(),
                detail: s.reason.clone(),
            })
            .collect()
    }
}

impl Listing {
    /// The listing of what discovery found in `plugin_dir`.
    pub fn new(plugin_dir: PathBuf, discovery: &Discovery) -> Self {
        let extensions = Extensions::new(&discovery.plugins);
        let pending = extensions.pending();
        let skills = crate::discovery::skills::PluginSkills::discover(&discovery.plugins);
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
                    activation: activation_words(m),
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
                            extensions: extensions
                                .of(&t.name)
                                .into_iter()
                                .map(|e| e.summary())
                                .collect(),
                        })
                        .collect(),
                    dynamic_tools: m.dynamic_tools,
                    extends: {
                        let mut own: Vec<_> = extensions
                            .all()
                            .iter()
                            .filter(|e| e.plugin == m.name)
                            .collect();
                        own.sort_by_key(|e| e.index);
                        own.into_iter()
                            .map(|e| ExtendsRow {
                                extension: e.into(),
                                pending: pending.contains(&e),
                            })
                            .collect()
                    },
                    resources: m.resources.clone(),
                    resource_templates: m.resource_templates.clone(),
                    prompts: m.prompts.clone(),
                    completions: m.completions.clone(),
                    permissions: PermissionsRow::of(p),
                    skills: skills
                        .skills(
                            |plugin| plugin == m.name,
                            &crate::discovery::skills::cached_only,
                        )
                        .into_iter()
                        .map(|s| SkillRow {
                            uri: s.uri,
                            name: s.frontmatter.name,
                            description: s.frontmatter.description,
                        })
                        .collect(),
                }
            })
            .collect();
        let skipped = SkippedRow::all(&discovery.skipped);
        Self {
            plugin_dir,
            plugins,
            skipped,
            unmatched_extensions: discovery.unmatched.clone(),
            pending: pending.into_iter().map(TargetedExtension::from).collect(),
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
                let line = Line {
                    kind: "tool",
                    name: &t.name,
                    title: t.title.as_deref(),
                    toolset: &t.toolset,
                    flags: &t.annotations.join(", "),
                    description: &t.summary,
                };
                let _ = writeln!(out, "{line}");
                for e in &t.extensions {
                    let _ = writeln!(out, "    extended by {}", describe(&e.plugin, e));
                }
            }
            for skill in &p.skills {
                let _ = writeln!(out, "  skill {}: {}", skill.uri, skill.description);
            }
            for r in &p.resources {
                let line = Line {
                    kind: "resource",
                    name: &r.uri,
                    title: r.title.as_deref(),
                    toolset: &r.toolset,
                    flags: r.mime_type.as_deref().unwrap_or_default(),
                    description: &r.description,
                };
                let _ = writeln!(out, "{line}");
            }
            for t in &p.resource_templates {
                let line = Line {
                    kind: "resource template",
                    name: &t.uri_template,
                    title: t.title.as_deref(),
                    toolset: &t.toolset,
                    flags: t.mime_type.as_deref().unwrap_or_default(),
                    description: &t.description,
                };
                let _ = writeln!(out, "{line}");
            }
            for prompt in &p.prompts {
                let arguments: Vec<String> = prompt
                    .arguments
                    .iter()
                    .map(|a| format!("{}{}", a.name, if a.required { "" } else { "?" }))
                    .collect();
                let line = Line {
                    kind: "prompt",
                    name: &format!("{}({})", prompt.name, arguments.join(", ")),
                    title: prompt.title.as_deref(),
                    toolset: &prompt.toolset,
                    flags: "",
                    description: &prompt.description,
                };
                let _ = writeln!(out, "{line}");
            }
            for c in &p.completions {
                let _ = writeln!(out, "  completes {} argument `{}`", c.reference, c.argument);
            }
            for line in p.permissions.iter().flat_map(PermissionsRow::lines) {
                let _ = writeln!(out, "{line}");
            }
            for e in &p.extends {
                let pending = if e.pending {
                    "  [pending: no plugin here offers it]"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "  extends {}{pending}",
                    describe(&e.extension.tool, &e.extension.extension)
                );
            }
            if p.dynamic_tools && p.version == crate::discovery::servers::manifest::VERSION {
                let _ = writeln!(
                    out,
                    "  + the tools the server lists when it starts (any above are from its last \
                     listing)"
                );
            } else if p.dynamic_tools {
                let _ = writeln!(
                    out,
                    "  + tools built at run time (listed once the plugin is opened)"
                );
            }
        }
        if !self.pending.is_empty() {
            let _ = writeln!(
                out,
                "\npending extensions (of tools no plugin here offers; stored, never applied):"
            );
            for e in &self.pending {
                let _ = writeln!(
                    out,
                    "  {} <- {}",
                    e.tool,
                    describe(&e.extension.plugin, &e.extension)
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

/// One contribution in a text listing: `  KIND NAME "TITLE" (TOOLSET) [FLAGS]: SUMMARY`, the
/// title and flags left out when empty, the summary the first line of the description.
struct Line<'a> {
    kind: &'a str,
    name: &'a str,
    title: Option<&'a str>,
    toolset: &'a str,
    flags: &'a str,
    description: &'a str,
}

impl std::fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "  {} {}", self.kind, self.name)?;
        if let Some(title) = self.title {
            write!(f, " \"{title}\"")?;
        }
        write!(f, " ({})", self.toolset)?;
        if !self.flags.is_empty() {
            write!(f, " [{}]", self.flags)?;
        }
        let summary = self.description.lines().next().unwrap_or("").trim();
        write!(f, ": {summary}")
    }
}

/// `NAME (order N): wrap, description, ...`, for one extension in a text listing.
fn describe(name: &str, extension: &ExtensionSummary) -> String {
    format!(
        "{name} (order {}): {}",
        extension.order,
        extension.changes.join(", ")
    )
}

fn activation_words(manifest: &Manifest) -> Vec<String> {
    let events = &manifest.activation;
    if events.is_empty() {
        let wraps = manifest.extends.iter().any(|e| e.wrap);
        return vec![
            match (manifest.toolsets.is_empty(), wraps) {
                (false, false) => "when one of its toolsets is served",
                (false, true) => "when one of its toolsets, or a tool it wraps, is served",
                (true, true) => "when a tool it wraps is served",
                (true, false) => "never: its extensions need no code",
            }
            .to_owned(),
        ];
    }
    events
        .iter()
        .map(|e| match e {
            Activation::OnStartup => "on start-up".to_owned(),
            Activation::OnToolset(t) => format!("when toolset `{t}` is served"),
        })
        .collect()
}
