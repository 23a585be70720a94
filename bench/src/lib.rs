//! Benchmarks of reactor-mcp-server: what the plugin layer costs, measured side by side.
//!
//! `cargo xtask bench` builds what is measured and runs the `reactor-bench` binary of this
//! crate, which measures the seven benchmark figures ([`figures`]) and prints them
//! ([`report`]) with their ratios and targets. The pieces:
//!
//! - the two baselines, binaries of this crate: `plain-rmcp-echo` (rmcp with `echo` compiled
//!   in) and `axum-floor` (the same JSON-RPC answer from a bare axum handler), both built on
//!   [`echo`], the body of the `benchmarks` plugin's `echo`;
//! - the load generator: [`client`] (a lean MCP-over-HTTP client on hyper) and [`load`]
//!   (concurrent sessions bounded by count and time, loopback only);
//! - [`process`] (servers under test, RSS from `/proc`) and [`fixtures`] (plugin folders, and
//!   200 distinct plugins made from one library);
//! - [`churn`]: sessions opened and closed round after round, with the server's RSS
//!   (`reactor-bench sessions`);
//! - [`abi`]: the in-process subjects of the ABI benchmark, shared by criterion
//!   (`benches/abi.rs`) and the quick mode;
//! - `fixtures/many-tools`: a plugin with 1,000 tools built at run time;
//! - [`catalogue`]: 200 plugins of 10 tools as manifests, and 50 queries with their right
//!   tools, for `search_tools` and discovery mode (`benches/search.rs`).
//!
//! The quick mode ([`figures::Plan::quick`]) is run by this crate's tests, so the benchmarks
//! keep working; it asserts nothing about timings.

pub mod abi;
pub mod catalogue;
pub mod churn;
pub mod client;
pub mod echo;
pub mod figures;
pub mod fixtures;
pub mod load;
pub mod process;
pub mod report;
pub mod stats;
