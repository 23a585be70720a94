//! A compile error: an extension of a tool with an empty name.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p", extend(tool = "", description = "d"))]
impl P {}

fn main() {}
