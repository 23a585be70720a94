//! A header an argument is mirrored into must be an HTTP token: a space is refused.

use plugin_api::plugin;

#[derive(Debug, Default)]
pub struct Headers;

#[plugin(toolset(name = "headers"))]
impl Headers {
    /// Greet.
    #[tool]
    fn greet(#[arg(header = "Tenant Name")] tenant: String) -> String {
        tenant
    }
}

fn main() {}
