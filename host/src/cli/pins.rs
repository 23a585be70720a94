//! `pins accept` and `pins list`: the operator's side of the pinned tool definitions of bridged
//! servers (`--pin-tools`). Both read the servers from the `mcp.json` files and the listings and
//! pins from the cache folder, with the same flags as `serve`; neither starts a server.

use std::sync::Arc;

use clap::Subcommand;
use serde::Serialize;

use super::args::Common;
use crate::discovery::{
    Provider,
    servers::{
        cache::ToolCache,
        config::ServerEntry,
        pinning::PinError,
        pins::{ChangeKind, ToolChange},
    },
};
use crate::util::names::Shown;

/// `pins accept` and `pins list`.
#[derive(Debug, Subcommand)]
pub(crate) enum PinsCommand {
    /// Pin a bridged server's tools as it last listed them (its cached listing), accepting
    /// their changes; a running server serves them again within a second.
    Accept {
        /// The server, as its `mcp.json` entry names it.
        server: String,
        /// Accept only this tool (its own or its served name).
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
    },
    /// List the bridged servers, how many of their tools are pinned, and the changes of their
    /// cached listings not accepted yet.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Why a `pins` command failed.
#[derive(Debug, thiserror::Error)]
enum PinsError {
    /// No `mcp.json` declares the server.
    #[error("no bridged server `{server}` is declared; the mcp.json files declare: {known}")]
    UnknownServer {
        /// The name asked for.
        server: String,
        /// The servers declared, comma-separated (or "none").
        known: String,
    },
    /// The pins could not be read or written.
    #[error(transparent)]
    Pin(#[from] PinError),
}

/// One server in `pins list --json`.
#[derive(Debug, Serialize)]
struct ServerPins {
    server: String,
    /// The pin file, when there is a cache folder.
    file: Option<String>,
    /// How many tools are pinned (0 when it has no pins yet).
    pinned: usize,
    /// When a pin was last recorded or accepted (RFC 3339), if ever.
    pinned_at: Option<String>,
    /// The changes of its cached listing from its pins.
    changes: Vec<ChangeRow>,
}

/// One change in `pins list --json`.
#[derive(Debug, Serialize)]
struct ChangeRow {
    tool: String,
    change: ChangeKind,
    fields: Vec<&'static str>,
    what: String,
}

impl From<&ToolChange> for ChangeRow {
    fn from(change: &ToolChange) -> Self {
        Self {
            tool: change.tool.clone(),
            change: change.kind,
            fields: change.fields.iter().map(|f| f.field).collect(),
            what: change.summary(),
        }
    }
}

/// Runs `command` on the servers and cache folder `common` names.
pub(crate) fn run(common: &Common, command: PinsCommand) -> anyhow::Result<()> {
    let servers = bridged(common)?;
    match command {
        PinsCommand::Accept { server, tool } => {
            let Some((entry, cache)) = servers.iter().find(|(s, _)| s.name == server) else {
                return Err(PinsError::UnknownServer {
                    server,
                    known: known(&servers),
                }
                .into());
            };
            let accepted = cache
                .accept(entry, tool.as_deref())
                .map_err(PinsError::from)?;
            if accepted.is_empty() {
                eprintln!("{}: its tools were pinned as listed already", entry.label());
            }
            for change in &accepted {
                eprintln!(
                    "{}: accepted tool `{}`: {}",
                    entry.label(),
                    Shown(&change.tool),
                    Shown(&change.summary())
                );
            }
            Ok(())
        }
        PinsCommand::List { json } => {
            let rows = servers
                .iter()
                .map(|(entry, cache)| row(entry, cache))
                .collect::<Result<Vec<_>, _>>()
                .map_err(PinsError::from)?;
            let text = if json {
                serde_json::to_string_pretty(&rows)?
            } else {
                to_text(&rows)
            };
            #[allow(clippy::print_stdout)]
            {
                println!("{text}");
            }
            Ok(())
        }
    }
}

/// The bridged servers `common`'s sources declare, each with its cache.
fn bridged(common: &Common) -> anyhow::Result<Vec<(Arc<ServerEntry>, ToolCache)>> {
    let discovery = common.sources().discover()?;
    Ok(discovery
        .plugins
        .into_iter()
        .filter_map(|p| match p.provider {
            Provider::Bridged { server, cache } => Some((server, cache)),
            Provider::Library | Provider::Isolated { .. } => None,
        })
        .collect())
}

/// The names of `servers`, comma-separated, or "none".
fn known(servers: &[(Arc<ServerEntry>, ToolCache)]) -> String {
    if servers.is_empty() {
        return "none".to_owned();
    }
    servers
        .iter()
        .map(|(s, _)| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `pins list` says of `server`.
fn row(server: &ServerEntry, cache: &ToolCache) -> Result<ServerPins, PinError> {
    let (pinned, changes) = cache.pin_status(server)?;
    Ok(ServerPins {
        server: server.name.clone(),
        file: cache.pins_file(server).map(|f| f.display().to_string()),
        pinned: pinned.as_ref().map_or(0, |p| p.tools.len()),
        pinned_at: pinned.as_ref().map(|p| {
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(p.pinned_at);
            chrono::DateTime::<chrono::Utc>::from(at)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        }),
        changes: changes.iter().map(ChangeRow::from).collect(),
    })
}

/// `rows` as text: a line per server, then a line per change.
fn to_text(rows: &[ServerPins]) -> String {
    if rows.is_empty() {
        return "no bridged servers".to_owned();
    }
    let mut lines = Vec::new();
    for row in rows {
        let state = match &row.pinned_at {
            None => "not pinned yet (pinned when first listed)".to_owned(),
            Some(at) => format!("{} tools pinned, last at {at}", row.pinned),
        };
        let pending = match row.changes.len() {
            0 => String::new(),
            n => format!("; {n} changes not accepted (`pins accept {}`)", row.server),
        };
        lines.push(format!("{}: {state}{pending}", Shown(&row.server)));
        for change in &row.changes {
            lines.push(format!(
                "  {}: {}",
                Shown(&change.tool),
                Shown(&change.what)
            ));
        }
    }
    lines.join("\n")
}
