//! A compile error: a tool in a toolset the plugin does not declare.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p", toolset(name = "p"))]
impl P {
    #[tool(toolset = "elsewhere")]
    fn a(&self) {}
}

fn main() {}
