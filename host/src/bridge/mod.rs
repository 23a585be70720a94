//! Bridged MCP servers: servers declared in `mcp.json` files, served as toolsets.
//!
//! - [`config`] reads the files: which servers, how to reach them, and our keys for each.
//! - [`names`] gives the names their tools are served under.

pub mod config;
mod expand;
pub mod names;
