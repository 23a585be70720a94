//! The trusted keys file (`--trusted-keys`): the minisign public keys whose signatures count.
//!
//! One key per line, in minisign's base64 form (the second line of a `.pub` file), so
//! `cat author.pub >> trusted-keys` adds an author: lines starting with `untrusted comment:`
//! or `#`, and blank lines, are skipped. A line that is not a key makes the whole file unusable,
//! named with its line, rather than trusting less than the operator wrote.

use std::{
    fmt,
    path::{Path, PathBuf},
};

use minisign::PublicKey;

/// The trusted keys, as read from their file.
#[derive(Clone)]
pub struct TrustedKeys {
    path: PathBuf,
    keys: Vec<(String, PublicKey)>,
}

impl fmt::Debug for TrustedKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustedKeys")
            .field("path", &self.path)
            .field("ids", &self.ids().collect::<Vec<_>>())
            .finish()
    }
}

/// Why the keys file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeysError {
    /// It cannot be read.
    #[error("cannot read the trusted keys file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not a minisign public key.
    #[error(
        "trusted keys file {}, line {line}: not a minisign public key (one base64 key per \
         line, as the second line of a .pub file): {reason}",
        path.display()
    )]
    NotAKey {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What the key parser said.
        reason: String,
    },
    /// It holds no key: every signature would be refused.
    #[error("trusted keys file {} holds no key", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

impl TrustedKeys {
    /// Reads the keys file at `path`.
    ///
    /// # Errors
    ///
    /// If it cannot be read, a line is not a key, or it holds none.
    pub fn read(path: &Path) -> Result<Self, KeysError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeysError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// The keys of `text`, the content of the file at `path`.
    fn parse(path: &Path, text: &str) -> Result<Self, KeysError> {
        let mut keys = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with("untrusted comment:") {
                continue;
            }
            let key = PublicKey::from_base64(line).map_err(|e| KeysError::NotAKey {
                path: path.to_owned(),
                line: index + 1,
                reason: e.to_string(),
            })?;
            keys.push((key_id(key.keynum()), key));
        }
        if keys.is_empty() {
            return Err(KeysError::Empty {
                path: path.to_owned(),
            });
        }
        Ok(Self {
            path: path.to_owned(),
            keys,
        })
    }

    /// The key whose id is `id`.
    pub(crate) fn find(&self, id: &str) -> Option<&PublicKey> {
        self.keys.iter().find(|(i, _)| i == id).map(|(_, key)| key)
    }

    /// The ids of the keys, in the file's order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|(id, _)| id.as_str())
    }

    /// The file the keys were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A key id as minisign prints it: its eight bytes as a little-endian number, in 16 upper-case
/// hex digits.
pub(crate) fn key_id(keynum: &[u8]) -> String {
    let mut bytes = [0u8; 8];
    let len = keynum.len().min(8);
    bytes[..len].copy_from_slice(&keynum[..len]);
    format!("{:016X}", u64::from_le_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_one_a_line_and_comments_skipped() {
        let pair = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let public = pair.pk.to_box().unwrap().into_string();
        let text = format!("# the release key\n\n{public}");
        let keys = TrustedKeys::parse(Path::new("keys"), &text).unwrap();
        let id = key_id(pair.pk.keynum());
        assert_eq!(keys.ids().collect::<Vec<_>>(), [id.as_str()]);
        assert!(keys.find(&id).is_some());
        assert!(keys.find("0000000000000000").is_none());
    }

    #[test]
    fn a_line_that_is_not_a_key_is_named_with_its_line() {
        let error = TrustedKeys::parse(Path::new("/etc/keys"), "# keys\nRWnotakey\n").unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("trusted keys file /etc/keys, line 2: not a minisign public key"),
            "{text}"
        );
    }

    #[test]
    fn a_file_without_keys_is_refused() {
        let error = TrustedKeys::parse(Path::new("k"), "# nothing\n").unwrap_err();
        assert_eq!(error.to_string(), "trusted keys file k holds no key");
    }

    #[test]
    fn key_ids_read_as_minisign_prints_them() {
        assert_eq!(key_id(&[1, 0, 0, 0, 0, 0, 0, 0xAB]), "AB00000000000001");
    }
}
