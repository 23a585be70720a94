//! Errors shown whole: an error's message, then each of its sources, on one line.
//!
//! The host's errors keep their causes as sources (`thiserror`'s `#[source]`) and do not repeat
//! them in their own message; whoever shows an error where one line of text is wanted (`main`,
//! a log line, a `/healthz` entry, an MCP error message) shows it with [`chain`], or hands out a
//! [`Report`], whose `Display` is that line.

use std::{error::Error, fmt};

/// `error`'s message, then each of its sources', joined by ": ". A source whose text the line
/// already ends with (an error that still formats its source into its own message) is not
/// repeated, nor is an empty one.
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.is_empty() && !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

/// An error kept whole for whoever shows it: its `Display` is [`chain`]'s line, and the typed
/// error stays at hand ([`Report::error`]). Like std's unstable `std::error::Report`. It is an
/// error itself, without a source (its line already holds them), so a report that ends up
/// in another error's chain is not printed twice.
#[derive(Debug, Clone)]
pub struct Report<E>(E);

impl<E> Report<E> {
    /// The error it reports.
    pub fn error(&self) -> &E {
        &self.0
    }

    /// The error it reports, taken out.
    pub fn into_error(self) -> E {
        self.0
    }
}

impl<E> From<E> for Report<E> {
    fn from(error: E) -> Self {
        Self(error)
    }
}

impl<E: Error + 'static> fmt::Display for Report<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&chain(&self.0))
    }
}

impl<E: Error + 'static> Error for Report<E> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read {path}")]
    struct Read {
        path: &'static str,
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot start: {source}")]
    struct Repeats {
        source: Read,
    }

    fn read() -> Read {
        Read {
            path: "keys.toml",
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        }
    }

    #[test]
    fn the_chain_names_each_source_once() {
        assert_eq!(chain(&read()), "cannot read keys.toml: no such file");
        let repeats = Repeats { source: read() };
        assert_eq!(
            chain(&repeats),
            "cannot start: cannot read keys.toml: no such file"
        );
    }

    #[test]
    fn a_report_shows_the_chain_and_keeps_the_error() {
        let report = Report::from(read());
        assert_eq!(report.to_string(), "cannot read keys.toml: no such file");
        assert!(report.source().is_none(), "its line holds the sources");
        assert!(
            report.error().source().is_some(),
            "the error keeps its source"
        );
        assert_eq!(report.into_error().path, "keys.toml");
    }
}
