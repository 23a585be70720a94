//! `conformance`: every tool, resource, prompt and completion the server scenarios of the
//! official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned at 0.1.16 and
//! 0.2.0-alpha.12) call, with the names, arguments and answers each scenario checks.
//!
//! Off by default: `cargo xtask conformance` serves it alone, at `/mcp?only=conformance`, and
//! runs the suite against it. The scenarios' own texts (in the package's `dist/index.js`) are
//! the specification; each item below names the scenario it answers. What the host does for
//! every plugin (initialize, ping, `logging/setLevel`, subscriptions, Host/Origin checks, SSE
//! streams) is not here.

use std::{
    collections::HashMap,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use base64::{Engine, engine::general_purpose::STANDARD};
use plugin_api::{
    Answers, Content, Context, Inputs, PromptMessage, ResourceContents, ToolError, ToolResult,
    Value, json, plugin,
};

/// A 1x1 red PNG, the image of every scenario that wants one.
const RED_PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0xf7, 0x03, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of 1 ms of silence (8 kHz, mono, 8-bit PCM).
const SILENCE_WAV: &[u8] = &[
    0x52, 0x49, 0x46, 0x46, 0x2c, 0x00, 0x00, 0x00, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6d, 0x74, 0x20,
    0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x40, 0x1f, 0x00, 0x00, 0x40, 0x1f, 0x00, 0x00,
    0x01, 0x00, 0x08, 0x00, 0x64, 0x61, 0x74, 0x61, 0x08, 0x00, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80,
    0x80, 0x80, 0x80, 0x80,
];

/// How long the logging and progress tools wait between two notifications, as the scenarios
/// ask ("~50ms"), so a client sees them arrive during the call.
const STEP: Duration = Duration::from_millis(50);

/// The plugin's state: whether the hooks turned `test_dynamic_tool` and `test_dynamic_prompt`
/// off.
#[derive(Debug, Default)]
pub struct Conformance {
    tool_off: AtomicBool,
    prompt_off: AtomicBool,
}

/// What the MCP conformance suite's server scenarios call.
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

    /// Answer the region it is given; the region is mirrored into the `Mcp-Param-Region` header
    /// (`x-mcp-header`, scenario `http-custom-header-server-validation`), which the server checks
    /// against the body.
    #[tool(read_only, idempotent, open_world = false)]
    fn test_header_parameter(
        /// The region.
        #[arg(header = "Region")]
        region: String,
    ) -> String {
        format!("region: {region}")
    }

    /// Answer with a PNG image (scenario `tools-call-image`).
    #[tool(read_only, idempotent, open_world = false)]
    fn test_image_content() -> ToolResult {
        ToolResult::new([png()])
    }

    /// Answer with a WAV sound (scenario `tools-call-audio`).
    #[tool(read_only, idempotent, open_world = false)]
    fn test_audio_content() -> ToolResult {
        ToolResult::new([Content::audio(STANDARD.encode(SILENCE_WAV), "audio/wav")])
    }

    /// Answer with an embedded text resource (scenario `tools-call-embedded-resource`).
    #[tool(read_only, idempotent, open_world = false)]
    fn test_embedded_resource() -> ToolResult {
        ToolResult::new([Content::resource_text(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )])
    }

    /// Answer with text, an image and an embedded resource (scenario
    /// `tools-call-mixed-content`).
    #[tool(read_only, idempotent, open_world = false)]
    fn test_multiple_content_types() -> ToolResult {
        ToolResult::new([
            Content::text("Multiple content types test:"),
            png(),
            Content::resource_text(
                "test://mixed-content-resource",
                "application/json",
                json!({"test": "data", "value": 123}).to_string(),
            ),
        ])
    }

    /// Log three `info` messages, 50 ms apart, while running (scenario
    /// `tools-call-with-logging`).
    #[tool(read_only, idempotent, open_world = false)]
    async fn test_tool_with_logging(ctx: Context) -> String {
        ctx.info("Tool execution started");
        plugin_api::tokio::time::sleep(STEP).await;
        ctx.info("Tool processing data");
        plugin_api::tokio::time::sleep(STEP).await;
        ctx.info("Tool execution completed");
        "Logging test completed: sent 3 log messages".to_owned()
    }

    /// Report progress 0, 50 and 100 of 100, 50 ms apart (scenario
    /// `tools-call-with-progress`); without a progress token, just take the time.
    #[tool(read_only, idempotent, open_world = false)]
    async fn test_tool_with_progress(ctx: Context) -> String {
        ctx.progress(0.0, Some(100.0), Some("Starting"));
        plugin_api::tokio::time::sleep(STEP).await;
        ctx.progress(50.0, Some(100.0), Some("Halfway"));
        plugin_api::tokio::time::sleep(STEP).await;
        ctx.progress(100.0, Some(100.0), Some("Complete"));
        "Progress test completed".to_owned()
    }

    /// Always fail, as a tool error the model can read (scenario `tools-call-error`).
    #[tool(read_only, idempotent, open_world = false)]
    fn test_error_handling() -> Result<String, ToolError> {
        Err(ToolError::new(
            "This tool intentionally returns an error for testing",
        ))
    }

    /// Ask the client's model to answer a prompt (`sampling/createMessage`) and tell its
    /// answer (scenario `tools-call-sampling`).
    #[tool(read_only, open_world = false)]
    async fn test_sampling(
        /// The prompt to send to the model.
        prompt: String,
        ctx: Context,
    ) -> Result<String, ToolError> {
        let answer = ctx
            .sample(json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": 100
            }))
            .await?;
        let text = match &answer["content"] {
            Value::Array(blocks) => blocks.iter().find_map(|b| b["text"].as_str()),
            block => block["text"].as_str(),
        };
        Ok(format!("LLM response: {}", text.unwrap_or("(no text)")))
    }

    /// Ask the user for a name and an e-mail address (`elicitation/create`) and tell the
    /// answer (scenario `tools-call-elicitation`).
    #[tool(read_only, open_world = false)]
    async fn test_elicitation(
        /// The message to show the user.
        message: String,
        ctx: Context,
    ) -> Result<String, ToolError> {
        elicit_and_tell(
            &ctx,
            "User response",
            json!({
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                }
            }),
        )
        .await
    }

    /// Ask the user for values of every primitive type, each with a default (scenario
    /// `elicitation-sep1034-defaults`, SEP-1034).
    #[tool(read_only, open_world = false)]
    async fn test_elicitation_sep1034_defaults(ctx: Context) -> Result<String, ToolError> {
        elicit_and_tell(
            &ctx,
            "Elicitation completed",
            json!({
                "message": "Please review the values (each has a default)",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "Name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "Age", "default": 30},
                        "score": {"type": "number", "description": "Score", "default": 95.5},
                        "status": {
                            "type": "string",
                            "description": "Status",
                            "enum": ["active", "inactive", "pending"],
                            "default": "active"
                        },
                        "verified": {"type": "boolean", "description": "Verified", "default": true}
                    }
                }
            }),
        )
        .await
    }

    /// Ask the user to choose in each of the five enum shapes of SEP-1330: untitled and titled
    /// single-select, legacy `enumNames`, untitled and titled multi-select (scenario
    /// `elicitation-sep1330-enums`).
    #[tool(read_only, open_world = false)]
    async fn test_elicitation_sep1330_enums(ctx: Context) -> Result<String, ToolError> {
        elicit_and_tell(
            &ctx,
            "Elicitation completed",
            json!({
                "message": "Please choose",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "untitledSingle": {
                            "type": "string",
                            "enum": ["option1", "option2", "option3"]
                        },
                        "titledSingle": {
                            "type": "string",
                            "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"}
                            ]
                        },
                        "legacyEnum": {
                            "type": "string",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {
                            "type": "array",
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                        },
                        "titledMulti": {
                            "type": "array",
                            "items": {
                                "anyOf": [
                                    {"const": "value1", "title": "First Choice"},
                                    {"const": "value2", "title": "Second Choice"},
                                    {"const": "value3", "title": "Third Choice"}
                                ]
                            }
                        }
                    }
                }
            }),
        )
        .await
    }

    /// Ask the client's model for a word, which needs the `sampling` capability (scenario
    /// `server-stateless`): the host answers a 2026-07-28 request that did not declare it with
    /// `MissingRequiredClientCapability` (`-32021`).
    #[tool(read_only, open_world = false)]
    async fn test_missing_capability(ctx: Context) -> Result<String, ToolError> {
        ctx.sample(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "A word?"}}],
            "maxTokens": 10
        }))
        .await?;
        Ok("Required capability declared".to_owned())
    }

    /// Ask the user for a value (scenario `server-stateless`, which checks that the call's
    /// stream carries no request of the server's own: a 2026-07-28 request gets an
    /// input-required result instead).
    #[tool(read_only, open_world = false)]
    async fn test_streaming_elicitation(ctx: Context) -> Result<String, ToolError> {
        elicit_and_tell(
            &ctx,
            "Elicitation completed",
            ask_for("Provide a value", "value", "string"),
        )
        .await
    }

    /// Ask the user's name and greet them (scenarios `input-required-result-basic-elicitation`,
    /// `-missing-input-response`, `-result-type`, `-ignore-extra-params`, `-validate-input`).
    #[tool(read_only, open_world = false)]
    async fn test_input_required_result_elicitation(ctx: Context) -> Result<String, ToolError> {
        greet_by_name(&ctx).await
    }

    /// Ask the client's model a question and tell its answer (scenario
    /// `input-required-result-basic-sampling`).
    #[tool(read_only, open_world = false)]
    async fn test_input_required_result_sampling(ctx: Context) -> Result<String, ToolError> {
        ask_the_capital(&ctx).await
    }

    /// Ask for the client's roots and name them (scenario
    /// `input-required-result-basic-list-roots`).
    #[tool(read_only, open_world = false)]
    async fn test_input_required_result_list_roots(ctx: Context) -> Result<String, ToolError> {
        let answers = ctx.ask(Inputs::new().list_roots("client_roots")).await?;
        Ok(format!("Roots: {}", roots(&answers, "client_roots")))
    }

    /// Ask for a confirmation; the host seals the answers of each round into `requestState`
    /// and verifies it on the next, so an answer here follows a verified state (scenario
    /// `input-required-result-request-state`).
    #[tool(read_only, open_world = false)]
    async fn test_input_required_result_request_state(ctx: Context) -> Result<String, ToolError> {
        let answers = ctx.ask(Inputs::new().elicit("confirm", confirm())).await?;
        Ok(format!(
            "state-ok: confirmed={}",
            accepted(&answers, "confirm", "ok")
        ))
    }

    /// Ask for a name, a greeting from the model and the roots in one round (scenario
    /// `input-required-result-multiple-input-requests`).
    #[tool(read_only, open_world = false)]
    async fn test_input_required_result_multiple_inputs(ctx: Context) -> Result<String, ToolError> {
        let inputs = Inputs::new()
            .elicit("user_name", ask_name("What is your name?"))
            .sample(
                "greeting",
                json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                    "maxTokens": 50
                }),
            )
            .list_roots("client_roots");
        let answers = ctx.ask(inputs).await?;
        Ok(format!(
            "{} {}! Roots: {}",
            sampled(&answers, "greeting"),
            accepted(&answers, "user_name", "name"),
            roots(&answers, "client_roots")
        ))
    }

    /// Ask a name, then a colour: two rounds, the first answer carried in the state (scenario
    /// `input-required-result-multi-round`).
    #[tool(read_only, open_world = false)]
    async fn test_input_required_result_multi_round(ctx: Context) -> Result<String, ToolError> {
        let name = ask_field(&ctx, "step1", "Step 1: What is your name?", "name").await?;
        let colour = ask_field(
            &ctx,
            "step2",
            "Step 2: What is your favorite color?",
            "color",
        )
        .await?;
        Ok(format!("{name} likes {colour}"))
    }

    /// Ask for a confirmation; a tampered `requestState` is refused by the host before this
    /// runs again (scenario `input-required-result-tampered-state`).
    #[tool(read_only, open_world = false)]
    async fn test_input_required_result_tampered_state(ctx: Context) -> Result<String, ToolError> {
        let answers = ctx.ask(Inputs::new().elicit("confirm", confirm())).await?;
        Ok(format!("confirmed={}", accepted(&answers, "confirm", "ok")))
    }

    /// Ask the user if the client can be asked, else its model (scenario
    /// `input-required-result-capability-check`).
    #[tool(read_only, open_world = false)]
    async fn test_input_required_result_capabilities(ctx: Context) -> Result<String, ToolError> {
        if ctx.client_capabilities().get("elicitation").is_some() {
            return greet_by_name(&ctx).await;
        }
        ask_the_capital(&ctx).await
    }

    /// Turn `test_dynamic_tool` off, or on again: the tool list changes (scenario
    /// `server-stateless`, whose listen stream hears `notifications/tools/list_changed`).
    #[tool(open_world = false)]
    fn test_trigger_tool_change(&self, ctx: &Context) -> String {
        let off = !self.tool_off.fetch_xor(true, Ordering::SeqCst);
        ctx.set_tool_available("test_dynamic_tool", !off);
        format!("test_dynamic_tool is {}", if off { "off" } else { "on" })
    }

    /// Turn `test_dynamic_prompt` off, or on again: the prompt list changes (scenario
    /// `server-stateless`).
    #[tool(open_world = false)]
    fn test_trigger_prompt_change(&self, ctx: &Context) -> String {
        let off = !self.prompt_off.fetch_xor(true, Ordering::SeqCst);
        ctx.set_prompt_available("test_dynamic_prompt", !off);
        format!("test_dynamic_prompt is {}", if off { "off" } else { "on" })
    }

    /// A tool `test_trigger_tool_change` turns off and on.
    #[tool(read_only, idempotent, open_world = false)]
    fn test_dynamic_tool() -> String {
        "still here".to_owned()
    }

    /// Log one `info` message (scenario `server-stateless`): a 2026-07-28 request gets it only
    /// when its own `logLevel` lets `info` through.
    #[tool(read_only, idempotent, open_world = false)]
    fn test_logging_tool(ctx: &Context) -> String {
        ctx.info("logLevel was requested");
        "Logging tool completed".to_owned()
    }

    /// Wait a little, then answer (scenario `server-sse-polling`, which calls it and reads the
    /// answer from the SSE stream, resuming the stream if the server closed it).
    #[tool(read_only, idempotent, open_world = false)]
    async fn test_reconnection() -> String {
        plugin_api::tokio::time::sleep(Duration::from_millis(100)).await;
        "Reconnection test completed".to_owned()
    }

    /// Greet by name (scenario `json-schema-2020-12`). Its input schema is written out and
    /// must be listed unchanged: `$schema`, `$defs` with an `$anchor` and a `$ref`, `allOf`,
    /// `if`/`then`/`else` and `additionalProperties: false`, which a schema generated from
    /// argument types would not say.
    #[tool(
        description = "Tool with JSON Schema 2020-12 features",
        input_schema = r##"{
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "address",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
            "if": {"required": ["address"]},
            "then": {"properties": {"address": {"required": ["street"]}}},
            "else": {"required": ["name"]},
            "additionalProperties": false
        }"##
    )]
    fn json_schema_2020_12_tool(name: Option<String>, address: Option<Value>) -> String {
        let whom = name.or_else(|| Some(address?["street"].as_str()?.to_owned()));
        format!("Hello, {}!", whom.as_deref().unwrap_or("world"))
    }

    /// A static text resource (scenario `resources-read-text`).
    #[resource(
        uri = "test://static-text",
        title = "Static text",
        mime_type = "text/plain"
    )]
    fn static_text(&self) -> String {
        "This is the content of the static text resource.".to_owned()
    }

    /// A static binary resource: a PNG image (scenario `resources-read-binary`).
    #[resource(
        uri = "test://static-binary",
        title = "Static binary",
        mime_type = "image/png"
    )]
    fn static_binary(&self) -> Vec<u8> {
        RED_PIXEL_PNG.to_vec()
    }

    /// A resource clients subscribe to (scenarios `resources-subscribe`, `resources-unsubscribe`).
    #[resource(
        uri = "test://watched-resource",
        title = "Watched resource",
        mime_type = "text/plain"
    )]
    fn watched_resource(&self) -> String {
        "This resource is watched for updates.".to_owned()
    }

    /// Data for an id, read from the URI (scenario `resources-templates-read`).
    #[resource_template(
        uri_template = "test://template/{id}/data",
        title = "Data by id",
        mime_type = "application/json"
    )]
    fn template_data(&self, id: String) -> String {
        // In the scenario's own key order (a `json!` object would sort its keys).
        let data = format!("Data for ID: {id}");
        format!(
            r#"{{"id":{},"templateTest":true,"data":{}}}"#,
            json!(id),
            json!(data)
        )
    }

    /// Ask the user what context the prompt should use, then use it (scenario
    /// `input-required-result-non-tool-request`).
    #[prompt(title = "Prompt asking for input")]
    async fn test_input_required_result_prompt(&self, ctx: Context) -> Result<String, ToolError> {
        let context = ask_field(
            &ctx,
            "user_context",
            "What context should the prompt use?",
            "context",
        )
        .await?;
        Ok(format!("Answer with this context in mind: {context}"))
    }

    /// A prompt `test_trigger_prompt_change` turns off and on.
    #[prompt(title = "Dynamic prompt")]
    fn test_dynamic_prompt(&self) -> String {
        "A prompt that comes and goes.".to_owned()
    }

    /// A prompt without arguments (scenario `prompts-get-simple`).
    #[prompt(title = "Simple prompt")]
    fn test_simple_prompt(&self) -> String {
        "This is a simple prompt for testing.".to_owned()
    }

    /// A prompt with two arguments, written into its text (scenario `prompts-get-with-args`).
    #[prompt(title = "Prompt with arguments")]
    fn test_prompt_with_arguments(
        &self,
        /// First test argument.
        arg1: String,
        /// Second test argument.
        arg2: String,
    ) -> String {
        format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
    }

    /// A prompt embedding the resource it is given (scenario `prompts-get-embedded-resource`).
    #[prompt(title = "Prompt with an embedded resource")]
    fn test_prompt_with_embedded_resource(
        &self,
        /// URI of the resource to embed.
        #[arg(rename = "resourceUri")]
        resource_uri: String,
    ) -> Vec<PromptMessage> {
        vec![
            PromptMessage::user(
                ResourceContents::text(resource_uri, "Embedded resource content for testing.")
                    .with_mime_type("text/plain"),
            ),
            PromptMessage::user("Please process the embedded resource above."),
        ]
    }

    /// A prompt with an image (scenario `prompts-get-with-image`).
    #[prompt(title = "Prompt with an image")]
    fn test_prompt_with_image(&self) -> Vec<PromptMessage> {
        vec![
            PromptMessage::user(png()),
            PromptMessage::user("Please analyze the image above."),
        ]
    }

    /// Values for `arg1` of `test_prompt_with_arguments` that start with what was typed
    /// (scenario `completion-complete`).
    #[complete(prompt = "test_prompt_with_arguments", argument = "arg1")]
    fn complete_arg1(&self, value: String) -> Vec<String> {
        starting_with(&["paris", "park", "party", "test", "testValue1"], &value)
    }

    /// Values for `arg2` of `test_prompt_with_arguments`, knowing `arg1`.
    #[complete(prompt = "test_prompt_with_arguments", argument = "arg2")]
    fn complete_arg2(&self, value: String, given: HashMap<String, String>) -> Vec<String> {
        let arg1 = given.get("arg1").map_or("", String::as_str);
        let candidates = [
            format!("{arg1}-1"),
            format!("{arg1}-2"),
            "testValue2".to_owned(),
        ];
        let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
        starting_with(&candidates, &value)
    }

    /// Ids for `test://template/{id}/data`.
    #[complete(resource = "test://template/{id}/data", argument = "id")]
    fn complete_id(&self, value: String) -> Vec<String> {
        starting_with(&["1", "2", "3", "123"], &value)
    }

    // The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): the fixtures of the
    // `tasks-*` scenarios. The host runs a `task` tool as a task for clients that declared the
    // extension; the tools themselves are plain.

    /// Greet by name, never as a task (scenarios `tasks-*`).
    #[tool(read_only, idempotent, open_world = false)]
    fn greet(
        /// Whom to greet.
        name: String,
    ) -> String {
        format!("Hello, {name}!")
    }

    /// Wait `seconds`, then say so; a task for clients that take one, cancelled by
    /// `tasks/cancel` (scenarios `tasks-lifecycle`, `tasks-wire-fields`, ...).
    #[tool(read_only, idempotent, open_world = false, task = "optional")]
    async fn slow_compute(
        /// How long to wait.
        seconds: Option<f64>,
        /// What to call the computation.
        label: Option<String>,
    ) -> String {
        let seconds = seconds.unwrap_or(1.0).clamp(0.0, 60.0);
        plugin_api::tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        let label = label.as_deref().unwrap_or("compute");
        format!("slow_compute({label}) done after {seconds}s")
    }

    /// Fail as a tool after a second: a task that completes with `isError` (scenarios
    /// `tasks-lifecycle`, `tasks-required-task-error`); only ever a task.
    #[tool(read_only, open_world = false, task = "required")]
    async fn failing_job() -> Result<String, ToolError> {
        plugin_api::tokio::time::sleep(Duration::from_secs(1)).await;
        Err(ToolError::new(
            "failing_job: intentional tool execution error",
        ))
    }

    /// Panic after 200 ms: a task that fails with a protocol error (scenario
    /// `tasks-lifecycle`).
    #[tool(read_only, open_world = false, task = "optional")]
    async fn protocol_error_job() -> String {
        plugin_api::tokio::time::sleep(Duration::from_millis(200)).await;
        panic!("protocol_error_job: intentional protocol-level failure")
    }

    /// Ask the user's name in input-required rounds, then become a task that greets them
    /// (scenario `tasks-mrtr-composition`).
    #[tool(read_only, open_world = false, task = "required", input_first)]
    async fn test_tool_with_task(ctx: Context) -> Result<String, ToolError> {
        let name = ask_field(&ctx, "user_name", "What is your name?", "name").await?;
        ctx.run_as_task().await;
        Ok(format!("Hello, {name}!"))
    }

    /// Ask the user to confirm deleting `filename` (scenario `tasks-mrtr-input`): as a task,
    /// the request waits in `inputRequests` until `tasks/update` answers it.
    #[tool(open_world = false, task = "required")]
    async fn confirm_delete(
        /// The file to delete.
        filename: Option<String>,
        ctx: Context,
    ) -> Result<String, ToolError> {
        let filename = filename.unwrap_or_else(|| "file.txt".to_owned());
        let answer = ctx
            .elicit(json!({
                "message": format!("Delete {filename}?"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"]
                }
            }))
            .await?;
        let confirmed = answer["content"]["confirm"].as_bool().unwrap_or(false);
        Ok(format!(
            "confirm_delete({filename}): confirmed = {confirmed}"
        ))
    }

    /// Ask for two values at once (scenario `tasks-mrtr-input`: both wait in `inputRequests`,
    /// and answering one leaves the other).
    #[tool(read_only, open_world = false, task = "required")]
    async fn multi_input(ctx: Context) -> Result<String, ToolError> {
        let ask = |which: &str| {
            ctx.elicit(json!({
                "message": format!("Provide value {which}"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {"value": {"type": "string"}},
                    "required": ["value"]
                }
            }))
        };
        let (a, b) = plugin_api::tokio::join!(ask("A"), ask("B"));
        let value = |answer: &Value| {
            answer["content"]["value"]
                .as_str()
                .unwrap_or("(none)")
                .to_owned()
        };
        Ok(format!(
            "multi_input: a = {}, b = {}",
            value(&a?),
            value(&b?)
        ))
    }
}

/// The red pixel as an image block.
fn png() -> Content {
    Content::image(STANDARD.encode(RED_PIXEL_PNG), "image/png")
}

/// Asks the user with these `elicitation/create` params, and tells the answer after `said`.
async fn elicit_and_tell(ctx: &Context, said: &str, params: Value) -> Result<String, ToolError> {
    let answer = ctx.elicit(params).await?;
    Ok(format!("{said}: {}", elicited(&answer)))
}

/// `action=ACTION, content=JSON` of an elicitation's answer.
fn elicited(answer: &Value) -> String {
    let action = answer["action"].as_str().unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or(Value::Null);
    format!("action={action}, content={content}")
}

/// `elicitation/create` params asking, with `message`, for one field of type `kind`.
fn ask_for(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {field: {"type": kind}},
            "required": [field]
        }
    })
}

/// Asks the user's name (`user_name`) and greets them.
async fn greet_by_name(ctx: &Context) -> Result<String, ToolError> {
    let name = ask_field(ctx, "user_name", "What is your name?", "name").await?;
    Ok(format!("Hello, {name}!"))
}

/// Asks the client's model the capital of France (`capital_question`) and tells its answer.
async fn ask_the_capital(ctx: &Context) -> Result<String, ToolError> {
    let answers = ctx
        .ask(Inputs::new().sample("capital_question", capital_question()))
        .await?;
    Ok(format!(
        "The model said: {}",
        sampled(&answers, "capital_question")
    ))
}

/// Asks the user, under `key`, for one text `field` with `message`: the field they gave, or
/// `nobody` when they declined.
async fn ask_field(
    ctx: &Context,
    key: &str,
    message: &str,
    field: &str,
) -> Result<String, ToolError> {
    let answers = ctx
        .ask(Inputs::new().elicit(key, ask_for(message, field, "string")))
        .await?;
    Ok(accepted(&answers, key, field))
}

/// `elicitation/create` params asking for a name with `message`.
fn ask_name(message: &str) -> Value {
    ask_for(message, "name", "string")
}

/// `elicitation/create` params asking for a confirmation.
fn confirm() -> Value {
    ask_for("Please confirm", "ok", "boolean")
}

/// `sampling/createMessage` params asking the capital of France.
fn capital_question() -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        "maxTokens": 100
    })
}

/// The field `field` of the elicitation accepted under `key`, or `nobody` when declined.
fn accepted(answers: &Answers, key: &str, field: &str) -> String {
    match answers.accepted(key) {
        Some(content) => match &content[field] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        },
        None => "nobody".to_owned(),
    }
}

/// The text the model answered under `key`.
fn sampled(answers: &Answers, key: &str) -> String {
    let answer = answers.get(key).cloned().unwrap_or_default();
    answer["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The URIs of the roots answered under `key`, comma-separated.
fn roots(answers: &Answers, key: &str) -> String {
    let answer = answers.get(key).cloned().unwrap_or_default();
    let uris: Vec<&str> = answer["roots"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|root| root["uri"].as_str())
        .collect();
    uris.join(", ")
}

/// The candidates that start with `prefix`, in order.
fn starting_with(candidates: &[&str], prefix: &str) -> Vec<String> {
    candidates
        .iter()
        .filter(|c| c.starts_with(prefix))
        .map(|c| (*c).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_media_are_what_their_mime_types_say() {
        assert!(RED_PIXEL_PNG.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(RED_PIXEL_PNG.ends_with(b"IEND\xae\x42\x60\x82"));
        assert!(SILENCE_WAV.starts_with(b"RIFF") && &SILENCE_WAV[8..12] == b"WAVE");
        // RIFF's size field counts the bytes after it.
        assert_eq!(
            u32::from_le_bytes(SILENCE_WAV[4..8].try_into().unwrap()) as usize,
            SILENCE_WAV.len() - 8
        );
    }

    #[test]
    fn completions_keep_the_candidates_starting_with_the_value() {
        assert_eq!(
            starting_with(&["paris", "park", "test"], "par"),
            ["paris", "park"]
        );
        assert!(starting_with(&["paris"], "x").is_empty());
    }

    #[test]
    fn template_data_is_json_naming_the_id() {
        let text = Conformance::default().template_data("1\"2".to_owned());
        assert_eq!(
            text,
            r#"{"id":"1\"2","templateTest":true,"data":"Data for ID: 1\"2"}"#
        );
        let parsed: Value = text.parse().unwrap();
        assert_eq!(parsed["id"], "1\"2");
    }

    #[test]
    fn an_elicitation_answer_is_told_with_its_action_and_content() {
        assert_eq!(
            elicited(&json!({"action": "accept", "content": {"username": "u"}})),
            r#"action=accept, content={"username":"u"}"#
        );
        assert_eq!(
            elicited(&json!({"action": "decline"})),
            "action=decline, content=null"
        );
    }
}
