//! The layer order of `host/src`, and the check that every `crate::` path points down it.
//!
//! `host/src` is a stack (see `../shared/DESIGN.md`, "Layers"): a module may use its own layer
//! and the layers below it, never one above. [`violations`] reads every source file of the
//! host's library, blanks out comments and literals, leaves out test code (`#[cfg(test)]`
//! items and `tests.rs` files), and reports each `crate::` path whose first segment is a
//! later layer than the file's own. It also reports a top-level module that has no layer.

use std::{
    fs,
    path::{Path, PathBuf},
};

/// The layers of `host/src`, lowest first. A module may import from its own layer and from
/// those before it in this list.
pub(crate) const LAYERS: &[(&str, &str)] = &[
    (
        "util",
        "leaves: loopback test, hashing, poison-tolerant lock, backoff, error chains",
    ),
    (
        "observe",
        "the server's metrics and spans: the MCP conventions' and the host's own, from any layer",
    ),
    (
        "call",
        "what one plugin call is: outcomes, log levels, the wire format, Process (no I/O)",
    ),
    (
        "selection",
        "URL query, headers and bounds -> active set and filters",
    ),
    (
        "discovery",
        "plugin files and mcp.json declarations -> manifests (never opens a library)",
    ),
    ("registry", "manifests -> ordered contributions"),
    (
        "reload",
        "triggers, debounce, changes between two discoveries",
    ),
    ("auth", "keys, OAuth, identities and their bounds"),
    (
        "shared",
        "state replicas share in Redis: events, requests between replicas, records, sessions",
    ),
    (
        "policy",
        "the policy file: rules, rate limits, quotas, caps, breakers, result caps",
    ),
    (
        "reports",
        "/toolsets, /contributions, list, graph; filtering for a caller's bound",
    ),
    (
        "build",
        "the Opener seam, tool tables, extensions, private copies",
    ),
    (
        "providers",
        "library, isolated, bridged: each an Opener; the combining opener",
    ),
    (
        "serve",
        "the HTTP edge, the MCP handler, one call's host side, generations",
    ),
    (
        "embed",
        "the public API: a Server to mount in an application of one's own",
    ),
    ("cli", "the command line (clap) and what each command runs"),
];

/// One `crate::` path that points up the stack, or a module without a layer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    /// The file, relative to `host/src`.
    pub(crate) file: String,
    /// The 1-based line of the path.
    pub(crate) line: usize,
    /// What is wrong.
    pub(crate) message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "host/src/{}:{}: {}", self.file, self.line, self.message)
    }
}

/// Every violation of the layer order under `src` (the host's `src` folder).
pub(crate) fn violations(src: &Path) -> Vec<Violation> {
    let mut found = Vec::new();
    for file in library_files(src) {
        let relative = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let Some(own) = top_module(&relative) else {
            continue;
        };
        let Some(own_rank) = rank(&own) else {
            found.push(Violation {
                file: relative,
                line: 1,
                message: format!("module `{own}` has no layer: add it to xtask's LAYERS"),
            });
            continue;
        };
        let text = fs::read_to_string(&file).unwrap_or_default();
        for (line, target) in crate_paths(&without_tests(&blank_literals(&text))) {
            match rank(&target) {
                Some(target_rank) if target_rank > own_rank => found.push(Violation {
                    file: relative.clone(),
                    line,
                    message: format!(
                        "`{own}` uses `crate::{target}`, a later layer ({} comes before {})",
                        own, target
                    ),
                }),
                _ => {}
            }
        }
    }
    found
}

/// The position of a top-level module in [`LAYERS`].
fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(name, _)| *name == module)
}

/// The top-level module a file belongs to (`serve/edge/guard.rs` -> `serve`); none for the
/// crate roots and for test files.
fn top_module(relative: &str) -> Option<String> {
    if matches!(relative, "lib.rs" | "main.rs") {
        return None;
    }
    let mut parts = relative.split('/');
    let first = parts.next()?;
    if relative.ends_with("/tests.rs") || relative.contains("/tests/") {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_owned())
}

/// The library's source files (`.rs` under `src`, the binary's own `bin/` folder left out).
fn library_files(src: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![src.to_owned()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if dir != src || entry.file_name() != "bin" {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The text with comments, string literals and character literals replaced by spaces
/// (newlines kept), so braces and paths inside them are not read as code.
fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !ident_before(&chars, i) {
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let end = (j + 1..chars.len())
                .find(|&k| chars[k] == '"' && (1..=hashes).all(|h| chars.get(k + h) == Some(&'#')))
                .map_or(chars.len(), |k| k + 1 + hashes);
            for &skipped in &chars[i..end] {
                blank(&mut out, skipped);
            }
            i = end;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            if i < chars.len() {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '\'' && is_char_literal(&chars, i) {
            let end = if next == Some('\\') {
                (i + 2..chars.len())
                    .find(|&k| chars[k] == '\'')
                    .unwrap_or(i)
            } else {
                i + 2
            };
            for &skipped in &chars[i..=end.min(chars.len() - 1)] {
                blank(&mut out, skipped);
            }
            i = end + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// A `'` that opens a character literal (`'x'`, `'\n'`), not a lifetime (`'a`).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}

/// The code with each `#[cfg(test)]` item blanked: a `mod x;` line, or the item up to the
/// brace that closes its first block.
fn without_tests(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + marker.len() <= out.len() {
        if out[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        let start = i;
        let mut j = i + marker.len();
        let mut depth = 0usize;
        while j < out.len() {
            match out[j] {
                ';' if depth == 0 => break,
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        for c in &mut out[start..(j + 1).min(code.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = j + 1;
    }
    out.into_iter().collect()
}

/// Each `crate::` path's first segment, with its line: `crate::a::b` gives `a`, and
/// `crate::{a::b, c}` gives `a` and `c`.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(offset) = code[from..].find("crate::") {
        let at = from + offset;
        from = at + "crate::".len();
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = code[from..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            for name in group_heads(group) {
                found.push((line, name));
            }
        } else {
            found.push((line, leading_ident(rest)));
        }
    }
    found.retain(|(_, name)| !name.is_empty() && name != "self");
    found
}

/// The first identifier of each entry of a `{...}` use group (the text after its `{`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = vec![leading_ident(group.trim_start())];
    let mut depth = 0usize;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(leading_ident(group[i + 1..].trim_start())),
            _ => {}
        }
    }
    heads
}

fn leading_ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_src_imports_only_down_the_layers() {
        let src = crate::project_root().join("host/src");
        let found = violations(&src);
        assert!(
            found.is_empty(),
            "{} import(s) point up the layer order (lowest first: {}):\n  {}\n",
            found.len(),
            LAYERS
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(" < "),
            found
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }

    #[test]
    fn paths_are_read_from_code_only() {
        let code = blank_literals(
            "use crate::{a::b, c::{d, e}, f};\n// crate::comment\nlet s = \"crate::string\";\nlet c = '{'; crate::g::h();\n",
        );
        let heads: Vec<String> = crate_paths(&code).into_iter().map(|(_, n)| n).collect();
        assert_eq!(heads, ["a", "c", "f", "g"]);
    }

    #[test]
    fn test_items_are_left_out() {
        let code = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n#[cfg(test)]\nmod more;\nuse crate::c;\n";
        let heads: Vec<String> = crate_paths(&without_tests(code))
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(heads, ["a", "c"]);
    }

    #[test]
    fn lifetimes_are_not_char_literals() {
        let code = blank_literals("fn f<'a>(x: &'a str) -> crate::k::T<'a> {}");
        assert_eq!(crate_paths(&code), vec![(1, "k".to_owned())]);
    }
}
