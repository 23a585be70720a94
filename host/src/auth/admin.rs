//! `reactor-mcp-server keys new NAME --toolsets a,b [--readonly] [--expires TIME]` and
//! `keys list`: make a key, keep only its hash; show names and bounds, never keys.
//!
//! A new key is 32 random bytes from the operating system, printed once as `rmk_` and 64 hex
//! digits. Its entry is appended to the file (created if missing): as a `[[keys]]` table at the
//! end of a TOML file (what is above is kept as written), or into the `keys` list of a JSON one.
//! The new file is written beside the old one and renamed over it, so a server re-reading it
//! never sees half of it.

use std::{io::Write as _, path::Path};

use serde_json::{Value, json};

use super::keys::{KeySet, KeysError, is_json, now, parse_time};
use crate::bridge::names::{hex, sha256_hex};

/// Why a key could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// The file does not read.
    #[error(transparent)]
    Keys(#[from] KeysError),
    /// The request does not make sense.
    #[error("{0}")]
    Invalid(String),
    /// The file cannot be written.
    #[error("cannot write the keys file {}: {source}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A key to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKey {
    /// The tenant.
    pub name: String,
    /// The toolsets it may use (`*` for every one).
    pub toolsets: Vec<String>,
    /// Read-only tools only.
    pub readonly: bool,
    /// When it expires (RFC 3339), if ever.
    pub expires: Option<String>,
}

/// Makes a key as `new` says, appends its entry to `path`, and returns the key (to print once).
pub fn new_key(path: &Path, new: &NewKey) -> Result<String, AdminError> {
    if new.name.trim().is_empty() || new.name.contains(['"', '\\', '\n']) {
        return Err(AdminError::Invalid(format!(
            "`{}` cannot name a key: give a name without quotes, backslashes or newlines",
            new.name
        )));
    }
    if new.toolsets.is_empty() {
        return Err(AdminError::Invalid(
            "--toolsets names none: give the toolsets the key may use, or `*` for every one"
                .to_owned(),
        ));
    }
    if let Some(expires) = &new.expires
        && parse_time(expires).is_none()
    {
        return Err(AdminError::Invalid(format!(
            "--expires `{expires}` is not an RFC 3339 time (2027-01-31T00:00:00Z)"
        )));
    }
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(KeysError::Read {
                path: path.to_owned(),
                source,
            }
            .into());
        }
    };
    if let Some(text) = &existing {
        KeySet::parse(path, text)?;
    }
    let key = random_key().map_err(AdminError::Invalid)?;
    let entry = json!({
        "name": new.name,
        "sha256": sha256_hex(&key),
        "toolsets": new.toolsets,
        "readonly": new.readonly,
        "expires": new.expires,
    });
    let text = existing.unwrap_or_default();
    let updated = if is_json(path, &text) {
        append_json(&text, entry)
    } else {
        append_toml(&text, &entry)
    };
    write_atomically(path, &updated).map_err(|source| AdminError::Write {
        path: path.to_owned(),
        source,
    })?;
    Ok(key)
}

/// The text `keys list` prints: one line per key, with its bound and expiry, never a key.
pub fn list(path: &Path) -> Result<String, AdminError> {
    let (keys, problems) = KeySet::read(path)?;
    let now = now();
    let mut text = String::new();
    for entry in keys.entries() {
        let toolsets = entry.bound().toolsets.as_ref().map_or_else(
            || "*".to_owned(),
            |t| t.iter().cloned().collect::<Vec<_>>().join(","),
        );
        text.push_str(&format!("{}\ttoolsets={toolsets}", entry.name()));
        if entry.bound().readonly {
            text.push_str("\treadonly");
        }
        match &entry.expires {
            Some((_, when)) if entry.expired_at(now) => text.push_str(&format!("\texpired {when}")),
            Some((_, when)) => text.push_str(&format!("\texpires {when}")),
            None => {}
        }
        text.push('\n');
    }
    for problem in problems {
        text.push_str(&format!("# {problem}\n"));
    }
    Ok(text)
}

/// 32 random bytes as `rmk_` and hex.
fn random_key() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot get random bytes: {e}"))?;
    Ok(format!("rmk_{}", hex(&bytes)))
}

/// `text` (a JSON keys file, perhaps empty) with `entry` appended to its `keys`.
fn append_json(text: &str, entry: Value) -> String {
    let mut root: Value = serde_json::from_str(text).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut root {
        let keys = map.entry("keys").or_insert_with(|| json!([]));
        if let Value::Array(keys) = keys {
            keys.push(without_nulls(entry));
        }
    }
    let mut out = serde_json::to_string_pretty(&root).unwrap_or_default();
    out.push('\n');
    out
}

/// `text` (a TOML keys file, perhaps empty) with `entry` appended as a `[[keys]]` table.
fn append_toml(text: &str, entry: &Value) -> String {
    let table: toml::Table =
        serde_json::from_value(without_nulls(entry.clone())).unwrap_or_default();
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str("[[keys]]\n");
    out.push_str(&toml::to_string(&table).unwrap_or_default());
    out
}

/// `entry` without its `null` fields.
fn without_nulls(mut entry: Value) -> Value {
    if let Value::Object(map) = &mut entry {
        map.retain(|_, v| !v.is_null());
    }
    entry
}

/// Writes `text` to `PATH.tmp`, then renames it to `path`.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = std::path::PathBuf::from(temporary);
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::keys::Lookup;

    fn new(name: &str, toolsets: &[&str]) -> NewKey {
        NewKey {
            name: name.to_owned(),
            toolsets: toolsets.iter().map(|t| (*t).to_owned()).collect(),
            readonly: false,
            expires: None,
        }
    }

    #[test]
    fn new_keys_are_appended_and_found_by_their_hash_in_toml_and_json() {
        let dir = tempfile::tempdir().unwrap();
        for file in ["keys.toml", "keys.json"] {
            let path = dir.path().join(file);
            let alice = new_key(&path, &new("alice", &["benchmarks"])).unwrap();
            let bob = new_key(
                &path,
                &NewKey {
                    readonly: true,
                    expires: Some("2999-01-01T00:00:00Z".into()),
                    ..new("bob", &["*"])
                },
            )
            .unwrap();
            assert!(alice.starts_with("rmk_") && alice.len() == 68, "{alice}");
            assert_ne!(alice, bob);
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(!text.contains(&alice), "the key itself is never written");
            let (keys, problems) = KeySet::read(&path).unwrap();
            assert!(problems.is_empty(), "{problems:?}");
            assert!(matches!(keys.find(&alice, 0), Lookup::Valid(e) if e.name() == "alice"));
            assert!(matches!(keys.find(&bob, 0), Lookup::Valid(e) if e.bound().readonly));
            let listed = list(&path).unwrap();
            assert_eq!(
                listed,
                "alice\ttoolsets=benchmarks\nbob\ttoolsets=*\treadonly\texpires 2999-01-01T00:00:00Z\n"
            );
        }
    }

    #[test]
    fn a_toml_file_keeps_what_was_written_above() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, "# our keys\n").unwrap();
        new_key(&path, &new("alice", &["a", "b"])).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("# our keys\n\n[[keys]]\n")
        );
    }

    #[test]
    fn bad_requests_are_refused_naming_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        assert!(new_key(&path, &new("", &["a"])).is_err());
        let none = new_key(&path, &new("a", &[])).unwrap_err();
        assert!(none.to_string().contains("--toolsets"), "{none}");
        let when = NewKey {
            expires: Some("tomorrow".into()),
            ..new("a", &["a"])
        };
        assert!(
            new_key(&path, &when)
                .unwrap_err()
                .to_string()
                .contains("--expires `tomorrow`")
        );
        std::fs::write(&path, "[[keys]").unwrap();
        assert!(
            new_key(&path, &new("a", &["a"])).is_err(),
            "a broken file is left alone"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[[keys]");
    }
}
