//! What crosses an isolated plugin's pipe besides MCP itself: who calls, and what the tool
//! answered.
//!
//! The parent puts the calling request's session, active toolsets, client capabilities and
//! authenticated caller (name and scopes) under [`CALLER_META`] in each call's `_meta` ([`caller_meta`]); the child gives its plugin a
//! `Context` that answers with them ([`RelayedCaller`]), so a plugin keyed by session, or asking
//! which toolsets are active, sees the real caller rather than the parent.
//!
//! The child makes each MCP result as any host does, and when the tool answered a plain value
//! or an error, it adds what it was under [`OUTPUT_META`] in the result's `_meta`:
//! `{"value": V}` or `{"error": {"kind": K, "message": M}}`. The parent reads it back
//! ([`output_of`]), so a wrapper of the isolated tool gets the value (or error) itself, not the
//! result made from it, and the parent's result is made from it again, as in process.
//!
//! A child's tool asks for input through the parent in one request, [`ASK_METHOD`], carrying
//! every keyed request of one `ask`: the parent checks its client's capabilities, and asks its
//! client (2025-11-25) or answers from the call's round or ends the call for the missing
//! inputs (2026-07-28), as for a plugin in process.

use plugin_abi::{ErrorKind, FfiError, FfiLogEvent, FfiOutput, HostContextBox, OutputKind};
use rmcp::model::{CallToolResult, ClientCapabilities, ProgressToken};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::outcome::{CallError, CallOutput};

/// The `_meta` key of a call to a child that says who calls.
pub(crate) const CALLER_META: &str = "io.reactor-mcp/caller";

/// The request a child's call stands for, as the parent saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RelayedCaller {
    /// Its session, if it has one.
    pub(crate) session: Option<String>,
    /// Its active toolsets.
    pub(crate) active: Vec<String>,
    /// The capabilities its client declared.
    pub(crate) capabilities: Option<ClientCapabilities>,
    /// Who the parent authenticated (`crate::auth`), if it authenticates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) identity: Option<Authenticated>,
}

/// An authenticated caller as a child sees it: its name and scopes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Authenticated {
    /// The key's name or the token's subject.
    pub(crate) name: String,
    /// The token's scopes.
    pub(crate) scopes: Vec<String>,
}

/// Who calls, as `context` says, for [`CALLER_META`].
pub(crate) fn caller_meta(context: &HostContextBox) -> Value {
    let caller = RelayedCaller {
        session: context.session().into_option().map(Into::into),
        active: context
            .active_toolsets()
            .into_iter()
            .map(Into::into)
            .collect(),
        capabilities: serde_json::from_str(&context.client_capabilities()).ok(),
        identity: context
            .caller_name()
            .into_option()
            .map(|name| Authenticated {
                name: name.into(),
                scopes: context
                    .caller_scopes()
                    .into_iter()
                    .map(Into::into)
                    .collect(),
            }),
    };
    serde_json::to_value(caller).unwrap_or_default()
}

/// Who calls, from a request's `_meta`; `None` when it does not say.
pub(crate) fn caller_of(meta: &serde_json::Map<String, Value>) -> Option<RelayedCaller> {
    serde_json::from_value(meta.get(CALLER_META)?.clone()).ok()
}

/// The method of a child's request for input: its params are keyed requests
/// (`{key: {"method": ..., "params": ...}}`), which the parent asks its own client for
/// (`HostContext::ask`), and its result the answers under the same keys.
pub(crate) const ASK_METHOD: &str = "io.reactor-mcp/ask";

/// The method of a child's request that its call become a task (`Context::run_as_task`): the
/// parent ends the call it made when that call may become a task, and answers otherwise.
pub(crate) const TASK_METHOD: &str = "io.reactor-mcp/run-as-task";

/// The method of a child's request saying its plugin turned one of its contributions on or off
/// (`{"kind": "tool" | "prompt" | "resource" | "resource_template", "name": ..., "available":
/// ...}`): the parent, which serves them, does it.
pub(crate) const AVAILABILITY_METHOD: &str = "io.reactor-mcp/set-available";

/// The method of a child's notification carrying one of its plugin's log events (a `tracing`
/// event or `log` record): `{"level": 1-5, "target": ..., "message": ..., "fields": {...}}`,
/// with the `progressToken` of the call that made it when a call did. The parent writes it to
/// its log under the plugin's name (never the name the child says), in that call's span.
pub(crate) const PLUGIN_LOG_METHOD: &str = "notifications/io.reactor-mcp/plugin-log";

/// The params of a [`PLUGIN_LOG_METHOD`] notification for `event`, made during the call sent
/// under `token` when there is one.
pub(crate) fn plugin_log_params(event: &FfiLogEvent<'_>, token: Option<&ProgressToken>) -> Value {
    let fields: Value = serde_json::from_str(event.fields_json.as_str())
        .unwrap_or_else(|_| Value::Object(serde_json::Map::new()));
    let mut params = json!({
        "level": event.level,
        "target": event.target.as_str(),
        "message": event.message.as_str(),
        "fields": fields,
    });
    if let Some(token) = token {
        params["progressToken"] = serde_json::to_value(token).unwrap_or_default();
    }
    params
}

/// A [`PLUGIN_LOG_METHOD`] notification's event, read back; `None` when the params are not
/// one.
pub(crate) fn plugin_log_of(params: &Value) -> Option<PluginLog> {
    Some(PluginLog {
        token: params
            .get("progressToken")
            .and_then(|t| serde_json::from_value(t.clone()).ok()),
        level: u8::try_from(params.get("level")?.as_u64()?).ok()?,
        target: params.get("target")?.as_str()?.to_owned(),
        message: params.get("message")?.as_str()?.to_owned(),
        fields_json: params
            .get("fields")
            .map(Value::to_string)
            .unwrap_or_default(),
    })
}

/// A child's plugin log event, as the parent reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PluginLog {
    /// The progress token of the call that made it, if a call did.
    pub(crate) token: Option<ProgressToken>,
    /// Its level ([`plugin_abi::TraceLevel`]'s number).
    pub(crate) level: u8,
    /// Its target in the plugin.
    pub(crate) target: String,
    /// Its message.
    pub(crate) message: String,
    /// Its other fields, a JSON object.
    pub(crate) fields_json: String,
}

impl PluginLog {
    /// The event, as plugin `plugin`'s.
    pub(crate) fn event<'a>(&'a self, plugin: &'a str) -> FfiLogEvent<'a> {
        FfiLogEvent {
            plugin: plugin.into(),
            level: self.level,
            target: self.target.as_str().into(),
            message: self.message.as_str().into(),
            fields_json: self.fields_json.as_str().into(),
        }
    }
}

/// The `_meta` key of a child's results that says what the tool answered.
pub(crate) const OUTPUT_META: &str = "io.reactor-mcp/output";

/// What `outcome` is, for [`OUTPUT_META`]; `None` for a result the tool built itself.
pub(crate) fn output_meta(outcome: &Result<CallOutput, CallError>) -> Option<Value> {
    match outcome {
        Ok(CallOutput::Value(value)) => Some(json!({ "value": value })),
        Ok(CallOutput::Result(_)) => None,
        Err(error) => {
            let kind = match error {
                CallError::InvalidArguments(_) => "invalid_arguments",
                CallError::Panicked(_) => "panicked",
                CallError::Cancelled(_) => "cancelled",
                CallError::NotFound(_) => "not_found",
                CallError::Tool(_) | CallError::BadOutput { .. } => "tool",
            };
            Some(json!({ "error": { "kind": kind, "message": error.to_string() } }))
        }
    }
}

/// What a child's `result` says the tool answered; `None` when it does not say (a result the
/// tool built, or a server that is not a child of ours).
pub(crate) fn output_of(result: &CallToolResult) -> Option<Result<FfiOutput, FfiError>> {
    let output = result.meta.as_ref()?.get(OUTPUT_META)?;
    if let Some(value) = output.get("value") {
        return Some(Ok(FfiOutput {
            kind: OutputKind::Value,
            json: value.to_string().into(),
        }));
    }
    let error = output.get("error")?;
    let kind = match error.get("kind")?.as_str()? {
        "invalid_arguments" => ErrorKind::InvalidArguments,
        "panicked" => ErrorKind::Panicked,
        "cancelled" => ErrorKind::Cancelled,
        "not_found" => ErrorKind::NotFound,
        _ => ErrorKind::Tool,
    };
    Some(Err(FfiError::new(kind, error.get("message")?.as_str()?)))
}

#[cfg(test)]
mod tests {
    use rmcp::model::MetaObject;

    use super::*;

    fn crossed(outcome: Result<CallOutput, CallError>) -> Option<Result<FfiOutput, FfiError>> {
        let mut result = CallToolResult::success(Vec::new());
        let mut meta = MetaObject::new();
        meta.insert(OUTPUT_META.to_owned(), output_meta(&outcome)?);
        result.meta = Some(meta);
        output_of(&result)
    }

    #[test]
    fn a_plugin_log_event_crosses_with_its_calls_token() {
        let event = FfiLogEvent {
            plugin: "claimed".into(),
            level: 3,
            target: "fixture::tools".into(),
            message: "counting".into(),
            fields_json: r#"{"n":3}"#.into(),
        };
        let token = ProgressToken(rmcp::model::NumberOrString::Number(7));
        let params = plugin_log_params(&event, Some(&token));
        let read = plugin_log_of(&params).unwrap();
        assert_eq!(read.token, Some(token));
        assert_eq!(
            read.event("real"),
            FfiLogEvent {
                plugin: "real".into(),
                ..event
            }
        );
        let outside = plugin_log_of(&plugin_log_params(&event, None)).unwrap();
        assert_eq!(outside.token, None);
        assert_eq!(plugin_log_of(&json!({"level": 3})), None);
    }

    #[test]
    fn values_and_errors_cross_as_they_were() {
        let value = crossed(Ok(CallOutput::Value(json!([1, "a"]))))
            .unwrap()
            .unwrap();
        assert_eq!(value.kind, OutputKind::Value);
        assert_eq!(value.json.as_str(), r#"[1,"a"]"#);
        let error = crossed(Err(CallError::InvalidArguments(
            "`x` is missing".to_owned(),
        )))
        .unwrap()
        .unwrap_err();
        assert_eq!(
            error,
            FfiError::new(ErrorKind::InvalidArguments, "`x` is missing")
        );
        assert!(crossed(Ok(CallOutput::Result("{}".to_owned()))).is_none());
        assert!(output_of(&CallToolResult::success(Vec::new())).is_none());
    }
}
