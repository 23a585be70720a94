//! Extensions, with and without code, in a plugin with no tool and no toolset compile.

use plugin_api::{Original, ToolError, Value, Wrapped};

#[derive(Default)]
struct P;

#[plugin_api::plugin(
    name = "p",
    extend(tool = "t", order = -2, read_only, meta = r#"{"a": 1}"#),
)]
impl P {
    #[extend(tool = "t", input_schema = r#"{"type": "object"}"#)]
    fn on_t(&self, original: Original) -> Result<Wrapped, ToolError> {
        Ok(Wrapped::asynchronous(move |args: Value| {
            let original = original.clone();
            async move { original.call(args).await }
        }))
    }
}

fn main() {}
