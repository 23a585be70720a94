//! Resources, templates, prompts and completions compile, in a plugin with only those.

use std::collections::HashMap;

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[resource(uri = "test://a", size = 1)]
    async fn a(&self) -> Result<Vec<u8>, std::io::Error> {
        Ok(vec![1])
    }
    #[resource_template(uri_template = "test://t/{id}/{+rest}")]
    fn t(&self, rest: String, id: u64) -> plugin_api::ResourceContents {
        plugin_api::ResourceContents::text("", format!("{id} {rest}"))
    }
    #[prompt(name = "greet")]
    fn greet(&self, #[arg(rename = "firstName")] first_name: String, times: Option<u8>) -> String {
        first_name.repeat(times.unwrap_or(1).into())
    }
    #[complete(resource = "test://t/{id}/{+rest}", argument = "id")]
    async fn complete_id(&self, value: String, given: HashMap<String, String>) -> Vec<String> {
        vec![value, given.len().to_string()]
    }
}

fn main() {}
