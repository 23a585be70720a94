//! The parameters of a request of a known MCP method, checked: rmcp takes a request whose
//! `params` do not fit its method as a custom request; [`invalid_params`] turns it into the
//! `-32602` the specification gives, naming the field (`tools/call: params.name: invalid type:
//! integer `5`, expected a string`). In 2026-07-28, a method it removed is not found
//! ([`removed_in_2026`]).

#[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
use rmcp::model::SetLevelRequestParams;
use rmcp::{
    ErrorData,
    model::{
        CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams,
        InitializeRequestParams, PaginatedRequestParams, ReadResourceRequestParams,
        SubscribeRequestParams, UnsubscribeRequestParams,
    },
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The `-32602` for a request of a known MCP method whose `params` do not deserialize into
/// that method's parameters, naming the field; `None` for any other method.
pub(crate) fn invalid_params(method: &str, params: Option<&Value>) -> Option<ErrorData> {
    #[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
    let check: fn(&Value) -> Result<(), String> = match method {
        "initialize" => fits::<InitializeRequestParams>,
        "tools/call" => fits::<CallToolRequestParams>,
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            fits::<Option<PaginatedRequestParams>>
        }
        "resources/read" => fits::<ReadResourceRequestParams>,
        "resources/subscribe" => fits::<SubscribeRequestParams>,
        "resources/unsubscribe" => fits::<UnsubscribeRequestParams>,
        "prompts/get" => fits::<GetPromptRequestParams>,
        "completion/complete" => fits::<CompleteRequestParams>,
        "logging/setLevel" => fits::<SetLevelRequestParams>,
        _ => return None,
    };
    let params = params.cloned().unwrap_or(Value::Null);
    let reason = check(&params).err().unwrap_or_else(|| {
        "the parameters do not fit the method (check their fields and types)".to_owned()
    });
    Some(ErrorData::invalid_params(
        format!("Invalid params for `{method}`: {reason}"),
        None,
    ))
}

/// Whether 2026-07-28 removed `method` (sessions and their set-up are gone; subscriptions go
/// through `subscriptions/listen`).
pub(crate) fn removed_in_2026(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
    )
}

/// Whether `params` deserializes as `T`; the error names the path of the field that does not.
fn fits<T: DeserializeOwned>(params: &Value) -> Result<(), String> {
    serde_path_to_error::deserialize::<_, T>(params)
        .map(drop)
        .map_err(|error| match error.path().to_string().as_str() {
            "." => format!("params: {}", error.inner()),
            path => format!("params.{path}: {}", error.inner()),
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use rmcp::model::ErrorCode;

    use super::*;

    #[test]
    fn params_that_do_not_fit_name_the_field() {
        let error = invalid_params("tools/call", Some(&json!({"name": 5}))).unwrap();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error
                .message
                .starts_with("Invalid params for `tools/call`: params.name: invalid type"),
            "{}",
            error.message
        );
        let error = invalid_params(
            "tools/call",
            Some(&json!({"name": "echo", "arguments": []})),
        )
        .unwrap();
        assert!(
            error.message.contains("params.arguments"),
            "{}",
            error.message
        );
        let error = invalid_params("logging/setLevel", Some(&json!({"level": "loud"}))).unwrap();
        assert!(error.message.contains("params.level"), "{}", error.message);
        let error = invalid_params("resources/read", None).unwrap();
        assert!(
            error.message.contains("params: invalid type: null"),
            "{}",
            error.message
        );
    }

    #[test]
    fn other_methods_are_not_invalid_params() {
        assert!(invalid_params("no/such", Some(&json!({}))).is_none());
        assert!(invalid_params("sampling/createMessage", None).is_none());
    }
}
