//! A compile error: a borrowed argument.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool]
    fn a(&self, text: &str) {}
}

fn main() {}
