//! `${VAR}` and `${VAR:-default}` in an `mcp.json` value, from the host's environment, as
//! Claude Code's `.mcp.json` expands them: secrets stay out of the file.
//!
//! A `$` not followed by `{` is kept as it is. A variable that is not set (or, with `:-`, set
//! but empty) takes the default; without a default it is an error naming the variable.

/// Why a value's variables cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ExpandError {
    /// A `${` that no `}` closes, in this value.
    #[error("`${{` without a closing `}}` in `{0}`")]
    Unclosed(String),
    /// What is between `${` and `}` is not a variable name.
    #[error("`${{{0}}}` is not a variable name")]
    BadName(String),
    /// This variable is not set, and has no default.
    #[error("the environment variable `{0}` is not set (write `${{{0}:-default}}` for a default)")]
    Unset(String),
}

/// `text` with its variables replaced by `env`'s values.
pub(crate) fn expand(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| ExpandError::Unclosed(text.to_owned()))?;
        let (name, default) = match after[..end].split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (&after[..end], None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ExpandError::BadName(after[..end].to_owned()));
        }
        match (
            env(name).filter(|v| default.is_none() || !v.is_empty()),
            default,
        ) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset(name.to_owned())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_and_defaults_fill_in() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand("${NOPE:-x}-${TOKEN:-y}", &env).unwrap(), "x-s3cret");
        assert_eq!(expand("${EMPTY:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand("$HOME and $", &env).unwrap(), "$HOME and $");
    }

    #[test]
    fn an_unset_variable_without_default_is_named() {
        assert_eq!(
            expand("a ${MISSING} b", &env).unwrap_err().to_string(),
            "the environment variable `MISSING` is not set (write `${MISSING:-default}` for a default)"
        );
    }

    #[test]
    fn an_unclosed_or_bad_reference_is_an_error() {
        assert_eq!(
            expand("x ${TOKEN", &env).unwrap_err().to_string(),
            "`${` without a closing `}` in `x ${TOKEN`"
        );
        assert_eq!(
            expand("${A B}", &env).unwrap_err().to_string(),
            "`${A B}` is not a variable name"
        );
    }
}
