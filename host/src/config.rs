//! The command line: every flag with its environment variable.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// An MCP server whose tools come from plugins.
#[derive(Debug, Parser)]
#[command(name = "reactor-mcp-server", version, about)]
pub struct Cli {
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options shared by every command.
    #[command(flatten)]
    pub common: Common,
}

/// Options of every command.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// The folder scanned for plugin libraries.
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_PLUGIN_DIR",
        default_value = "plugins"
    )]
    pub plugin_dir: PathBuf,
    /// Serve only the plugins with these names (repeatable; replaces REACTOR_MCP_EXTENSIONS).
    #[arg(long = "extension", global = true, value_name = "NAME")]
    pub extensions: Vec<String>,
    /// The log level when RUST_LOG is not set (error, warn, info, debug, trace).
    #[arg(
        long,
        global = true,
        env = "REACTOR_MCP_LOG_LEVEL",
        default_value = "info"
    )]
    pub log_level: String,
}

impl Common {
    /// The plugin names discovery is narrowed to: `--extension`, else `REACTOR_MCP_EXTENSIONS`.
    pub fn extension_filter(&self) -> Option<Vec<String>> {
        if !self.extensions.is_empty() {
            return Some(crate::discovery::split_names(
                self.extensions.iter().map(String::as_str),
            ));
        }
        let from_env = std::env::var("REACTOR_MCP_EXTENSIONS").ok()?;
        Some(crate::discovery::split_names([from_env.as_str()])).filter(|n| !n.is_empty())
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the plugins in the plugin folder without opening any of them.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}
