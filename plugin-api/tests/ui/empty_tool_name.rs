//! A compile error: an empty tool name.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool(name = "")]
    fn a(&self) {}
}

fn main() {}
