//! A compile error: an `#[extend]` method that is not `fn(&self, Original) -> Wrapped`.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[extend(tool = "t")]
    async fn on_t(&self, original: plugin_api::Original) -> plugin_api::Wrapped {
        plugin_api::Wrapped::sync(|_: plugin_api::Value| Ok::<_, plugin_api::ToolError>(1))
    }
}

fn main() {}
