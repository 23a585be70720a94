//! A compile error: a URI template the host could not match.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[resource_template(uri_template = "test://search{?q}")]
    fn t(&self, q: String) -> String {
        q
    }
}

fn main() {}
