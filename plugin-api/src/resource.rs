//! What a resource read returns: [`ResourceContents`], text or bytes under a URI, written as
//! MCP's `TextResourceContents` or `BlobResourceContents` (bytes in base64).
//!
//! A `#[resource]` or `#[resource_template]` method returns anything [`IntoResourceContents`]:
//! a `String` (text, with the declared MIME type or `text/plain`), a `Vec<u8>` (a blob, with the
//! declared MIME type or `application/octet-stream`), one [`ResourceContents`], or several. The
//! attribute and the plugin side of the ABI (`contribution.rs`) do the rest.

use base64::Engine;
use serde::{Serialize, Serializer};

use crate::result::Content;

/// The contents of a resource: its URI, its MIME type, and text or bytes.
///
/// ```
/// use plugin_api::ResourceContents;
///
/// let text = ResourceContents::text("test://a", "hello").with_mime_type("text/markdown");
/// assert_eq!(
///     serde_json::to_value(&text).unwrap(),
///     serde_json::json!({"uri": "test://a", "mimeType": "text/markdown", "text": "hello"})
/// );
/// let blob = ResourceContents::blob("test://b", vec![1, 2, 3]);
/// assert_eq!(serde_json::to_value(&blob).unwrap()["blob"], "AQID");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ResourceContents {
    /// The URI of what was read. Left empty, the URI the client asked for is filled in.
    pub uri: String,
    /// Its MIME type. Left `None`, the declared one (or a default for text or bytes) is filled in.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text or the bytes.
    #[serde(flatten)]
    pub body: ResourceBody,
}

/// The body of [`ResourceContents`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ResourceBody {
    /// Text, written as `"text"`.
    #[serde(rename = "text")]
    Text(String),
    /// Bytes, written in base64 as `"blob"`.
    #[serde(rename = "blob", serialize_with = "base64_string")]
    Blob(Vec<u8>),
}

impl ResourceContents {
    /// Text under `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            body: ResourceBody::Text(text.into()),
        }
    }

    /// Bytes under `uri`.
    pub fn blob(uri: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            body: ResourceBody::Blob(bytes.into()),
        }
    }

    /// The same contents with this MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Fills in what was left out: the URI read, and the declared MIME type or the default for
    /// text (`text/plain`) or bytes (`application/octet-stream`).
    pub(crate) fn completed(mut self, uri: &str, mime_type: Option<&str>) -> Self {
        if self.uri.is_empty() {
            uri.clone_into(&mut self.uri);
        }
        if self.mime_type.is_none() {
            let default = match self.body {
                ResourceBody::Text(_) => "text/plain",
                ResourceBody::Blob(_) => "application/octet-stream",
            };
            self.mime_type = Some(mime_type.unwrap_or(default).to_owned());
        }
        self
    }
}

/// What a resource method may return.
///
/// `uri` is the URI the client read and `mime_type` the declared MIME type; both fill in what
/// the value leaves out.
pub trait IntoResourceContents {
    /// The contents to answer with.
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents>;
}

impl IntoResourceContents for ResourceContents {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![self.completed(uri, mime_type)]
    }
}

impl IntoResourceContents for Vec<ResourceContents> {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        self.into_iter()
            .map(|c| c.completed(uri, mime_type))
            .collect()
    }
}

impl IntoResourceContents for String {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        ResourceContents::text(uri, self).into_contents(uri, mime_type)
    }
}

impl IntoResourceContents for &str {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        self.to_owned().into_contents(uri, mime_type)
    }
}

impl IntoResourceContents for Vec<u8> {
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Vec<ResourceContents> {
        ResourceContents::blob(uri, self).into_contents(uri, mime_type)
    }
}

/// Embeds the contents in a message or a tool result; a MIME type left out is the default for
/// text or bytes.
impl From<ResourceContents> for Content {
    fn from(contents: ResourceContents) -> Self {
        let contents = contents.completed("", None);
        let uri = contents.uri;
        let mime_type = contents.mime_type.unwrap_or_default();
        match contents.body {
            ResourceBody::Text(text) => Content::resource_text(uri, mime_type, text),
            ResourceBody::Blob(bytes) => Content::resource_blob(uri, mime_type, base64(&bytes)),
        }
    }
}

/// Bytes in base64, as MCP carries them.
fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Bytes as a base64 string.
fn base64_string<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&base64(bytes))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn wire(value: impl IntoResourceContents, mime_type: Option<&str>) -> Value {
        serde_json::to_value(value.into_contents("test://r", mime_type)).unwrap()
    }

    #[test]
    fn a_string_is_text_with_the_declared_mime_type_or_text_plain() {
        assert_eq!(
            wire("hi".to_owned(), Some("text/markdown")),
            json!([{"uri": "test://r", "mimeType": "text/markdown", "text": "hi"}])
        );
        assert_eq!(
            wire("hi", None),
            json!([{"uri": "test://r", "mimeType": "text/plain", "text": "hi"}])
        );
    }

    #[test]
    fn bytes_are_a_base64_blob() {
        assert_eq!(
            wire(vec![0_u8, 255], Some("image/png")),
            json!([{"uri": "test://r", "mimeType": "image/png", "blob": "AP8="}])
        );
        assert_eq!(
            wire(vec![1_u8], None)[0]["mimeType"],
            "application/octet-stream"
        );
    }

    #[test]
    fn given_uris_and_mime_types_are_kept() {
        let contents = vec![
            ResourceContents::text("test://part/1", "a").with_mime_type("text/csv"),
            ResourceContents::text("", "b"),
        ];
        assert_eq!(
            wire(contents, Some("text/markdown")),
            json!([
                {"uri": "test://part/1", "mimeType": "text/csv", "text": "a"},
                {"uri": "test://r", "mimeType": "text/markdown", "text": "b"}
            ])
        );
    }
}
