//! What a prompt returns: [`PromptMessage`]s, each a [`Role`] and a [`Content`] block (text, an
//! image, audio, an embedded resource: the blocks tool results are made of), written as MCP's
//! `PromptMessage`.
//!
//! A `#[prompt]` method returns anything [`IntoPromptResult`]: a `String` (one user message), a
//! [`PromptMessage`], a `Vec<PromptMessage>`, or a [`GetPromptResult`] when it also gives a
//! description. The attribute and the plugin side of the ABI (`contribution.rs`) do the rest.

use serde::{Serialize, Serializer};

use crate::result::Content;

/// Who a prompt message speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

/// One message of a prompt.
///
/// ```
/// use plugin_api::{Content, PromptMessage};
///
/// let messages = vec![
///     PromptMessage::user("Review this code."),
///     PromptMessage::assistant("Which file?"),
///     PromptMessage::user(Content::image("iVBORw0KGgo=", "image/png")),
/// ];
/// assert_eq!(
///     serde_json::to_value(&messages[0]).unwrap(),
///     serde_json::json!({"role": "user", "content": {"type": "text", "text": "Review this code."}})
/// );
/// # let _ = messages;
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    #[serde(serialize_with = "content_json")]
    pub content: Content,
}

fn content_json<S: Serializer>(content: &Content, serializer: S) -> Result<S::Ok, S::Error> {
    content.to_json().serialize(serializer)
}

impl PromptMessage {
    /// A message from the user: text (a `String` or `&str`), a [`Content`] block, or a
    /// [`crate::ResourceContents`] to embed.
    pub fn user(content: impl Into<Content>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// A message from the assistant: text (a `String` or `&str`), a [`Content`] block, or a
    /// [`crate::ResourceContents`] to embed.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A prompt's answer with a description of its own (MCP `GetPromptResult`). Without one, the
/// prompt's declared description is sent.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct GetPromptResult {
    /// What this instance of the prompt is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

/// What a prompt method may return.
pub trait IntoPromptResult {
    /// The answer to send.
    fn into_prompt_result(self) -> GetPromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> GetPromptResult {
        self
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult {
            description: None,
            messages: self,
        }
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> GetPromptResult {
        vec![self].into_prompt_result()
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> GetPromptResult {
        PromptMessage::user(self).into_prompt_result()
    }
}

impl IntoPromptResult for &str {
    fn into_prompt_result(self) -> GetPromptResult {
        PromptMessage::user(self).into_prompt_result()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ResourceContents;

    #[test]
    fn a_string_is_one_user_message() {
        let result = "Hello".into_prompt_result();
        assert_eq!(
            serde_json::to_value(result).unwrap(),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hello"}}]})
        );
    }

    #[test]
    fn an_embedded_resource_and_audio_have_the_mcp_shape() {
        let messages = vec![
            PromptMessage::user(
                ResourceContents::text("test://doc", "Embedded.").with_mime_type("text/plain"),
            ),
            PromptMessage::assistant(Content::audio("AQI=", "audio/wav")),
        ];
        assert_eq!(
            serde_json::to_value(messages).unwrap(),
            json!([
                {"role": "user", "content": {"type": "resource", "resource":
                    {"uri": "test://doc", "mimeType": "text/plain", "text": "Embedded."}}},
                {"role": "assistant", "content": {"type": "audio", "data": "AQI=", "mimeType": "audio/wav"}}
            ])
        );
    }
}
