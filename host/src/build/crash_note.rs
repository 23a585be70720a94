//! A line on stderr when the process dies of a signal a plugin in process can raise: a library
//! that calls `abort` (or panics while panicking, or is built with `panic = "abort"`), or
//! faults (SIGSEGV, SIGBUS), takes the host down with it and would leave nothing in the log.
//!
//! The line names the plugins opened in process and how to keep the server up (`--isolate`).
//! It is written by a signal handler (the `fatal_note` crate, which holds the unsafe code this
//! library forbids), so it is made beforehand: each time a plugin of a new name opens in
//! process ([`opened`]) the whole line is rebuilt and published, at most once per name.

use std::{collections::BTreeSet, sync::Mutex};

/// The names of the plugins opened in process so far.
static OPENED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Notes that the plugin `name` runs in process from now on.
pub(crate) fn opened(name: &str) {
    let mut opened = crate::util::lock::lock(&OPENED);
    if !opened.insert(name.to_owned()) {
        return;
    }
    let names: Vec<&str> = opened.iter().map(String::as_str).collect();
    fatal_note::publish(line(&names));
}

/// The line for a process with `names` opened in process.
fn line(names: &[&str]) -> String {
    format!(
        "FATAL reactor-mcp-server: the process is ending on a fatal signal (an abort or a \
         memory fault), raised by native code in process: one of the plugins opened in \
         process ({}) is the likely cause. Serve it with --isolate NAME so that it ends its \
         own child process instead of the server.\n",
        names.join(", ")
    )
}

/// Installs the handlers that write the line ([`fatal_note::install`]).
pub(crate) fn install() {
    fatal_note::install();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_plugins_and_isolation() {
        let line = line(&["crashy", "sandboxes"]);
        assert!(line.contains("(crashy, sandboxes)"), "{line}");
        assert!(line.contains("--isolate NAME"), "{line}");
        assert!(line.ends_with('\n'));
    }
}
