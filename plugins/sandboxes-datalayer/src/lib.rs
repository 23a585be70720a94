//! `sandboxes-datalayer`: the seeds' example of a plugin that extends another plugin's tool.
//!
//! It offers no tool of its own (so it declares no toolset): it narrows the `sandboxes`
//! plugin's `launch_sandbox` to Datalayer sandboxes, and re-describes `launch_notebook`, a tool
//! no first-party plugin offers, so every listing shows a pending extension. The host applies
//! both; this crate never names the `sandboxes` crate, only the tool.

use plugin_api::{Original, Value, Wrapped, json, plugin};
use serde::Deserialize;

/// The plugin's (empty) state.
#[derive(Debug, Default)]
pub struct SandboxesDatalayer;

/// The arguments of the narrowed `launch_sandbox`: its input schema below says the same.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LaunchOnDatalayer {
    sandbox_name: String,
    #[serde(default = "default_environment")]
    environment: String,
}

fn default_environment() -> String {
    "ai-env".to_owned()
}

/// Sandboxes on Datalayer: narrows `launch_sandbox` to the `datalayer` variant.
///
/// The narrowed tool takes a sandbox name and a Datalayer environment (`ai-env` by default),
/// each at most 128 characters as `sandboxes` bounds its names; the original keeps the session's
/// sandboxes apart, since the wrapper's call carries the caller's context.
#[plugin(extend(
    tool = "launch_notebook",
    description = "Launch a Jupyter notebook on Datalayer, in the environment of your choice."
))]
impl SandboxesDatalayer {
    /// Narrows `launch_sandbox`: the caller names the sandbox and its environment; the variant
    /// is always `datalayer`. The description and schema say so; the annotations are kept.
    #[extend(
        tool = "launch_sandbox",
        description = "Launch a sandbox on Datalayer, in an environment with the AI libraries \
                       preinstalled (`ai-env` unless you name another).",
        input_schema = r#"{
            "type": "object",
            "properties": {
                "sandbox_name": {
                    "type": "string",
                    "description": "A name for the sandbox (at most 128 characters).",
                    "maxLength": 128
                },
                "environment": {
                    "type": "string",
                    "description": "The Datalayer environment to run it in.",
                    "default": "ai-env",
                    "maxLength": 128
                }
            },
            "required": ["sandbox_name"],
            "additionalProperties": false
        }"#
    )]
    fn on_datalayer(&self, original: Original) -> Wrapped {
        Wrapped::asynchronous(move |args: LaunchOnDatalayer| {
            let original = original.clone();
            async move {
                let mut record = original
                    .call(json!({"sandbox_name": args.sandbox_name, "variant": "datalayer"}))
                    .await?;
                if let Value::Object(fields) = &mut record {
                    fields.insert("environment".to_owned(), Value::from(args.environment));
                }
                Ok(record)
            }
        })
    }
}
