//! `conformance`: every tool, resource and prompt the server scenarios of the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`, pinned at 0.1.16) call, with the
//! names, arguments and answers each scenario checks.
//!
//! Off by default: `cargo xtask conformance` serves it alone, at `/mcp?only=conformance`, and
//! runs the suite against it. The scenarios' own texts (in the package's `dist/index.js`) are
//! the specification; each item below names the scenario it answers. What the host does for
//! every plugin (initialize, ping, Host/Origin checks, SSE streams) is not here.

use std::time::Duration;

use plugin_api::{Tool, ToolError, Value, json, plugin};

/// The plugin's (empty) state.
#[derive(Debug, Default)]
pub struct Conformance;

/// The tools the conformance scenarios call.
#[plugin(
    on_toolset = "conformance",
    toolset(
        name = "conformance",
        title = "MCP conformance",
        description = "What the official MCP conformance suite's server scenarios call",
        default = false,
    )
)]
impl Conformance {
    /// Answer with a fixed text (scenario `tools-call-simple-text`).
    #[tool(read_only, idempotent, open_world = false)]
    fn test_simple_text() -> String {
        "This is a simple text response for testing.".to_owned()
    }

    /// Always fail, as a tool error the model can read (scenario `tools-call-error`).
    #[tool(read_only, idempotent, open_world = false)]
    fn test_error_handling() -> Result<String, ToolError> {
        Err(ToolError::new(
            "This tool intentionally returns an error for testing",
        ))
    }

    /// Wait a little, then answer (scenario `server-sse-polling`, which calls it and reads the
    /// answer from the SSE stream, resuming the stream if the server closed it).
    #[tool(read_only, idempotent, open_world = false)]
    async fn test_reconnection() -> String {
        plugin_api::tokio::time::sleep(Duration::from_millis(100)).await;
        "Reconnection test completed".to_owned()
    }

    /// Tools whose input schema is written out rather than generated from argument types.
    #[dynamic_tools]
    fn written_schemas(&self) -> Vec<Tool> {
        vec![json_schema_2020_12_tool()]
    }
}

/// `json_schema_2020_12_tool` (scenario `json-schema-2020-12`): its input schema uses
/// `$schema`, `$defs` with a `$ref`, and `additionalProperties: false`, which the listing must
/// carry unchanged. Schemas generated from argument types drop `$schema` and inline `$defs`,
/// so this one is written out.
fn json_schema_2020_12_tool() -> Tool {
    Tool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
    )
    .input_schema(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"}
                }
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"}
        },
        "additionalProperties": false
    }))
    .sync(|args: Value| -> Result<String, ToolError> {
        let name = args["name"].as_str().unwrap_or("world");
        Ok(format!("Hello, {name}!"))
    })
}
