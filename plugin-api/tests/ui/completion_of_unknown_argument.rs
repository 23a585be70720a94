//! A compile error: a completion of an argument the prompt does not have.

#[derive(Default)]
struct P;

#[plugin_api::plugin(name = "p")]
impl P {
    #[prompt]
    fn greet(&self, who: String) -> String {
        who
    }
    #[complete(prompt = "greet", argument = "whom")]
    fn complete_who(&self, value: String) -> Vec<String> {
        vec![value]
    }
}

fn main() {}
