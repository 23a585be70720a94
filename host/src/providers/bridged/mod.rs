//! The bridged provider: MCP servers an `mcp.json` declares (and isolated libraries' children),
//! started when a URL first needs them and served as plugins.
//!
//! Discovery gives each a manifest from its entry and cached list (`crate::discovery::servers`),
//! so listings, `/toolsets`, selection, extensions and conflicts treat it as any plugin.
//!
//! - [`open`] starts a server when a URL first needs it: its [`upstream::Upstream`] connection,
//!   shared by every session, and a live plugin instance forwarding calls to it (`instance`);
//!   what the server sends during a call reaches the calling request (`relay`).
//! - `process` and `restarts` supervise a stdio child: its stderr, its exit, restart with
//!   backoff and parking after repeated crashes; `environment` is what it starts with (never
//!   the host's whole environment).
//! - [`refresh`] asks every server for its tools at once (`list --refresh`).

mod environment;
mod instance;
mod lane;
pub(crate) mod lines;
mod opener;
mod process;
mod refresh;
mod relay;
mod restarts;
pub(crate) mod upstream;

pub(crate) use opener::{Upstreams, open};
pub(crate) use refresh::refresh;
