//! A tool with `meta`, a toolset and an owned argument compiles.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p", toolset(name = "p"))]
impl P {
    #[tool(meta = r#"{"scope": "read"}"#)]
    fn a(&self, text: String) -> String {
        text
    }
}

fn main() {}
