//! A compile error: a prompt in a toolset the plugin does not declare.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p", toolset(name = "p"))]
impl P {
    #[prompt(toolset = "elsewhere")]
    fn greet(&self) -> String {
        String::new()
    }
}

fn main() {}
