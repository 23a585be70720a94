//! The end-to-end test harness, in the manner of ripgrep's `tests/util.rs`.
//!
//! Tests run the real `reactor-mcp-server` binary and the real `reactor_mcp_server` library against real
//! plugin libraries: the first-party plugins and the fixture crates under `tests/fixtures/`,
//! built once per test process by [`ensure_built`]. Each test fills its own [`PluginDir`];
//! [`run_host`] runs one-shot commands such as `list`, and [`HostProcess`] keeps a host running
//! (killed on drop), both through the workspace's `harness` crate, which the benchmarks and
//! `cargo xtask conformance` start the host with too. [`maps`] reads `/proc/<pid>/maps`, which is how tests prove a library was,
//! or was not, opened. [`mcp`] has the small helpers MCP tests share; [`procs`] reads the processes a host started.

mod build;
mod host;
pub mod maps;
pub mod mcp;
mod plugin_dir;
pub mod procs;
pub mod tasks;

pub use build::{
    FIXTURES, PLUGINS, SERVER_BIN_ENV, embed_example_bin, ensure_built, host_bin, library,
    library_file_name, standalone_library, target_dir, workspace_root,
};
pub use host::{HostProcess, Output, host_command, run_host, run_host_bare, run_host_with_env};
pub use maps::{mapped_files, mapped_plugin_libraries};

/// An HTTP client for the tests, TLS ready ([`install_tls`]).
pub fn http() -> reqwest::Client {
    install_tls();
    reqwest::Client::new()
}

/// Makes ring the process's rustls crypto provider, once: reqwest is built without a provider
/// of its own in this workspace (the host installs ring the same way), so a client needs one
/// installed before it is made, rmcp's included.
pub fn install_tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
pub use plugin_dir::{PluginDir, library_bytes, patch, patched, truncated, with_abi_version};
