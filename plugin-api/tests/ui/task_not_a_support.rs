//! A compile error: `task` names no task support.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool(task = "sometimes")]
    fn a(&self) {}
}

fn main() {}
