//! `${VAR}` and `${VAR:-default}` in an `mcp.json` value, from the host's environment, as
//! Claude Code's `.mcp.json` expands them: secrets stay out of the file.
//!
//! A `$` not followed by `{` is kept as it is. A variable that is not set (or, with `:-`, set
//! but empty) takes the default; without a default it is an error naming the variable.

/// `text` with its variables replaced by `env`'s values.
pub(crate) fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without a closing `}}` in `{text}`"))?;
        let (name, default) = match after[..end].split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (&after[..end], None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`${{{}}}` is not a variable name", &after[..end]));
        }
        match (
            env(name).filter(|v| default.is_none() || !v.is_empty()),
            default,
        ) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "the environment variable `{name}` is not set (write `${{{name}:-default}}` for a default)"
                ));
            }
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
            expand("a ${MISSING} b", &env).unwrap_err(),
            "the environment variable `MISSING` is not set (write `${MISSING:-default}` for a default)"
        );
    }

    #[test]
    fn an_unclosed_or_bad_reference_is_an_error() {
        assert_eq!(
            expand("x ${TOKEN", &env).unwrap_err(),
            "`${` without a closing `}` in `x ${TOKEN`"
        );
        assert_eq!(
            expand("${A B}", &env).unwrap_err(),
            "`${A B}` is not a variable name"
        );
    }
}
