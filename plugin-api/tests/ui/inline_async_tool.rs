//! A compile error: `inline` on an `async fn` tool (it is for `fn` tools; async ones are polled
//! in place).

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool(inline)]
    async fn a(&self) -> String {
        String::new()
    }
}

fn main() {}
