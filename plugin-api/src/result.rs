//! Rich tool results: a [`ToolResult`] made of [`Content`] blocks (text, images, audio, embedded
//! resources, resource links), optional structured content, and an error flag.
//!
//! A tool returns any `Serialize` value and the host makes the MCP result from it (an object as
//! structured content, a string as text). A tool that wants more returns a [`ToolResult`]: it
//! crosses the ABI as the complete MCP `CallToolResult` JSON ([`OutputKind::Result`]) and the
//! host checks it and serves it as it is. [`IntoToolOutput`] is what tells the two apart, at
//! compile time.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::{
    error::ToolError,
    ffi::{FfiOutput, OutputKind},
};

/// One block of a tool result's `content`.
///
/// Binary data (images, audio, blobs) is given base64-encoded, as MCP carries it.
///
/// ```
/// use plugin_api::Content;
///
/// let link = Content::resource_link("file:///report.pdf", "report.pdf")
///     .with_mime_type("application/pdf")
///     .with_description("The full report");
/// assert_eq!(link.to_json()["type"], "resource_link");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Content(Map<String, Value>);

impl Content {
    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::of("text", json!({"text": text.into()}))
    }

    /// An image: base64 `data` of MIME type `mime_type` (`image/png`, ...).
    pub fn image(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::of(
            "image",
            json!({"data": data_base64.into(), "mimeType": mime_type.into()}),
        )
    }

    /// Audio: base64 `data` of MIME type `mime_type` (`audio/wav`, ...).
    pub fn audio(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::of(
            "audio",
            json!({"data": data_base64.into(), "mimeType": mime_type.into()}),
        )
    }

    /// An embedded text resource: its `uri`, MIME type and text.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::embedded(uri.into(), mime_type.into(), "text", text.into())
    }

    /// An embedded binary resource: its `uri`, MIME type and base64 contents.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        blob_base64: impl Into<String>,
    ) -> Self {
        Self::embedded(uri.into(), mime_type.into(), "blob", blob_base64.into())
    }

    fn embedded(uri: String, mime_type: String, key: &str, contents: String) -> Self {
        let mut resource = Map::new();
        resource.insert("uri".to_owned(), uri.into());
        resource.insert("mimeType".to_owned(), mime_type.into());
        resource.insert(key.to_owned(), contents.into());
        Self::of("resource", json!({ "resource": resource }))
    }

    /// A link to a resource the client may read (`resource_link`): its `uri` and `name`.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::of(
            "resource_link",
            json!({"uri": uri.into(), "name": name.into()}),
        )
    }

    /// A resource link's MIME type.
    pub fn with_mime_type(self, mime_type: impl Into<String>) -> Self {
        self.with("mimeType", mime_type.into())
    }

    /// A resource link's description.
    pub fn with_description(self, description: impl Into<String>) -> Self {
        self.with("description", description.into())
    }

    /// A resource link's human-readable title.
    pub fn with_title(self, title: impl Into<String>) -> Self {
        self.with("title", title.into())
    }

    /// MCP annotations of the block, e.g. `{"audience": ["user"], "priority": 0.5}`.
    pub fn with_annotations(self, annotations: Value) -> Self {
        self.with("annotations", annotations)
    }

    /// Sets any other field of the block (`_meta`, ...).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// The block as MCP JSON.
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.clone())
    }

    fn of(kind: &str, fields: Value) -> Self {
        let mut map = Map::new();
        map.insert("type".to_owned(), kind.into());
        if let Value::Object(fields) = fields {
            map.extend(fields);
        }
        Self(map)
    }
}

/// A complete tool result, built by the tool: content blocks, optional structured content, and
/// whether it reports an error. Return it (or `Result<ToolResult, E>`) from a tool.
///
/// ```
/// use plugin_api::{Content, ToolResult, json};
///
/// // A picture with a caption.
/// let result = ToolResult::new([
///     Content::image("iVBORw0KGgo=", "image/png"),
///     Content::text("a very small picture"),
/// ]);
/// assert_eq!(result.to_json()["content"][0]["type"], "image");
///
/// // Structured content, with its JSON as text for clients that read only text.
/// let weather = ToolResult::structured(json!({"temperature": 21.5}));
/// assert_eq!(weather.to_json()["structuredContent"]["temperature"], 21.5);
///
/// // An error the model can read (as opposed to a failed call).
/// let failed = ToolResult::error("the city is unknown");
/// assert_eq!(failed.to_json()["isError"], true);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult(Map<String, Value>);

impl Default for ToolResult {
    fn default() -> Self {
        Self::new([])
    }
}

impl ToolResult {
    /// A successful result with these content blocks.
    pub fn new(content: impl IntoIterator<Item = Content>) -> Self {
        let content: Vec<Value> = content.into_iter().map(|c| Value::Object(c.0)).collect();
        let mut map = Map::new();
        map.insert("content".to_owned(), Value::Array(content));
        map.insert("isError".to_owned(), false.into());
        Self(map)
    }

    /// A successful result holding one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new([Content::text(text)])
    }

    /// An error result (`isError: true`) holding one text block: the model reads it.
    pub fn error(text: impl Into<String>) -> Self {
        Self::text(text).with_error(true)
    }

    /// A successful result with `value` as structured content and, as MCP advises for
    /// clients that only read text, its JSON as a text block.
    pub fn structured(value: Value) -> Self {
        Self::text(value.to_string()).with_structured(value)
    }

    /// A result read from MCP `CallToolResult` JSON (what [`ToolResult::to_json`] gives): any
    /// JSON object; the host checks the rest when the tool returns it.
    pub fn from_json(json: Value) -> Result<Self, ToolError> {
        match json {
            Value::Object(map) => Ok(Self(map)),
            other => Err(ToolError::new(format!(
                "a tool result is a JSON object, not {other}"
            ))),
        }
    }

    /// Appends a content block.
    pub fn with_content(mut self, content: Content) -> Self {
        if let Some(Value::Array(blocks)) = self.0.get_mut("content") {
            blocks.push(Value::Object(content.0));
        } else {
            self.0
                .insert("content".to_owned(), json!([Value::Object(content.0)]));
        }
        self
    }

    /// Sets the structured content (a JSON object, matching the tool's output schema if it
    /// has one).
    pub fn with_structured(mut self, value: Value) -> Self {
        self.0.insert("structuredContent".to_owned(), value);
        self
    }

    /// Sets whether the result reports an error.
    pub fn with_error(mut self, is_error: bool) -> Self {
        self.0.insert("isError".to_owned(), is_error.into());
        self
    }

    /// Sets the result's `_meta` (a JSON object).
    pub fn with_meta(mut self, meta: Value) -> Self {
        self.0.insert("_meta".to_owned(), meta);
        self
    }

    /// Whether the result reports an error.
    pub fn is_error(&self) -> bool {
        self.0.get("isError").and_then(Value::as_bool) == Some(true)
    }

    /// The result as MCP `CallToolResult` JSON.
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

/// What a tool answered, as another tool sees it through [`crate::Original::call_output`]:
/// returning it from a wrapper passes the answer on unchanged, of either kind.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A plain value; the host makes the MCP result from it.
    Value(Value),
    /// A complete result the tool built.
    Result(ToolResult),
}

/// What a tool may return: any `serde::Serialize` value, or a [`ToolResult`] (or a
/// [`ToolOutput`]). Implemented for those; not meant to be implemented elsewhere.
pub trait IntoToolOutput {
    /// The answer as it crosses the ABI.
    fn into_output(self) -> Result<FfiOutput, ToolError>;
}

impl<T: Serialize> IntoToolOutput for T {
    fn into_output(self) -> Result<FfiOutput, ToolError> {
        let json = serde_json::to_string(&self)
            .map_err(|e| ToolError::new(format!("the result could not be serialised: {e}")))?;
        Ok(FfiOutput {
            kind: OutputKind::Value,
            json: json.into(),
        })
    }
}

impl IntoToolOutput for ToolResult {
    fn into_output(self) -> Result<FfiOutput, ToolError> {
        Ok(FfiOutput {
            kind: OutputKind::Result,
            json: Value::Object(self.0).to_string().into(),
        })
    }
}

impl IntoToolOutput for ToolOutput {
    fn into_output(self) -> Result<FfiOutput, ToolError> {
        match self {
            Self::Value(value) => value.into_output(),
            Self::Result(result) => result.into_output(),
        }
    }
}

impl ToolOutput {
    /// Reads an answer that crossed the ABI.
    pub(crate) fn from_ffi(output: &FfiOutput, tool: &str) -> Result<Self, ToolError> {
        let value: Value = serde_json::from_str(&output.json)
            .map_err(|e| ToolError::new(format!("tool {tool} returned invalid JSON: {e}")))?;
        Ok(match (output.kind, value) {
            (OutputKind::Result, Value::Object(map)) => Self::Result(ToolResult(map)),
            (OutputKind::Result, _) => {
                return Err(ToolError::new(format!(
                    "tool {tool} returned a result that is not a JSON object"
                )));
            }
            (OutputKind::Value, value) => Self::Value(value),
        })
    }

    /// The answer as JSON: the value, or the result's `CallToolResult` JSON.
    pub fn into_json(self) -> Value {
        match self {
            Self::Value(value) => value,
            Self::Result(result) => Value::Object(result.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_content_is_mcp_json() {
        let result = ToolResult::new([
            Content::text("hi"),
            Content::image("aW1n", "image/png"),
            Content::audio("YXVk", "audio/wav"),
            Content::resource_text("test://a", "text/plain", "A"),
            Content::resource_blob("test://b", "application/octet-stream", "Qg=="),
            Content::resource_link("test://c", "c").with_mime_type("text/plain"),
        ])
        .with_content(Content::text("more").with_annotations(json!({"priority": 1.0})));
        assert_eq!(
            result.to_json(),
            json!({
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image", "data": "aW1n", "mimeType": "image/png"},
                    {"type": "audio", "data": "YXVk", "mimeType": "audio/wav"},
                    {"type": "resource", "resource": {"uri": "test://a", "mimeType": "text/plain", "text": "A"}},
                    {"type": "resource", "resource": {"uri": "test://b", "mimeType": "application/octet-stream", "blob": "Qg=="}},
                    {"type": "resource_link", "uri": "test://c", "name": "c", "mimeType": "text/plain"},
                    {"type": "text", "text": "more", "annotations": {"priority": 1.0}}
                ],
                "isError": false
            })
        );
    }

    #[test]
    fn a_result_crosses_as_a_result_and_a_value_as_a_value() {
        let result = ToolResult::error("no").into_output().unwrap();
        assert_eq!(result.kind, OutputKind::Result);
        assert_eq!(
            ToolOutput::from_ffi(&result, "t").unwrap(),
            ToolOutput::Result(ToolResult::error("no"))
        );
        let value = json!({"a": 1}).into_output().unwrap();
        assert_eq!(value.kind, OutputKind::Value);
        assert_eq!(value.json.as_str(), r#"{"a":1}"#);
        assert_eq!(
            ToolOutput::from_ffi(&value, "t").unwrap().into_json(),
            json!({"a": 1})
        );
    }

    #[test]
    fn a_result_is_read_from_any_json_object() {
        let json = json!({"content": [], "isError": true, "_meta": {"k": 1}});
        let result = ToolResult::from_json(json.clone()).unwrap();
        assert!(result.is_error());
        assert_eq!(result.to_json(), json);
        assert_eq!(
            ToolResult::from_json(json!([1])).unwrap_err().message(),
            "a tool result is a JSON object, not [1]"
        );
        assert_eq!(
            ToolResult::text("x").with_meta(json!({"k": 1})).to_json()["_meta"],
            json!({"k": 1})
        );
    }

    #[test]
    fn structured_content_comes_with_its_text() {
        let result = ToolResult::structured(json!({"n": 1})).to_json();
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": r#"{"n":1}"#}])
        );
        assert_eq!(result["structuredContent"], json!({"n": 1}));
        assert!(!ToolResult::structured(json!({})).is_error());
    }
}
