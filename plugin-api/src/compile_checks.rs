//! Mistakes the `#[plugin]` attribute turns into compile errors. Each example must fail.
//!
//! A tool name used twice:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[tool]
//!     fn a(&self) {}
//!     #[tool(name = "a")]
//!     fn b(&self) {}
//! }
//! ```
//!
//! A tool in a toolset the plugin does not declare:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p", toolset(name = "p"))]
//! impl P {
//!     #[tool(toolset = "elsewhere")]
//!     fn a(&self) {}
//! }
//! ```
//!
//! An empty tool name:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[tool(name = "")]
//!     fn a(&self) {}
//! }
//! ```
//!
//! `meta` that is not a JSON object:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[tool(meta = "[1, 2]")]
//!     fn a(&self) {}
//! }
//! ```
//!
//! A borrowed argument:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[tool]
//!     fn a(&self, text: &str) {}
//! }
//! ```
//!
//! And the same plugin, written correctly, compiles:
//!
//! ```
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p", toolset(name = "p"))]
//! impl P {
//!     #[tool(meta = r#"{"scope": "read"}"#)]
//!     fn a(&self, text: String) -> String { text }
//! }
//! ```
