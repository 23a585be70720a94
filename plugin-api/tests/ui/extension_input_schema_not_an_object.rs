//! A compile error: an extension whose `input_schema` is not a JSON object.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[extend(tool = "t", input_schema = r#"["not", "an", "object"]"#)]
    fn on_t(&self, original: plugin_api::Original) -> plugin_api::Wrapped {
        plugin_api::Wrapped::sync(|_: plugin_api::Value| Ok::<_, plugin_api::ToolError>(1))
    }
}

fn main() {}
