//! `cargo xtask bridge-server`: install the third-party MCP server the bridge's end-to-end
//! tests run (`@modelcontextprotocol/server-everything`, pinned) with the pinned Node, into
//! `.tools/bridge`. `cargo xtask test` runs it before the tests and hands them its paths in
//! [`NODE_ENV`] and [`SERVER_ENV`], so there the tests cannot skip it.

use std::{path::PathBuf, process::Command};

use anyhow::{Result, ensure};

use crate::{npm, project_root};

/// The npm package.
const PACKAGE: &str = "@modelcontextprotocol/server-everything";
/// Its pinned version.
const VERSION: &str = "2026.8.31";
/// The variable naming the Node binary the tests run it with.
pub(crate) const NODE_ENV: &str = "REACTOR_E2E_NODE";
/// The variable naming its entry script.
pub(crate) const SERVER_ENV: &str = "REACTOR_E2E_EVERYTHING";

/// Options of `cargo xtask bridge-server` (none yet).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Args {}

/// The installed Node binary and the server's entry script.
#[derive(Debug)]
pub(crate) struct Installed {
    node: PathBuf,
    script: PathBuf,
}

impl Installed {
    /// Sets [`NODE_ENV`] and [`SERVER_ENV`] on `command`.
    pub(crate) fn pass_to(&self, command: &mut Command) {
        command
            .env(NODE_ENV, &self.node)
            .env(SERVER_ENV, &self.script);
    }
}

pub(crate) fn run(_args: &Args) -> Result<()> {
    let installed = install()?;
    eprintln!(
        "{NODE_ENV}={}\n{SERVER_ENV}={}",
        installed.node.display(),
        installed.script.display()
    );
    Ok(())
}

/// Installs the pinned server and Node into `.tools/bridge` unless they are there already.
pub(crate) fn install() -> Result<Installed> {
    let prefix = project_root().join(".tools").join("bridge");
    eprintln!("\n==> {PACKAGE} {VERSION}, for the bridge's end-to-end tests");
    let installed = npm::Prefix::install(&prefix, &[(PACKAGE, VERSION)])?;
    let script = installed.file(PACKAGE, "dist/index.js");
    ensure!(
        script.is_file(),
        "npm finished but {} is missing",
        script.display()
    );
    Ok(Installed {
        node: installed.node,
        script,
    })
}
