//! A compile error: a tool name used twice.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool]
    fn a(&self) {}
    #[tool(name = "a")]
    fn b(&self) {}
}

fn main() {}
