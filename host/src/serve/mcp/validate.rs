//! Argument validation: a call's arguments are checked against the tool's input schema before
//! the plugin sees them.
//!
//! A schema is compiled once, on a tool's first call (see [`crate::serve::generation::served`]). A mismatch becomes
//! a message that names each offending argument and the problem; the handler turns it into an
//! `isError` tool result. A schema that does not compile is logged once and the tool is served
//! without host-side validation (the plugin still parses its own arguments).

use jsonschema::{ValidationError, Validator, error::ValidationErrorKind};
use serde_json::{Map, Value};

/// The most problems one message lists.
const MAX_PROBLEMS: usize = 5;

/// A tool's compiled input schema.
pub struct ArgumentValidator {
    validator: Option<Validator>,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator")
            .field("compiled", &self.validator.is_some())
            .finish()
    }
}

impl ArgumentValidator {
    /// Compiles `schema`, the input schema of `tool`; no schema accepts any object.
    pub fn new(tool: &str, schema: Option<&Map<String, Value>>) -> Self {
        let validator = schema.and_then(|schema| {
            jsonschema::validator_for(&Value::Object(schema.clone()))
                .inspect_err(|e| {
                    tracing::warn!(
                        "tool `{tool}`: its input schema does not compile ({e}); its arguments are passed on unchecked"
                    );
                })
                .ok()
        });
        Self { validator }
    }

    /// Checks `arguments`; the error names each argument at fault and what is wrong with it.
    pub fn check(&self, arguments: &Value) -> Result<(), InvalidArguments> {
        let Some(validator) = &self.validator else {
            return Ok(());
        };
        let mut problems: Vec<String> = validator.iter_errors(arguments).map(describe).collect();
        if problems.is_empty() {
            return Ok(());
        }
        problems.dedup();
        let more = problems.len().saturating_sub(MAX_PROBLEMS);
        problems.truncate(MAX_PROBLEMS);
        let mut message = problems.join("; ");
        if more > 0 {
            message.push_str(&format!("; and {more} more"));
        }
        Err(InvalidArguments(message))
    }
}

/// Builds, once per process and on a blocking thread, the meta-schema validator that checks
/// every input schema before it compiles (a few milliseconds: the meta-schema is compiled at
/// run time). Called when a first call's plugins start to open, so it is ready by the time the
/// first validator compiles, instead of adding to that call.
pub(crate) fn prepare() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let schema = serde_json::json!({"type": "object"});
        drop(tokio::task::spawn_blocking(move || {
            jsonschema::meta::is_valid(&schema)
        }));
    });
}

/// One validation error in words: which argument, and what is wrong.
fn describe(error: ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let argument = path.strip_prefix('/').unwrap_or(path).replace('/', ".");
    match error.kind() {
        ValidationErrorKind::Required { property } if argument.is_empty() => {
            format!("missing argument `{}`", plain(property))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } if argument.is_empty() => {
            let names: Vec<String> = unexpected.iter().map(|n| format!("`{n}`")).collect();
            let noun = if names.len() == 1 {
                "argument"
            } else {
                "arguments"
            };
            format!("unexpected {noun} {}", names.join(", "))
        }
        ValidationErrorKind::FalseSchema if !argument.is_empty() => {
            format!("unexpected argument `{argument}`")
        }
        _ if argument.is_empty() => format!("the arguments: {error}"),
        _ => format!("argument `{argument}`: {error}"),
    }
}

/// A JSON string without its quotes; any other value as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Arguments that do not fit a tool's input schema: each argument at fault and what is wrong
/// with it (at most five, then how many more).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidArguments(String);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn validator(schema: Value) -> ArgumentValidator {
        let Value::Object(schema) = schema else {
            panic!("not an object schema")
        };
        ArgumentValidator::new("t", Some(&schema))
    }

    fn sleep_schema() -> ArgumentValidator {
        validator(json!({
            "type": "object",
            "properties": {"ms": {"type": "integer", "format": "uint64", "minimum": 0}},
            "required": ["ms"]
        }))
    }

    #[test]
    fn matching_arguments_pass() {
        assert_eq!(sleep_schema().check(&json!({"ms": 20})), Ok(()));
    }

    #[test]
    fn a_wrong_type_names_the_argument_and_the_problem() {
        let message = sleep_schema()
            .check(&json!({"ms": "soon"}))
            .unwrap_err()
            .to_string();
        assert_eq!(message, r#"argument `ms`: "soon" is not of type "integer""#);
    }

    #[test]
    fn a_missing_argument_is_named() {
        let message = sleep_schema().check(&json!({})).unwrap_err().to_string();
        assert_eq!(message, "missing argument `ms`");
    }

    #[test]
    fn a_value_out_of_range_is_named() {
        let message = sleep_schema()
            .check(&json!({"ms": -1}))
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("argument `ms`: -1 is less than"),
            "{message}"
        );
    }

    #[test]
    fn unexpected_arguments_are_named_when_the_schema_forbids_them() {
        let v = validator(json!({
            "type": "object",
            "properties": {"a": {"type": "number"}},
            "additionalProperties": false
        }));
        assert_eq!(
            v.check(&json!({"x": 1})).unwrap_err().to_string(),
            "unexpected argument `x`"
        );
    }

    #[test]
    fn nested_arguments_are_named_by_path() {
        let v = validator(json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "string"}}}
        }));
        assert_eq!(
            v.check(&json!({"items": ["a", 2]}))
                .unwrap_err()
                .to_string(),
            r#"argument `items.1`: 2 is not of type "string""#
        );
    }

    #[test]
    fn several_problems_are_listed_together() {
        let v = validator(json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        }));
        let message = v.check(&json!({"a": "x"})).unwrap_err().to_string();
        assert!(message.contains("argument `a`"), "{message}");
        assert!(message.contains("missing argument `b`"), "{message}");
    }

    #[test]
    fn no_schema_or_a_broken_one_accepts_anything() {
        assert_eq!(
            ArgumentValidator::new("t", None).check(&json!({"x": 1})),
            Ok(())
        );
        let broken = validator(json!({"type": 12}));
        assert_eq!(broken.check(&json!({"x": 1})), Ok(()));
    }
}
