//! `cargo xtask clients`: the official clients desktop users run, against
//! `reactor-mcp-server stdio`, as an MCP client configuration starts it.
//!
//! 1. **Tools.** The MCP Inspector ([`INSPECTOR_VERSION`], its CLI mode) with a Node 22 of its
//!    own under `.tools/clients` (see [`crate::npm`]), and the official Python SDK
//!    (`mcp` [`PYTHON_SDK_VERSION`]) in a virtual environment `.tools/clients/python` made with
//!    the machine's `python3`; each installed once.
//! 2. **Build.** The `benchmarks` plugin (debug) and the host binary.
//! 3. **Run.** The Python SDK's stdio client (`tests/clients/stdio_client.py`: initialize, list,
//!    two calls), then the Inspector's CLI: `tools/list` and `tools/call add a=2 b=3` over
//!    stdio, each answer checked.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use crate::{build_plugins, display, npm, project_root, run_command};

/// The pinned version of `@modelcontextprotocol/inspector`.
const INSPECTOR_VERSION: &str = "2.12.0";
/// The Inspector's npm package.
const INSPECTOR_PACKAGE: &str = "@modelcontextprotocol/inspector";
/// The pinned version of the official Python SDK (`mcp` on PyPI).
const PYTHON_SDK_VERSION: &str = "2.3.0";

/// Options of `cargo xtask clients` (none yet).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Args {}

pub(crate) fn run(_args: &Args) -> Result<()> {
    let root = project_root();
    let tools = root.join(".tools").join("clients");
    eprintln!("\n==> MCP Inspector {INSPECTOR_VERSION} and the Python SDK {PYTHON_SDK_VERSION}");
    let node = npm::Prefix::install(&tools, &[(INSPECTOR_PACKAGE, INSPECTOR_VERSION)])?;
    let inspector = node.file(INSPECTOR_PACKAGE, "clients/launcher/build/index.js");
    ensure!(
        inspector.is_file(),
        "npm finished but {} is missing",
        inspector.display()
    );
    let python = python_sdk(&tools.join("python"))?;

    eprintln!("\n==> building the benchmarks plugin and the host");
    build_plugins::run(&build_plugins::Args {
        release: false,
        plugins: vec!["benchmarks".to_owned()],
    })?;
    let server = crate::build_debug_server()?;
    let plugins = root.join("plugins");

    eprintln!("\n==> the Python SDK's stdio client");
    run_command(
        Command::new(&python)
            .arg(root.join("tests").join("clients").join("stdio_client.py"))
            .arg(&server)
            .arg(&plugins)
            .env_remove("RUST_LOG"),
    )?;

    eprintln!("\n==> the MCP Inspector's CLI over stdio");
    let inspect = |method: &[&str]| -> Result<Value> {
        let mut command = Command::new(&node.node);
        command
            .arg(&inspector)
            .arg("--cli")
            .arg(&server)
            .args(["stdio", "--toolsets", "only=benchmarks", "--plugin-dir"])
            .arg(&plugins)
            .arg("--method")
            .args(method)
            .env("MCP_CATALOG_PATH", tools.join("catalog.json"))
            .env("RUST_LOG", "warn");
        eprintln!("$ {}", display(&command));
        let output = command.output().context("starting the Inspector")?;
        ensure!(
            output.status.success(),
            "the Inspector failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).with_context(|| {
            format!(
                "the Inspector's output is not JSON:\n{}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    };
    let listed = inspect(&["tools/list"])?;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    ensure!(
        names == ["echo", "add", "sleep", "blob", "list_server_toolsets"],
        "the Inspector listed {names:?}"
    );
    let called = inspect(&[
        "tools/call",
        "--tool-name",
        "add",
        "--tool-arg",
        "a=2",
        "b=3",
    ])?;
    ensure!(
        called["content"][0]["text"] == "5" && called["isError"] != true,
        "the Inspector's call of add answered {called}"
    );
    eprintln!("inspector cli: {} tools listed, add called", names.len());
    Ok(())
}

/// The Python of a virtual environment at `venv` holding the pinned SDK, made if needed.
fn python_sdk(venv: &Path) -> Result<PathBuf> {
    python_with(venv, "mcp", PYTHON_SDK_VERSION)
        .context("installing the Python SDK needs access to PyPI")
}

/// The Python of a virtual environment at `venv` holding `package` at `version` from PyPI,
/// made if needed (the machine's `python3` with its venv module).
pub(crate) fn python_with(venv: &Path, package: &str, version: &str) -> Result<PathBuf> {
    let python = venv.join("bin").join("python");
    let marker = venv.join(format!("{package}-{version}.installed"));
    if python.is_file() && marker.is_file() {
        eprintln!("already installed in {}", venv.display());
        return Ok(python);
    }
    run_command(Command::new("python3").args(["-m", "venv"]).arg(venv))
        .context("making a Python virtual environment needs `python3` with its venv module")?;
    run_command(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(format!("{package}=={version}")),
    )
    .with_context(|| format!("installing {package} {version} from PyPI"))?;
    std::fs::write(&marker, "").with_context(|| format!("writing {}", marker.display()))?;
    Ok(python)
}
