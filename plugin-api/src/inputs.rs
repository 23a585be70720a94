//! Several inputs asked of the client at once ([`Inputs`]), and what it answered ([`Answers`]):
//! what [`crate::Context::ask`] sends and returns.
//!
//! Under protocol 2025-11-25 each input is a request on the client's session. Under 2026-07-28
//! there are no such requests: the host answers the call with an *input-required result*
//! listing the inputs under their keys, and the client calls again with the answers. The tool
//! then runs again from the start, and this time [`crate::Context::ask`] returns the answers.
//! So a tool that asks must be written to run more than once: do nothing that cannot be done
//! twice before it has every answer, and ask in the same order, under the same keys, each time.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::ToolError;

/// Inputs to ask the client for, each under a key of the tool's choosing (the key the client
/// sees in a 2026-07-28 input-required result).
///
/// ```
/// use plugin_api::{Inputs, json};
///
/// let inputs = Inputs::new()
///     .elicit(
///         "user_name",
///         json!({
///             "message": "What is your name?",
///             "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
///         }),
///     )
///     .list_roots("roots");
/// assert_eq!(inputs.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inputs(BTreeMap<String, (&'static str, Value)>);

impl Inputs {
    /// No inputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the user (`elicitation/create`): `params` are `message` and `requestedSchema`; the
    /// answer has `action` (`accept`, `decline`, `cancel`) and, when accepted, `content`.
    pub fn elicit(self, key: impl Into<String>, params: Value) -> Self {
        self.with(key, "elicitation/create", params)
    }

    /// Asks the client's model (`sampling/createMessage`): `params` are `messages`,
    /// `maxTokens`, ...; the answer has `role`, `content` and `model`.
    pub fn sample(self, key: impl Into<String>, params: Value) -> Self {
        self.with(key, "sampling/createMessage", params)
    }

    /// Asks for the client's roots (`roots/list`); the answer has `roots`.
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.with(key, "roots/list", json!({}))
    }

    /// How many inputs are asked.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn with(mut self, key: impl Into<String>, method: &'static str, params: Value) -> Self {
        self.0.insert(key.into(), (method, params));
        self
    }

    /// The JSON the host takes: `{key: {"method": ..., "params": ...}}`.
    pub(crate) fn to_json(&self) -> String {
        let requests: Map<String, Value> = self
            .0
            .iter()
            .map(|(key, (method, params))| {
                (key.clone(), json!({"method": method, "params": params}))
            })
            .collect();
        Value::Object(requests).to_string()
    }
}

/// The client's answers to [`Inputs`], under the same keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answers(Map<String, Value>);

impl Answers {
    /// Reads the host's JSON answer.
    pub(crate) fn from_json(json: &str) -> Result<Self, ToolError> {
        match serde_json::from_str(json) {
            Ok(Value::Object(answers)) => Ok(Self(answers)),
            _ => Err(ToolError::new(format!(
                "the client's answers are not a JSON object: {json}"
            ))),
        }
    }

    /// The answer under `key`: the client's result for that input.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Takes the answer under `key`, or fails naming the key.
    pub fn take(&mut self, key: &str) -> Result<Value, ToolError> {
        self.0
            .remove(key)
            .ok_or_else(|| ToolError::new(format!("the client gave no answer for `{key}`")))
    }

    /// The accepted content of an elicitation answered under `key`: `None` when the user
    /// declined or cancelled.
    pub fn accepted(&self, key: &str) -> Option<&Value> {
        let answer = self.get(key)?;
        (answer["action"] == "accept").then(|| &answer["content"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_cross_as_keyed_requests_and_answers_come_back_by_key() {
        let inputs = Inputs::new()
            .sample("greeting", json!({"maxTokens": 5, "messages": []}))
            .list_roots("roots");
        let sent: Value = serde_json::from_str(&inputs.to_json()).unwrap();
        assert_eq!(
            sent,
            json!({
                "greeting": {"method": "sampling/createMessage", "params": {"maxTokens": 5, "messages": []}},
                "roots": {"method": "roots/list", "params": {}}
            })
        );
        let mut answers = Answers::from_json(
            r#"{"name": {"action": "accept", "content": {"name": "Ada"}}, "no": {"action": "decline"}}"#,
        )
        .unwrap();
        assert_eq!(answers.accepted("name"), Some(&json!({"name": "Ada"})));
        assert_eq!(answers.accepted("no"), None);
        assert_eq!(
            answers.take("roots").unwrap_err().message(),
            "the client gave no answer for `roots`"
        );
        assert!(Answers::from_json("[]").is_err());
    }
}
