//! A compile error: a tool with two `Context` parameters.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool]
    fn a(&self, first: plugin_api::Context, second: &plugin_api::Context) {}
}

fn main() {}
