//! A compile error: a `read` permission that is not an absolute path.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p", permissions(read = ["/etc/p", "data/p"]))]
impl P {
    #[tool]
    fn a(&self) {}
}

fn main() {}
