//! The API keys file: its format (TOML or JSON), its entries, and finding the entry of a key.
//!
//! ```toml
//! [[keys]]
//! name = "alice"                # the tenant: what logs, sessions and plugins see
//! sha256 = "9f86d0…"            # the SHA-256 of the key, in hex; never the key itself
//! toolsets = ["benchmarks"]     # the toolsets it may use at most; "*" for every one
//! readonly = true               # optional: only tools annotated read-only
//! expires = "2027-01-01T00:00:00Z"  # optional, RFC 3339
//! ```
//!
//! JSON spells the same `{"keys": [{"name": ..., ...}]}`. A file named `*.json` (or starting
//! with `{`) is JSON, any other TOML. An entry that cannot be used is skipped with a warning
//! naming the file, the entry and the field; the others are kept. Re-reading the file when it
//! changes is [`super::store`]'s job.

use std::{path::Path, sync::Arc};

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::identity::{Bound, Identity, Proof};

/// Why a keys file cannot be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeysError {
    /// The file cannot be read.
    #[error("cannot read the keys file {}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not TOML or JSON.
    #[error("the keys file {} is not valid {format}", path.display())]
    Syntax {
        /// The file.
        path: std::path::PathBuf,
        /// `TOML` or `JSON`.
        format: &'static str,
        /// The parser's error: what is wrong, where.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The file parses, but holds no list of keys.
    #[error("the keys file {} is not valid {format}: {reason}", path.display())]
    Shape {
        /// The file.
        path: std::path::PathBuf,
        /// `TOML` or `JSON`.
        format: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

/// One key of the file, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    /// Who a request with the key is: its name (the tenant) and bound, made once.
    identity: Arc<Identity>,
    /// The key's SHA-256.
    sha256: [u8; 32],
    /// When it expires, in seconds since the epoch, and as written.
    pub(crate) expires: Option<(i64, String)>,
}

impl KeyEntry {
    /// Whether the key has expired at `now` (seconds since the epoch).
    pub(crate) fn expired_at(&self, now: i64) -> bool {
        self.expires.as_ref().is_some_and(|(at, _)| *at <= now)
    }

    /// The identity a request with this key has.
    pub(crate) fn identity(&self) -> Arc<Identity> {
        Arc::clone(&self.identity)
    }

    /// The key's name (its tenant).
    pub(crate) fn name(&self) -> &str {
        &self.identity.name
    }

    /// What the key may be served.
    pub(crate) fn bound(&self) -> &Bound {
        &self.identity.bound
    }
}

/// An entry as written, before it is checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    name: String,
    sha256: String,
    toolsets: Vec<String>,
    #[serde(default)]
    readonly: bool,
    #[serde(default)]
    expires: Option<String>,
}

/// The keys of one file, in its order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySet {
    entries: Vec<KeyEntry>,
}

/// The entry a presented key matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// A key of the file, not expired.
    Valid(&'a KeyEntry),
    /// A key of the file that has expired.
    Expired(&'a KeyEntry),
    /// No key of the file.
    Unknown,
}

impl KeySet {
    /// Reads `path`; entries that cannot be used are left out and described in the second
    /// value, one message each naming the file, the entry and the field.
    pub(crate) fn read(path: &Path) -> Result<(Self, Vec<String>), KeysError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeysError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses the text of `path` (see [`KeySet::read`]).
    pub fn parse(path: &Path, text: &str) -> Result<(Self, Vec<String>), KeysError> {
        let syntax = |format, source: Box<dyn std::error::Error + Send + Sync>| KeysError::Syntax {
            path: path.to_owned(),
            format,
            source,
        };
        let shape = |format, reason| KeysError::Shape {
            path: path.to_owned(),
            format,
            reason,
        };
        let json = is_json(path, text);
        let format = if json { "JSON" } else { "TOML" };
        let root: Value = if json {
            serde_json::from_str(text).map_err(|e| syntax("JSON", e.into()))?
        } else {
            let table: toml::Table = toml::from_str(text).map_err(|e| syntax("TOML", e.into()))?;
            serde_json::to_value(table).map_err(|e| syntax("TOML", e.into()))?
        };
        let written = match root.get("keys") {
            None if root.as_object().is_some_and(serde_json::Map::is_empty) => Vec::new(),
            None => return Err(shape(format, "it has no `keys` list")),
            Some(Value::Array(keys)) => keys.clone(),
            Some(_) => return Err(shape(format, "`keys` is not a list")),
        };
        let mut set = Self::default();
        let mut problems = Vec::new();
        for (index, value) in written.into_iter().enumerate() {
            let label = value.get("name").and_then(Value::as_str).map_or_else(
                || format!("entry {}", index + 1),
                |n| format!("entry {} (`{n}`)", index + 1),
            );
            match check(value) {
                Ok(entry) => set.entries.push(entry),
                Err(reason) => problems.push(format!(
                    "keys file {}: {label} skipped: {reason}",
                    path.display()
                )),
            }
        }
        Ok((set, problems))
    }

    /// The entries, in the file's order.
    pub(crate) fn entries(&self) -> &[KeyEntry] {
        &self.entries
    }

    /// The entry of `key` at `now` (seconds since the epoch). The key's hash is compared with
    /// every entry's in constant time ([`same_digest`]), and every entry is compared, so the
    /// time taken says nothing of which entry, or how much of a hash, matched.
    pub fn find(&self, key: &str, now: i64) -> Lookup<'_> {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = None;
        for entry in &self.entries {
            if same_digest(&entry.sha256, &digest) && found.is_none() {
                found = Some(entry);
            }
        }
        match found {
            Some(entry) if entry.expired_at(now) => Lookup::Expired(entry),
            Some(entry) => Lookup::Valid(entry),
            None => Lookup::Unknown,
        }
    }
}

/// Whether two digests are equal, in time independent of where they differ: the words' XORs
/// are ORed together without a branch, and the one result is compared with `subtle` (whose
/// byte-wise slice comparison costs ~30 times as much, which a file of a thousand keys pays on
/// every request).
fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut difference = 0u64;
    for (a, b) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let word = |bytes: &[u8]| u64::from_ne_bytes(bytes.try_into().unwrap_or_default());
        difference |= word(a) ^ word(b);
    }
    difference.ct_eq(&0).into()
}

/// The 32 bytes 64 hex digits spell, if they do.
fn digest_from_hex(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(hex.chunks_exact(2)) {
        let digit = |d: u8| char::from(d).to_digit(16);
        *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(digest)
}

/// Whether the file is JSON: by its extension, else by its first character.
pub(crate) fn is_json(path: &Path, text: &str) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) if ext.eq_ignore_ascii_case("json") => true,
        Some(ext) if ext.eq_ignore_ascii_case("toml") => false,
        _ => text.trim_start().starts_with('{'),
    }
}

/// Checks one written entry.
fn check(value: Value) -> Result<KeyEntry, String> {
    let written: Written = serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        if field == "." {
            e.inner().to_string()
        } else {
            format!("field `{field}`: {}", e.inner())
        }
    })?;
    if written.name.trim().is_empty() {
        return Err("field `name` is blank".to_owned());
    }
    let sha256 = digest_from_hex(written.sha256.trim()).ok_or_else(|| {
        "field `sha256` is not a SHA-256 in hex (64 hex digits; the key itself never goes in \
         the file)"
            .to_owned()
    })?;
    if written.toolsets.is_empty() {
        return Err(
            "field `toolsets` is empty (name the toolsets, or \"*\" for every one)".to_owned(),
        );
    }
    let expires = written
        .expires
        .map(|text| {
            parse_time(&text)
                .map(|at| (at, text.clone()))
                .ok_or_else(|| {
                    format!(
                        "field `expires`: `{text}` is not an RFC 3339 time (2027-01-31T00:00:00Z)"
                    )
                })
        })
        .transpose()?;
    Ok(KeyEntry {
        identity: Arc::new(Identity {
            bound: Bound::new(&written.toolsets, written.readonly),
            name: written.name,
            scopes: Vec::new(),
            proof: Proof::Key,
            claims: None,
        }),
        sha256,
        expires,
    })
}

/// An RFC 3339 time (`2027-01-31T00:00:00Z`, or a bare date), in seconds since the epoch.
pub(crate) fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(at.timestamp());
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp())
}

/// Now, in seconds since the epoch.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::hash::sha256_hex;

    const ALICE: &str = "key-of-alice";

    fn toml(text: &str) -> (KeySet, Vec<String>) {
        KeySet::parse(Path::new("keys.toml"), text).unwrap()
    }

    fn alice_toml(extra: &str) -> String {
        format!(
            "[[keys]]\nname = \"alice\"\nsha256 = \"{}\"\ntoolsets = [\"benchmarks\"]\n{extra}",
            sha256_hex(ALICE)
        )
    }

    #[test]
    fn a_key_is_found_by_its_hash_and_bounded() {
        let (set, problems) = toml(&alice_toml("readonly = true\n"));
        assert!(problems.is_empty(), "{problems:?}");
        let Lookup::Valid(entry) = set.find(ALICE, 0) else {
            panic!("not found")
        };
        assert_eq!(entry.name(), "alice");
        assert!(entry.bound().readonly);
        assert!(entry.bound().allows_toolset("benchmarks"));
        assert!(!entry.bound().allows_toolset("sandboxes"));
        assert_eq!(set.find("another", 0), Lookup::Unknown);
        assert_eq!(set.find("", 0), Lookup::Unknown);
    }

    #[test]
    fn an_expired_key_is_told_apart() {
        let (set, _) = toml(&alice_toml("expires = \"2020-01-01T00:00:00Z\"\n"));
        let at = parse_time("2020-01-01T00:00:00Z").unwrap();
        assert!(matches!(set.find(ALICE, at - 1), Lookup::Valid(_)));
        assert!(matches!(set.find(ALICE, at), Lookup::Expired(_)));
    }

    #[test]
    fn digests_are_equal_only_when_every_byte_is() {
        let a = digest_from_hex(&sha256_hex("a")).unwrap();
        assert!(same_digest(&a, &a));
        for at in [0, 7, 8, 31] {
            let mut b = a;
            b[at] ^= 1;
            assert!(!same_digest(&a, &b), "{at}");
        }
        assert_eq!(
            digest_from_hex(&sha256_hex("a").to_uppercase()),
            Some(a),
            "hex in either case"
        );
        assert_eq!(digest_from_hex("zz"), None);
        assert_eq!(digest_from_hex(&"g".repeat(64)), None);
    }

    #[test]
    fn json_spells_the_same() {
        let json = format!(
            r#"{{"keys": [{{"name": "bob", "sha256": "{}", "toolsets": ["*"], "expires": "2999-01-01"}}]}}"#,
            sha256_hex("b")
        );
        let (set, problems) = KeySet::parse(Path::new("keys.json"), &json).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let Lookup::Valid(entry) = set.find("b", 0) else {
            panic!("not found")
        };
        assert!(entry.bound().allows_toolset("anything"));
    }

    #[test]
    fn a_bad_entry_is_skipped_naming_the_file_entry_and_field() {
        let text = format!(
            "{}\n[[keys]]\nname = \"bob\"\nsha256 = \"abc\"\ntoolsets = [\"x\"]\n\n[[keys]]\nname = \"carol\"\nsha256 = \"{}\"\ntoolsets = [\"x\"]\nexpires = \"soon\"\n\n[[keys]]\nname = \"dave\"\nsha256 = \"{}\"\n",
            alice_toml(""),
            sha256_hex("c"),
            sha256_hex("d")
        );
        let (set, problems) = toml(&text);
        assert_eq!(set.entries().len(), 1);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems[0].contains("keys.toml: entry 2 (`bob`) skipped: field `sha256`"),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].contains("entry 3 (`carol`) skipped: field `expires`: `soon`"),
            "{}",
            problems[1]
        );
        assert!(
            problems[2].contains("entry 4 (`dave`) skipped: missing field `toolsets`"),
            "{}",
            problems[2]
        );
    }

    #[test]
    fn a_file_that_does_not_parse_names_itself_and_the_format() {
        let error = KeySet::parse(Path::new("k.toml"), "[[keys]\n").unwrap_err();
        assert_eq!(error.to_string(), "the keys file k.toml is not valid TOML");
        assert!(
            std::error::Error::source(&error).is_some(),
            "the parser's error is its source"
        );
        let error = KeySet::parse(Path::new("k.json"), "{").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("the keys file k.json is not valid JSON"),
            "{error}"
        );
        let error = KeySet::parse(Path::new("k.json"), "{\"key\": []}").unwrap_err();
        assert!(error.to_string().contains("no `keys` list"), "{error}");
        assert!(toml("").0.entries().is_empty(), "an empty file has no keys");
    }
}
