//! `cargo xtask serve [-- ARGS...]`: the server with the first-party plugins, built for speed.
//!
//! Release-builds every plugin into `plugins/` (see `build_plugins`), then runs
//! `reactor-mcp-server serve ARGS...` from the workspace root with `cargo run --release`, so
//! the host finds them in its default plugin folder. Everything after `--` goes to the host
//! unchanged; what it means is the host's business.

use std::ffi::OsString;

use anyhow::Result;

use crate::{build_plugins, cargo, run_command};

/// Options of `cargo xtask serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Arguments for `reactor-mcp-server serve`, after `--`.
    #[arg(last = true, value_name = "ARGS")]
    pub(crate) host_args: Vec<OsString>,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    build_plugins::run(&build_plugins::Args {
        release: true,
        plugins: Vec::new(),
    })?;
    let mut host = cargo();
    host.args([
        "run",
        "--release",
        "-p",
        "reactor-mcp-server",
        "--bin",
        "reactor-mcp-server",
        "--",
        "serve",
    ])
    .args(&args.host_args);
    run_command(&mut host)
}
