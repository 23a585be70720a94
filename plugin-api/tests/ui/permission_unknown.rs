//! A compile error: a permission kind that does not exist.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p", permissions(exec = ["/bin/sh"]))]
impl P {
    #[tool]
    fn a(&self) {}
}

fn main() {}
