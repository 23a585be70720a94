//! A compile error: an extension whose `meta` is not valid JSON.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p", extend(tool = "t", meta = "{oops"))]
impl P {}

fn main() {}
