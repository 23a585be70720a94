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
//! An extension of a tool with an empty name:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p", extend(tool = "", description = "d"))]
//! impl P {}
//! ```
//!
//! An extension whose `input_schema` is not a JSON object:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[extend(tool = "t", input_schema = r#"["not", "an", "object"]"#)]
//!     fn on_t(&self, original: plugin_api::Original) -> plugin_api::Wrapped {
//!         plugin_api::Wrapped::sync(|_: plugin_api::Value| Ok::<_, plugin_api::ToolError>(1))
//!     }
//! }
//! ```
//!
//! An extension whose `meta` is not valid JSON:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p", extend(tool = "t", meta = "{oops"))]
//! impl P {}
//! ```
//!
//! An `#[extend]` method that is not `fn(&self, Original) -> Wrapped`:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[extend(tool = "t")]
//!     async fn on_t(&self, original: plugin_api::Original) -> plugin_api::Wrapped {
//!         plugin_api::Wrapped::sync(|_: plugin_api::Value| Ok::<_, plugin_api::ToolError>(1))
//!     }
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
//!
//! As do extensions, with and without code, and a plugin with no tool and no toolset:
//!
//! ```
//! use plugin_api::{Original, ToolError, Value, Wrapped};
//!
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(
//!     name = "p",
//!     extend(tool = "t", order = -2, read_only, meta = r#"{"a": 1}"#),
//! )]
//! impl P {
//!     #[extend(tool = "t", input_schema = r#"{"type": "object"}"#)]
//!     fn on_t(&self, original: Original) -> Result<Wrapped, ToolError> {
//!         Ok(Wrapped::asynchronous(move |args: Value| {
//!             let original = original.clone();
//!             async move { original.call(args).await }
//!         }))
//!     }
//! }
//! ```
