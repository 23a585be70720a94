//! A compile error: a resource template whose method's parameters are not the template's variables.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[resource_template(uri_template = "test://t/{id}/data")]
    fn t(&self, name: String) -> String {
        name
    }
}

fn main() {}
