//! URI templates (RFC 6570) as resource templates use them: parsed once, then matched against
//! the URI a client reads to get the values of their variables back.
//!
//! Understood:
//!
//! - literal text, compared exactly;
//! - `{name}`, simple expansion: a non-empty value without `/`, `?` or `#`;
//! - `{+name}`, reserved expansion: a non-empty value of any characters, `/` included.
//!
//! Values are percent-decoded. Other operators (`{?q}`, `{#f}`, `{/p}`, `{.x}`, `{;x}`, `{&x}`),
//! lists (`{a,b}`), modifiers (`{x:3}`, `{x*}`) and two variables with no literal text between
//! them are refused by [`UriTemplate::parse`], so a template is never matched in a way its
//! author did not mean. Variable names are ASCII letters, digits and `_`, not starting with a
//! digit: the `#[resource_template]` attribute passes each to the method parameter of that name.
//!
//! The `#[plugin]` attribute compiles this same file to check templates at compile time, so
//! it depends on nothing but `std`, and its examples are unit tests (a doctest would name a
//! crate the attribute's copy cannot see).

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable { name: String, reserved: bool },
}

/// Why a URI template cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError(String);

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TemplateError {}

impl UriTemplate {
    /// Parses `template`; an error names what is not understood.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let error = |why: String| TemplateError(format!("URI template `{template}`: {why}"));
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let Some(open) = rest.find(['{', '}']) else {
                parts.push(Part::Literal(rest.to_owned()));
                break;
            };
            if rest[open..].starts_with('}') {
                return Err(error("a `}` closes no `{`".to_owned()));
            }
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| error("a `{` is never closed".to_owned()))?;
            let expression = &after[..close];
            let (name, reserved) = match expression.strip_prefix('+') {
                Some(name) => (name, true),
                None => (expression, false),
            };
            if !is_variable_name(name) {
                return Err(error(format!(
                    "`{{{expression}}}` is not understood: use `{{name}}` or `{{+name}}` \
                     (ASCII letters, digits and `_`)"
                )));
            }
            if matches!(parts.last(), Some(Part::Variable { .. })) {
                return Err(error(format!(
                    "`{{{expression}}}` follows another variable with no text between them"
                )));
            }
            if parts
                .iter()
                .any(|p| matches!(p, Part::Variable { name: n, .. } if n == name))
            {
                return Err(error(format!("variable `{name}` appears twice")));
            }
            parts.push(Part::Variable {
                name: name.to_owned(),
                reserved,
            });
            rest = &after[close + 1..];
        }
        if parts.is_empty() {
            return Err(TemplateError("a URI template cannot be empty".to_owned()));
        }
        Ok(Self {
            text: template.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The names of its variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Variable { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The value of each variable, in order, if `uri` fits the template.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut values = Vec::new();
        match_parts(&self.parts, uri, &mut values).then_some(values)
    }
}

/// Matches `parts` against all of `uri`, pushing variable values; backtracks on a variable's
/// length (shortest first).
fn match_parts(parts: &[Part], uri: &str, values: &mut Vec<(String, String)>) -> bool {
    let Some((part, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match part {
        Part::Literal(text) => uri
            .strip_prefix(text.as_str())
            .is_some_and(|tail| match_parts(rest, tail, values)),
        Part::Variable { name, reserved } => {
            let allowed = |c: char| *reserved || !matches!(c, '/' | '?' | '#');
            let ends = uri
                .char_indices()
                .take_while(|&(_, c)| allowed(c))
                .map(|(i, c)| i + c.len_utf8());
            for end in ends {
                let mark = values.len();
                values.push((name.clone(), String::new()));
                if match_parts(rest, &uri[end..], values)
                    && let Some(value) = percent_decode(&uri[..end])
                {
                    values[mark].1 = value;
                    return true;
                }
                values.truncate(mark);
            }
            false
        }
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` with `%XX` triplets decoded; `None` if a triplet is malformed or the bytes are not
/// UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template).unwrap().matches(uri)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn a_variable_between_literals_is_read_back() {
        assert_eq!(
            values("test://template/{id}/data", "test://template/123/data"),
            Some(pairs(&[("id", "123")]))
        );
        assert_eq!(
            values("file:///{dir}/{name}.txt", "file:///docs/a.b.txt"),
            Some(pairs(&[("dir", "docs"), ("name", "a.b")]))
        );
    }

    #[test]
    fn a_simple_variable_takes_no_slash_and_is_never_empty() {
        assert_eq!(values("test://t/{id}/data", "test://t/1/2/data"), None);
        assert_eq!(values("test://t/{id}/data", "test://t//data"), None);
        assert_eq!(values("test://t/{id}", "test://t/a?b"), None);
        assert_eq!(values("test://t/{id}/data", "test://t/1/data/x"), None);
        assert_eq!(values("test://t/{id}/data", "test://u/1/data"), None);
    }

    #[test]
    fn a_reserved_variable_takes_slashes() {
        assert_eq!(
            values("file:///{+path}", "file:///a/b/c.txt"),
            Some(pairs(&[("path", "a/b/c.txt")]))
        );
    }

    #[test]
    fn values_are_percent_decoded() {
        assert_eq!(
            values("test://user/{name}", "test://user/J%C3%BCrgen%20K"),
            Some(pairs(&[("name", "Jürgen K")]))
        );
        assert_eq!(values("test://user/{name}", "test://user/%zz"), None);
    }

    #[test]
    fn a_template_without_variables_matches_itself_only() {
        let t = UriTemplate::parse("test://static").unwrap();
        assert_eq!(t.matches("test://static"), Some(vec![]));
        assert_eq!(t.matches("test://static/"), None);
        assert_eq!(t.variables().count(), 0);
    }

    #[test]
    fn what_is_not_understood_is_refused_with_the_reason() {
        for (template, reason) in [
            ("test://{?q}", "is not understood"),
            ("test://{a,b}", "is not understood"),
            ("test://{x*}", "is not understood"),
            ("test://{}", "is not understood"),
            ("test://{1x}", "is not understood"),
            ("test://{a}{b}", "follows another variable"),
            ("test://{a}/{a}", "appears twice"),
            ("test://{a", "never closed"),
            ("test://a}", "closes no"),
            ("", "cannot be empty"),
        ] {
            let error = UriTemplate::parse(template).unwrap_err().to_string();
            assert!(error.contains(reason), "{template}: {error}");
        }
    }

    #[test]
    fn variables_are_listed_in_order() {
        let t = UriTemplate::parse("db://{table}/{+key}").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["table", "key"]);
        assert_eq!(t.as_str(), "db://{table}/{+key}");
    }
}
