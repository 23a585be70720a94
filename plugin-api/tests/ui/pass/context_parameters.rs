//! A `Context` parameter, owned or borrowed, in a sync or async tool compiles and is not an
//! argument; a tool may return a `ToolResult`.

use plugin_api::{Context, ToolResult};

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool]
    fn a(&self, n: u32, ctx: &Context) -> ToolResult {
        ctx.info(n);
        ToolResult::text(n.to_string())
    }
    #[tool]
    async fn b(ctx: Context, n: u32) -> Result<ToolResult, plugin_api::ToolError> {
        ctx.progress(f64::from(n), None, None);
        Ok(ToolResult::text("b"))
    }
}

fn main() {}
