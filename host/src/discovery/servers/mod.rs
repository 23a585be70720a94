//! MCP servers declared in `mcp.json` files, as discovery sees them: each a plugin whose
//! manifest comes from its entry and its last good tool list, with nothing started.
//!
//! - [`config`] reads the files: which servers, how to reach them, and our keys for each.
//! - [`cache`] keeps each server's last good tool list on disk.
//! - [`pins`] and [`pinning`] pin each server's tool definitions beside it, and hold a tool
//!   that changed to its pin (`--pin-tools`).
//! - [`manifest`] makes the manifest of an entry and its cached list.
//! - [`names`] gives the names their tools are served under; [`skills`] the URIs their skills
//!   are served under.
//!
//! [`add_servers`] puts the servers after the libraries; starting and talking to them is the
//! bridged provider's (`crate::providers::bridged`).

pub(crate) mod cache;
pub(crate) mod config;
pub(crate) mod expand;
pub(crate) mod manifest;
pub(crate) mod names;
pub(crate) mod pinning;
pub(crate) mod pins;
pub(crate) mod skills;

use std::sync::Arc;

use cache::ToolCache;
use config::ServerConfig;

use crate::discovery::{DiscoveredPlugin, Discovery, Provider, SkipReason, Skipped};

/// Adds the servers of `config` to `discovery` after its libraries, each with its cached
/// tools (but those its pins hold back), and its skipped files and entries to the skipped ones
/// (warned about by [`crate::discovery::warn_skipped`]). A server whose name a plugin
/// or a plugin's toolset already has is skipped; with `only`, a server not named there is left
/// out as libraries are.
pub(crate) fn add_servers(
    discovery: &mut Discovery,
    config: ServerConfig,
    cache: &ToolCache,
    only: Option<&[String]>,
) {
    let skip = |file, server, reason| Skipped {
        path: file,
        reason: SkipReason::BadServer { server, reason },
    };
    let mut skipped: Vec<Skipped> = config
        .skipped
        .into_iter()
        .map(|s| skip(s.file, s.server, s.reason))
        .collect();
    for server in config.servers {
        if only.is_some_and(|only| !only.contains(&server.name)) {
            skipped.push(Skipped {
                path: server.file,
                reason: SkipReason::NotSelected,
            });
            continue;
        }
        discovery.unmatched.retain(|n| *n != server.name);
        if let Some(reason) = clash(&discovery.plugins, &server.name) {
            skipped.push(skip(server.file, Some(server.name), reason));
            continue;
        }
        let cached = cache.read(&server).map(|mut cached| {
            cached.listing = cache.reviewed(&server, &cached.listing, false);
            cached
        });
        let manifest = manifest::manifest(&server, cached.as_ref());
        discovery.plugins.push(DiscoveredPlugin {
            path: server.file.clone(),
            manifest,
            provider: Provider::Bridged {
                server: Arc::new(server),
                cache: cache.clone(),
            },
            stamp: None,
            checked: None,
        });
    }
    discovery.skipped.extend(skipped);
}

/// Why a server called `name` cannot be served beside `plugins`, if it cannot.
fn clash(plugins: &[DiscoveredPlugin], name: &str) -> Option<String> {
    plugins.iter().find_map(|p| {
        if p.manifest.name == name {
            Some(format!(
                "the name is already taken by plugin `{name}` ({})",
                p.path.display()
            ))
        } else if p.manifest.toolset(name).is_some() {
            Some(format!(
                "toolset `{name}` is already declared by plugin `{}` ({})",
                p.manifest.name,
                p.path.display()
            ))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use plugin_manifest::Manifest;

    use super::*;

    fn library(name: &str, toolset: &str) -> DiscoveredPlugin {
        let json = format!(
            r#"{{"abi":"0.1.0","name":"{name}","version":"1","toolsets":[{{"name":"{toolset}"}}]}}"#
        );
        DiscoveredPlugin::library(format!("lib{name}.so"), Manifest::from_json(&json).unwrap())
    }

    fn add(names: &[&str], only: Option<&[String]>) -> Discovery {
        let mut discovery = Discovery {
            plugins: vec![library("lib", "tools")],
            unmatched: only.map(<[String]>::to_vec).unwrap_or_default(),
            ..Discovery::default()
        };
        let config = ServerConfig {
            servers: names
                .iter()
                .map(|n| cache::tests::server(n, "http://h/mcp"))
                .collect(),
            skipped: Vec::new(),
        };
        add_servers(&mut discovery, config, &ToolCache::new(None), only);
        discovery
    }

    #[test]
    fn servers_follow_the_libraries_with_no_tools_known() {
        let discovery = add(&["search"], None);
        let server = &discovery.plugins[1];
        assert_eq!(server.manifest.name, "search");
        assert_eq!(server.manifest.toolsets[0].name, "search");
        assert!(server.manifest.dynamic_tools);
        assert!(
            server
                .manifest
                .description
                .ends_with("tools not known yet (listed when it is first started)")
        );
        assert!(matches!(server.provider, Provider::Bridged { .. }));
    }

    #[test]
    fn a_server_named_like_a_plugin_or_its_toolset_is_skipped() {
        let discovery = add(&["lib", "tools"], None);
        assert_eq!(discovery.plugins.len(), 1);
        let messages: Vec<String> = discovery.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "mcp.json: server `lib`: the name is already taken by plugin `lib` (liblib.so)",
                "mcp.json: server `tools`: toolset `tools` is already declared by plugin `lib` (liblib.so)",
            ]
        );
    }

    #[test]
    fn narrowing_to_names_covers_servers() {
        let discovery = add(&["a", "b"], Some(&["a".to_owned(), "lib".to_owned()]));
        let names: Vec<&str> = discovery
            .plugins
            .iter()
            .map(|p| p.manifest.name.as_str())
            .collect();
        assert_eq!(names, ["lib", "a"]);
        assert_eq!(discovery.skipped[0].reason, SkipReason::NotSelected);
        assert_eq!(discovery.unmatched, ["lib"]);
    }
}
