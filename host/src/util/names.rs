//! The names files give plugins, toolsets and bridged servers: one rule, so that every name
//! can be selected by a URL or an `X-MCP-Toolsets` header (which split on `,` and spaces), and
//! how any text from a file is shown in a log line.

use std::fmt;

/// The longest name, in characters.
pub(crate) const MAX_NAME: usize = 64;

/// The rule, as warnings state it.
pub(crate) const NAME_RULE: &str = "a name is 1 to 64 of the characters A-Z a-z 0-9 _ . -";

/// Whether `c` may be part of a name.
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// Checks `name` against [`NAME_RULE`]; the error says which character or length breaks it.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if let Some(c) = name.chars().find(|&c| !allowed(c)) {
        return Err(format!(
            "the name holds {}, which no URL can select: {NAME_RULE}",
            describe(c)
        ));
    }
    match name.len() {
        0 => Err(format!("the name is empty: {NAME_RULE}")),
        n if n > MAX_NAME => Err(format!("the name is {n} characters long: {NAME_RULE}")),
        _ => Ok(()),
    }
}

/// A character in words: `' '` for a space, else `U+XXXX` for one that is not printed plainly.
fn describe(c: char) -> String {
    match c {
        ' ' => "a space".to_owned(),
        c if needs_escape(c) => format!("the invisible character U+{:04X}", u32::from(c)),
        c => format!("`{c}`"),
    }
}

/// Whether `c` is a control character, or a bidirectional or zero-width formatting mark that
/// could make a log line read other than it is.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// Text from a file, shown in a log line with control and bidirectional characters escaped
/// as `\u{XXXX}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown<'a>(pub(crate) &'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if needs_escape(c) {
                write!(f, "\\u{{{:04x}}}", u32::from(c))?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_follow_the_rule() {
        for name in [
            "benchmarks",
            "sandboxes-datalayer",
            "good_morning",
            "a.b",
            "X9",
        ] {
            assert_eq!(check_name(name), Ok(()), "{name}");
        }
        assert_eq!(check_name(&"a".repeat(64)), Ok(()));
    }

    #[test]
    fn names_no_url_can_select_break_the_rule() {
        for (name, what) in [
            ("a b", "a space"),
            ("a,b", "`,`"),
            ("a/b", "`/`"),
            ("../x", "`/`"),
            ("ab\u{202E}c", "the invisible character U+202E"),
            ("a\tb", "the invisible character U+0009"),
            ("é", "`é`"),
        ] {
            let error = check_name(name).unwrap_err();
            assert!(error.contains(what), "{name}: {error}");
            assert!(error.ends_with(NAME_RULE), "{name}: {error}");
        }
        assert_eq!(
            check_name(""),
            Err(format!("the name is empty: {NAME_RULE}"))
        );
        assert_eq!(
            check_name(&"a".repeat(65)),
            Err(format!("the name is 65 characters long: {NAME_RULE}"))
        );
    }

    #[test]
    fn control_and_bidirectional_characters_are_escaped() {
        assert_eq!(Shown("plain name").to_string(), "plain name");
        assert_eq!(
            Shown("evil\u{202E}txt.exe").to_string(),
            "evil\\u{202e}txt.exe"
        );
        assert_eq!(
            Shown("a\nb\u{1b}[31m\u{200F}").to_string(),
            "a\\u{000a}b\\u{001b}[31m\\u{200f}"
        );
        assert_eq!(Shown("héllo 世界").to_string(), "héllo 世界");
    }
}
