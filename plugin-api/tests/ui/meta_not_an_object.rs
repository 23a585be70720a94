//! A compile error: `meta` that is not a JSON object.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool(meta = "[1, 2]")]
    fn a(&self) {}
}

fn main() {}
