//! `reactor-mcp-server keys new NAME --toolsets a,b [--readonly] [--expires TIME]`, `keys list`
//! and `keys revoke NAME`: make a key, keep only its hash; show names and bounds, never keys;
//! take a tenant's keys out of the file.
//!
//! A new key is 32 random bytes from the operating system, printed once as `rmk_` and 64 hex
//! digits. Its entry is appended to the file (created if missing): as a `[[keys]]` table at the
//! end of a TOML file (what is above is kept as written), or into the `keys` list of a JSON one.
//! Revoking removes every entry of that name: the `[[keys]]` tables of a TOML file (the rest of
//! its text kept as written), the entries of a JSON one. The new file is written beside the old
//! one and renamed over it, so a server re-reading it never sees half of it; a running server
//! refuses the revoked keys once it has read the file again. On Unix the file is written
//! readable by its owner alone (mode 0600), whatever the umask.

use std::{io::Write as _, path::Path};

use serde_json::{Value, json};

use super::keys::{KeySet, KeysError, is_json, now, parse_time};
use crate::util::hash::{hex, sha256_hex};

/// Why a key could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum AdminError {
    /// The file does not read.
    #[error(transparent)]
    Keys(#[from] KeysError),
    /// The request does not make sense.
    #[error("{0}")]
    Invalid(String),
    /// The file cannot be written.
    #[error("cannot write the keys file {}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The operating system gave no random bytes for the key.
    #[error("cannot get random bytes for the key")]
    Random(#[source] getrandom::Error),
}

/// A key to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewKey {
    /// The tenant.
    pub(crate) name: String,
    /// The toolsets it may use (`*` for every one).
    pub(crate) toolsets: Vec<String>,
    /// Read-only tools only.
    pub(crate) readonly: bool,
    /// When it expires (RFC 3339), if ever.
    pub(crate) expires: Option<String>,
}

/// Makes a key as `new` says, appends its entry to `path`, and returns the key (to print once).
pub(crate) fn new_key(path: &Path, new: &NewKey) -> Result<String, AdminError> {
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
    let key = random_key().map_err(AdminError::Random)?;
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
pub(crate) fn list(path: &Path) -> Result<String, AdminError> {
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

/// Removes every key named `name` from `path`; returns how many there were. A name no key has
/// is an error, and so is a TOML file whose keys are not all `[[keys]]` tables (it is left as
/// it is, to be edited by hand).
pub(crate) fn revoke(path: &Path, name: &str) -> Result<usize, AdminError> {
    let text = std::fs::read_to_string(path).map_err(|source| KeysError::Read {
        path: path.to_owned(),
        source,
    })?;
    let (keys, _) = KeySet::parse(path, &text)?;
    let count = keys.entries().iter().filter(|e| e.name() == name).count();
    if count == 0 {
        return Err(AdminError::Invalid(format!(
            "no key is named `{name}` in {} (`keys list` shows the names)",
            path.display()
        )));
    }
    let updated = if is_json(path, &text) {
        without_json(&text, name)
    } else {
        without_toml(&text, name)
    };
    let (left, _) = KeySet::parse(path, &updated)?;
    if left.entries().iter().any(|e| e.name() == name) {
        return Err(AdminError::Invalid(format!(
            "the keys named `{name}` in {} are not all `[[keys]]` tables: remove them by hand",
            path.display()
        )));
    }
    write_atomically(path, &updated).map_err(|source| AdminError::Write {
        path: path.to_owned(),
        source,
    })?;
    Ok(count)
}

/// `text` (a JSON keys file) without the entries named `name`.
fn without_json(text: &str, name: &str) -> String {
    let mut root: Value = serde_json::from_str(text).unwrap_or_else(|_| json!({}));
    if let Some(Value::Array(keys)) = root.get_mut("keys") {
        keys.retain(|entry| entry.get("name").and_then(Value::as_str) != Some(name));
    }
    pretty(&root)
}

/// `root` as a JSON keys file holds it: indented, ending with a newline.
fn pretty(root: &Value) -> String {
    let mut out = serde_json::to_string_pretty(root).unwrap_or_default();
    out.push('\n');
    out
}

/// `text` (a TOML keys file) without the `[[keys]]` tables named `name`: each table runs from
/// its header to the next header; everything else is kept as written.
fn without_toml(text: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut block = String::new();
    let mut in_keys = false;
    let flush = |block: &mut String, in_keys: bool, out: &mut String| {
        let named = in_keys
            && block
                .split_once('\n')
                .and_then(|(_, body)| toml::from_str::<toml::Table>(body).ok())
                .is_some_and(|table| table.get("name").and_then(toml::Value::as_str) == Some(name));
        if !named {
            out.push_str(block);
        }
        block.clear();
    };
    for line in text.split_inclusive('\n') {
        let header = line.trim_start();
        if header.starts_with('[') {
            flush(&mut block, in_keys, &mut out);
            in_keys = header.trim_end() == "[[keys]]";
        }
        block.push_str(line);
    }
    flush(&mut block, in_keys, &mut out);
    out
}

/// 32 random bytes as `rmk_` and hex.
fn random_key() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
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
    pretty(&root)
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

/// Writes `text` to `PATH.tmp` (mode 0600 on Unix), then renames it to `path`.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = std::path::PathBuf::from(temporary);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary)?;
    // A `.tmp` left by an earlier run keeps its mode when opened: set it.
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
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

    #[cfg(unix)]
    #[test]
    fn the_keys_file_is_readable_by_its_owner_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let created = dir.path().join("keys.toml");
        new_key(&created, &new("alice", &["*"])).unwrap();
        assert_eq!(mode(&created), 0o600);
        let loose = dir.path().join("loose.toml");
        std::fs::write(&loose, "").unwrap();
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(dir.path().join("loose.toml.tmp"), "").unwrap();
        std::fs::set_permissions(
            dir.path().join("loose.toml.tmp"),
            std::fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        new_key(&loose, &new("bob", &["*"])).unwrap();
        assert_eq!(mode(&loose), 0o600, "rewriting tightens the mode");
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
    fn revoking_removes_every_key_of_the_name_and_keeps_the_rest_as_written() {
        let dir = tempfile::tempdir().unwrap();
        for file in ["keys.toml", "keys.json"] {
            let path = dir.path().join(file);
            if file.ends_with(".toml") {
                std::fs::write(&path, "# our keys\n").unwrap();
            }
            let alice = new_key(&path, &new("alice", &["a"])).unwrap();
            let bob = new_key(&path, &new("bob", &["b"])).unwrap();
            let again = new_key(&path, &new("alice", &["c"])).unwrap();
            assert_eq!(revoke(&path, "alice").unwrap(), 2, "{file}");
            let (keys, problems) = KeySet::read(&path).unwrap();
            assert!(problems.is_empty(), "{problems:?}");
            assert!(matches!(keys.find(&alice, 0), Lookup::Unknown), "{file}");
            assert!(matches!(keys.find(&again, 0), Lookup::Unknown), "{file}");
            assert!(matches!(keys.find(&bob, 0), Lookup::Valid(e) if e.name() == "bob"));
            let text = std::fs::read_to_string(&path).unwrap();
            if file.ends_with(".toml") {
                assert!(text.starts_with("# our keys\n"), "{text}");
            }
            let unknown = revoke(&path, "alice").unwrap_err().to_string();
            assert!(unknown.contains("no key is named `alice`"), "{unknown}");
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                text,
                "left as it was"
            );
        }
    }

    #[test]
    fn a_key_written_otherwise_than_as_a_table_is_left_to_remove_by_hand() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        let inline = format!(
            "keys = [{{ name = \"alice\", sha256 = \"{}\", toolsets = [\"a\"] }}]\n",
            sha256_hex("rmk_x")
        );
        std::fs::write(&path, &inline).unwrap();
        let refused = revoke(&path, "alice").unwrap_err().to_string();
        assert!(refused.contains("by hand"), "{refused}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), inline);
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
