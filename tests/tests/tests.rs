//! The end-to-end tests, one test binary: each module is one area, and the dependency graph
//! (host, rmcp, tokio, reqwest) is linked once rather than once per file, as ripgrep's
//! `tests/tests.rs` does. A new area is a new module here; `tests/Cargo.toml` turns off
//! cargo's one-binary-per-file discovery.

mod abuse;
mod activation;
mod auth;
mod bridge;
mod bridge_skills;
mod compat;
mod context;
mod discovery;
mod embed;
mod extensions;
mod filters;
mod fleet;
mod harness;
mod hot_path;
mod isolation;
mod list;
mod observe;
mod parity;
mod pins;
mod plugin_logs;
mod policies;
mod private_copies;
mod reload;
mod resources;
mod sandbox;
mod search;
mod serve;
mod sessions;
mod stdio;
mod tasks;
mod tool_bounds;
mod traces;
mod trust;
mod ui;
