//! A bridged server as a plugin manifest: what the registry, listings and selection read.
//!
//! One toolset named after the server (the entry's `toolset` keys), the tools of its last good
//! listing (from the disk cache, or none yet) under their served names, and `dynamic_tools`, so
//! the list read when the server is started is what is served. The listing's resources and
//! resource templates are declared under their own URIs (but for a server with skills, its
//! `skill://` resources: its skills' files are served under its name instead,
//! [`super::skills`]), its prompts under served names made
//! as tools' are, and, when the server completes, every prompt argument and template variable
//! as completed: the registry routes them to the server by these declarations.

use plugin_manifest::{
    Annotations, CompletionDecl, CompletionRef, Manifest, PromptArgumentDecl, PromptDecl,
    ResourceDecl, ResourceTemplateDecl, ToolDecl, uri_template::UriTemplate,
};
use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};

use super::{
    cache::{CachedListing, Listing},
    config::{ServerEntry, Transport},
    names::served_name,
    skills::served_uri,
};

/// The version bridged servers' manifests give.
pub(crate) const VERSION: &str = "mcp.json";

/// `server`'s manifest, with the tools of `cached` if there is a list.
pub(crate) fn manifest(server: &ServerEntry, cached: Option<&CachedListing>) -> Manifest {
    let reached = match &server.transport {
        Transport::Stdio { command, args, .. } => {
            format!(
                "`{}` (stdio)",
                std::iter::once(command)
                    .chain(args)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
        Transport::Http { url, .. } => format!("{url} (streamable HTTP)"),
    };
    let known = if cached.is_some() {
        "tools as it last listed them"
    } else {
        "tools not known yet (listed when it is first started)"
    };
    let empty = Listing::default();
    let listing = cached.map_or(&empty, |c| &c.listing);
    let templates: Vec<ResourceTemplateDecl> = listing
        .resource_templates
        .iter()
        .filter_map(|t| template_decl(server, t))
        .collect();
    let prompts: Vec<PromptDecl> = listing
        .prompts
        .iter()
        .map(|p| prompt_decl(server, p))
        .collect();
    let completions = if listing.completions {
        completions(&prompts, &templates)
    } else {
        Vec::new()
    };
    Manifest {
        abi: plugin_abi::VERSION.to_owned(),
        name: server.name.clone(),
        version: VERSION.to_owned(),
        description: format!("MCP server {reached}; {known}"),
        toolsets: vec![server.toolset.clone()],
        activation: Vec::new(),
        tools: listing.tools.iter().map(|t| tool_decl(server, t)).collect(),
        dynamic_tools: true,
        extends: Vec::new(),
        resources: listing
            .resources
            .iter()
            .filter(|r| listing.skills.is_empty() || served_uri(&server.name, &r.uri).is_none())
            .map(|r| resource_decl(server, r))
            .collect(),
        resource_templates: templates,
        prompts,
        completions,
        permissions: plugin_manifest::Permissions::default(),
    }
}

fn resource_decl(server: &ServerEntry, resource: &Resource) -> ResourceDecl {
    ResourceDecl {
        uri: resource.uri.clone(),
        name: resource.name.clone(),
        title: resource.title.clone(),
        description: resource.description.clone().unwrap_or_default(),
        mime_type: resource.mime_type.clone(),
        toolset: server.name.clone(),
        size: resource.size,
    }
}

/// A template the server lists; none, with a warning, for one whose URI template the host
/// cannot match URIs against.
fn template_decl(
    server: &ServerEntry,
    template: &ResourceTemplate,
) -> Option<ResourceTemplateDecl> {
    if let Err(e) = UriTemplate::parse(&template.uri_template) {
        tracing::warn!(
            "{}: resource template `{}` is not served: {e}",
            server.label(),
            crate::util::names::Shown(&template.uri_template)
        );
        return None;
    }
    Some(ResourceTemplateDecl {
        uri_template: template.uri_template.clone(),
        name: template.name.clone(),
        title: template.title.clone(),
        description: template.description.clone().unwrap_or_default(),
        mime_type: template.mime_type.clone(),
        toolset: server.name.clone(),
    })
}

/// `prompt` of `server` under its served name.
fn prompt_decl(server: &ServerEntry, prompt: &Prompt) -> PromptDecl {
    PromptDecl {
        name: served_name(&server.name, &prompt.name, server.namespace),
        title: prompt.title.clone(),
        description: prompt.description.clone().unwrap_or_default(),
        toolset: server.name.clone(),
        arguments: prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| PromptArgumentDecl {
                name: a.name.clone(),
                description: a.description.clone().unwrap_or_default(),
                required: a.required.unwrap_or(false),
            })
            .collect(),
    }
}

/// Every argument of `prompts` and every variable of `templates`, as completed.
fn completions(prompts: &[PromptDecl], templates: &[ResourceTemplateDecl]) -> Vec<CompletionDecl> {
    let arguments = prompts.iter().flat_map(|p| {
        p.arguments.iter().map(|a| CompletionDecl {
            reference: CompletionRef::Prompt {
                name: p.name.clone(),
            },
            argument: a.name.clone(),
        })
    });
    let variables = templates.iter().flat_map(|t| {
        UriTemplate::parse(&t.uri_template)
            .map(|parsed| {
                parsed
                    .variables()
                    .map(|v| CompletionDecl {
                        reference: CompletionRef::Resource {
                            uri: t.uri_template.clone(),
                        },
                        argument: v.to_owned(),
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    });
    arguments.chain(variables).collect()
}

/// How `tool` of `server` is served: its served name, in the server's toolset, with its
/// description (or one naming it), title, annotations, meta, input and output schemas as they
/// are.
pub(crate) fn tool_decl(server: &ServerEntry, tool: &Tool) -> ToolDecl {
    let hints = tool.annotations.as_ref();
    ToolDecl {
        input_first: false,
        name: served_name(&server.name, &tool.name, server.namespace),
        title: tool
            .title
            .clone()
            .or_else(|| hints.and_then(|a| a.title.clone())),
        description: tool.description.as_deref().map_or_else(
            || format!("Call {} on the {} MCP server.", tool.name, server.name),
            str::to_owned,
        ),
        toolset: server.name.clone(),
        annotations: Annotations {
            read_only: hints.and_then(|a| a.read_only_hint),
            destructive: hints.and_then(|a| a.destructive_hint),
            idempotent: hints.and_then(|a| a.idempotent_hint),
            open_world: hints.and_then(|a| a.open_world_hint),
        },
        meta: tool.meta.clone().map(|m| m.0),
        input_schema: Some((*tool.input_schema).clone()),
        output_schema: tool.output_schema.as_deref().cloned(),
        task: plugin_manifest::TaskSupport::Forbidden,
    }
}
