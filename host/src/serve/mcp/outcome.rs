//! A plugin call's outcome as MCP sees it: a tool's answer or error becomes a `CallToolResult`;
//! a panic names the tool once; a capability the client lacks is the protocol's error.

use rmcp::{
    ErrorData,
    model::{CallToolResult, ContentBlock, ResultType},
};
use serde_json::{Value, json};

use crate::call::{CallError, CallOutput};

/// `MissingRequiredClientCapability` (`-32021`) for `capability` (`sampling`, ...).
pub(super) fn missing_capability(capability: &str) -> ErrorData {
    let required = serde_json::from_value(json!({capability: {}})).unwrap_or_default();
    ErrorData::missing_required_client_capability(required)
}

/// What a panic of `tool` says: its message, naming the tool once.
pub(super) fn panicked(tool: &str, message: String) -> String {
    let prefix = format!("tool {tool} panicked");
    if message.starts_with(&prefix) {
        message
    } else {
        format!("{prefix}: {message}")
    }
}

/// A tool result that reports an error to the model.
pub(super) fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A plugin's answer as a tool result: an object as structured content plus its JSON as text, a
/// string as text, anything else as its JSON text; a result the tool built as it is, once it
/// reads as a `CallToolResult`; errors as `isError` results.
///
/// Every result says `resultType: "complete"`, which 2026-07-28 requires: rmcp's constructors
/// set it, but a result read from a plugin's JSON has it only if the plugin wrote it, so it is
/// filled in here. rmcp strips it again for clients of older versions.
pub(crate) fn call_result(tool: &str, outcome: Result<CallOutput, CallError>) -> CallToolResult {
    match outcome {
        Ok(CallOutput::Value(Value::Object(object))) => {
            CallToolResult::structured(Value::Object(object))
        }
        Ok(CallOutput::Value(Value::String(text))) => {
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
        Ok(CallOutput::Value(other)) => {
            CallToolResult::success(vec![ContentBlock::text(other.to_string())])
        }
        Ok(CallOutput::Result(json)) => match serde_json::from_str::<CallToolResult>(&json) {
            Ok(mut result) => {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                result
            }
            Err(e) => error_result(format!(
                "tool {tool} returned a result that is not a valid CallToolResult: {e}"
            )),
        },
        Err(CallError::Panicked(message)) => error_result(panicked(tool, message)),
        Err(error) => error_result(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use rmcp::model::ErrorCode;

    use super::*;

    fn object(json: Value) -> Map<String, Value> {
        match json {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn wire(result: CallToolResult) -> Value {
        let mut value = serde_json::to_value(result).unwrap();
        value.as_object_mut().unwrap().remove("resultType");
        value
    }

    #[test]
    fn an_object_is_structured_content_plus_its_json_as_text() {
        let result = call_result(
            "t",
            Ok(CallOutput::Value(Value::Object(object(
                json!({"id": "sbx-1"}),
            )))),
        );
        assert_eq!(
            wire(result),
            json!({
                "content": [{"type": "text", "text": r#"{"id":"sbx-1"}"#}],
                "structuredContent": {"id": "sbx-1"},
                "isError": false
            })
        );
    }

    #[test]
    fn a_string_is_text() {
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!("slept 5 ms"))))),
            json!({"content": [{"type": "text", "text": "slept 5 ms"}], "isError": false})
        );
    }

    #[test]
    fn other_json_is_its_text() {
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!([1, 2]))))),
            json!({"content": [{"type": "text", "text": "[1,2]"}], "isError": false})
        );
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!(3.5))))),
            json!({"content": [{"type": "text", "text": "3.5"}], "isError": false})
        );
    }

    #[test]
    fn a_result_the_tool_built_is_complete() {
        let built = r#"{"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}"#;
        let result = call_result("t", Ok(CallOutput::Result(built.to_owned())));
        assert_eq!(result.result_type, Some(ResultType::COMPLETE));
        assert_eq!(
            serde_json::to_value(result).unwrap()["resultType"],
            "complete"
        );
    }

    #[test]
    fn a_tool_error_is_an_error_result_with_its_message() {
        assert_eq!(
            wire(call_result(
                "t",
                Err(CallError::Tool("no sandbox has id x".into()))
            )),
            json!({"content": [{"type": "text", "text": "no sandbox has id x"}], "isError": true})
        );
    }

    #[test]
    fn a_panic_names_the_tool_once() {
        let text = |r: CallToolResult| wire(r)["content"][0]["text"].clone();
        assert_eq!(
            text(call_result(
                "boom",
                Err(CallError::Panicked("tool boom panicked: kaboom".into()))
            )),
            "tool boom panicked: kaboom"
        );
        assert_eq!(
            text(call_result(
                "boom",
                Err(CallError::Panicked("kaboom".into()))
            )),
            "tool boom panicked: kaboom"
        );
    }

    #[test]
    fn a_missing_capability_is_named_as_an_object() {
        let error = missing_capability("sampling");
        assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            error.data,
            Some(json!({"requiredCapabilities": {"sampling": {}}}))
        );
    }
}
