//! A compile error: a resource URI used twice.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[resource(uri = "test://a")]
    fn a(&self) -> String {
        String::new()
    }
    #[resource(uri = "test://a")]
    fn b(&self) -> String {
        String::new()
    }
}

fn main() {}
