//! `inline` (or `inline = false`) on a `fn` tool compiles.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool(inline, read_only)]
    fn a(&self, n: u32) -> u32 {
        n + 1
    }
    #[tool(inline = false)]
    fn b(&self) -> String {
        String::new()
    }
}

fn main() {}
