//! A compile error: a `connect` permission that is neither `host:port` nor `port`.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p", permissions(connect = ["example.com"], env = ["P_TOKEN"]))]
impl P {
    #[tool]
    fn a(&self) {}
}

fn main() {}
