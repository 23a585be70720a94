//! A compile error: `input_first` on a tool that never runs as a task.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool(input_first)]
    fn a(&self) {}
}

fn main() {}
