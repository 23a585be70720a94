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
//!
//! A resource template whose method's parameters are not the template's variables:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[resource_template(uri_template = "test://t/{id}/data")]
//!     fn t(&self, name: String) -> String { name }
//! }
//! ```
//!
//! A URI template the host could not match:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[resource_template(uri_template = "test://search{?q}")]
//!     fn t(&self, q: String) -> String { q }
//! }
//! ```
//!
//! A resource URI used twice:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[resource(uri = "test://a")]
//!     fn a(&self) -> String { String::new() }
//!     #[resource(uri = "test://a")]
//!     fn b(&self) -> String { String::new() }
//! }
//! ```
//!
//! A prompt in a toolset the plugin does not declare:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p", toolset(name = "p"))]
//! impl P {
//!     #[prompt(toolset = "elsewhere")]
//!     fn greet(&self) -> String { String::new() }
//! }
//! ```
//!
//! A completion of an argument the prompt does not have:
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[prompt]
//!     fn greet(&self, who: String) -> String { who }
//!     #[complete(prompt = "greet", argument = "whom")]
//!     fn complete_who(&self, value: String) -> Vec<String> { vec![value] }
//! }
//! ```
//!
//! And resources, templates, prompts and completions written correctly compile, a plugin with
//! only those getting a toolset named after it:
//!
//! ```
//! use std::collections::HashMap;
//!
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[resource(uri = "test://a", size = 1)]
//!     async fn a(&self) -> Result<Vec<u8>, std::io::Error> { Ok(vec![1]) }
//!     #[resource_template(uri_template = "test://t/{id}/{+rest}")]
//!     fn t(&self, rest: String, id: u64) -> plugin_api::ResourceContents {
//!         plugin_api::ResourceContents::text("", format!("{id} {rest}"))
//!     }
//!     #[prompt(name = "greet")]
//!     fn greet(&self, #[arg(rename = "firstName")] first_name: String, times: Option<u8>) -> String {
//!         first_name.repeat(times.unwrap_or(1).into())
//!     }
//!     #[complete(resource = "test://t/{id}/{+rest}", argument = "id")]
//!     async fn complete_id(&self, value: String, given: HashMap<String, String>) -> Vec<String> {
//!         vec![value, given.len().to_string()]
//!     }
//! }
//! ```
//!
//! `inline` on an `async fn` tool (it is for `fn` tools; async ones are polled in place):
//!
//! ```compile_fail
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[tool(inline)]
//!     async fn a(&self) -> String { String::new() }
//! }
//! ```
//!
//! And `inline` (or `inline = false`) on a `fn` tool compiles:
//!
//! ```
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[tool(inline, read_only)]
//!     fn a(&self, n: u32) -> u32 { n + 1 }
//!     #[tool(inline = false)]
//!     fn b(&self) -> String { String::new() }
//! }
//! ```
//!
//! A tool with two `Context` parameters:
//!
//! ```compile_fail
//! use plugin_api::Context;
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[tool]
//!     fn a(&self, first: Context, second: &Context) {}
//! }
//! ```
//!
//! And a `Context` parameter, owned or borrowed, in a sync or async tool, compiles and is not an
//! argument; a tool may return a `ToolResult`:
//!
//! ```
//! use plugin_api::{Context, ToolResult};
//! #[derive(Default)]
//! struct P;
//! #[plugin_api::plugin(name = "p")]
//! impl P {
//!     #[tool]
//!     fn a(&self, n: u32, ctx: &Context) -> ToolResult {
//!         ctx.info(n);
//!         ToolResult::text(n.to_string())
//!     }
//!     #[tool]
//!     async fn b(ctx: Context, n: u32) -> Result<ToolResult, plugin_api::ToolError> {
//!         ctx.progress(f64::from(n), None, None);
//!         Ok(ToolResult::text("b"))
//!     }
//! }
//! ```
