//! A compile error: a tool whose `input_schema` is not a JSON object.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[tool(input_schema = r#""a string""#)]
    fn t(&self) -> u32 {
        1
    }
}

fn main() {}
