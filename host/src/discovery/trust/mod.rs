//! Which plugin libraries may be served: their signatures and the lock file.
//!
//! Off by default: then a library is trusted as it is found, and nothing here reads it. With
//! `--trusted-keys FILE`, a library with a detached minisign signature beside it
//! (`libx.so.minisig`, [`signature`]) is served only if a trusted key made that signature over
//! its bytes; with `--require-signed` too, a library without one is skipped. With `--locked`,
//! a library is served only if `plugins.lock` ([`lock`]) holds its plugin with the SHA-256 of
//! its bytes. A library that fails is skipped with the reason ([`SkipReason`]) and never
//! opened.
//!
//! What was checked is a plain value ([`Checked`]: the SHA-256 of the bytes checked), carried
//! by the discovered plugin to whoever opens it: the build stage checks its private copy's bytes
//! against it, so the library opened is the one checked, even if the file changed in between.

pub mod keys;
pub mod lock;
pub mod signature;

use std::path::{Path, PathBuf};

use plugin_manifest::Manifest;
use serde::Serialize;

use super::SkipReason;
use crate::util::hash::sha256_of;
use keys::TrustedKeys;
use lock::Lock;

/// The name of the lock file in the plugin folder, unless `--lock-file` names another.
pub const LOCK_FILE: &str = "plugins.lock";

/// What the command line says to check: plain paths and switches, read by [`TrustOptions::load`]
/// at each discovery, so a changed keys file or lock file is read again on the next scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustOptions {
    /// The trusted public keys (`--trusted-keys`).
    pub trusted_keys: Option<PathBuf>,
    /// Whether a library without a valid signature of a trusted key is skipped.
    pub require_signed: bool,
    /// Whether only the libraries the lock file holds, with the same SHA-256, are served.
    pub locked: bool,
    /// The lock file, when not the plugin folder's `plugins.lock`.
    pub lock_file: Option<PathBuf>,
}

impl TrustOptions {
    /// The lock file `--locked` reads and `lock` writes, for the plugin folder `plugin_dir`.
    pub fn lock_path(&self, plugin_dir: &Path) -> PathBuf {
        self.lock_file
            .clone()
            .unwrap_or_else(|| plugin_dir.join(LOCK_FILE))
    }

    /// The files whose changes change what is trusted: the keys file and the lock file in use.
    pub fn files(&self, plugin_dir: &Path) -> Vec<PathBuf> {
        let lock = self.locked.then(|| self.lock_path(plugin_dir));
        self.trusted_keys.iter().cloned().chain(lock).collect()
    }

    /// Reads the keys file and the lock file these options name.
    ///
    /// # Errors
    ///
    /// If a file cannot be read or parsed (naming it, and the line), or `--require-signed` is
    /// given without `--trusted-keys`.
    pub fn load(&self, plugin_dir: &Path) -> Result<Trust, TrustError> {
        if self.require_signed && self.trusted_keys.is_none() {
            return Err(TrustError::RequireSignedWithoutKeys);
        }
        let keys = self
            .trusted_keys
            .as_deref()
            .map(TrustedKeys::read)
            .transpose()?;
        let lock = if self.locked {
            Some(Lock::read(&self.lock_path(plugin_dir))?)
        } else {
            None
        };
        Ok(Trust {
            keys,
            require_signed: self.require_signed,
            lock,
        })
    }
}

/// Why the trust settings cannot be used; the server does not start (or a rescan keeps what it
/// serves) until they can.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// `--require-signed` without a key to check signatures with.
    #[error("--require-signed needs --trusted-keys FILE: the public keys whose signatures count")]
    RequireSignedWithoutKeys,
    /// The keys file cannot be used.
    #[error(transparent)]
    Keys(#[from] keys::KeysError),
    /// The lock file cannot be used.
    #[error(transparent)]
    Lock(#[from] lock::LockError),
}

/// What is checked of each library: read from the files [`TrustOptions`] names.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    keys: Option<TrustedKeys>,
    require_signed: bool,
    lock: Option<Lock>,
}

impl Trust {
    /// Whether nothing is checked: libraries are taken as found, and not read whole.
    pub fn is_off(&self) -> bool {
        self.keys.is_none() && self.lock.is_none()
    }

    /// Checks the library at `path`, whose bytes are `bytes` and manifest `manifest`.
    ///
    /// # Errors
    ///
    /// The reason to skip it: a signature that is bad or from no trusted key, no signature when
    /// one is required, no entry in the lock file or one with another SHA-256.
    pub fn check(
        &self,
        path: &Path,
        bytes: &[u8],
        manifest: &Manifest,
    ) -> Result<Checked, SkipReason> {
        let signer = match &self.keys {
            Some(keys) => signature::verify(keys, path, bytes)?,
            None => None,
        };
        if signer.is_none() && self.require_signed {
            return Err(SkipReason::Unsigned {
                signature: signature::signature_path(path),
            });
        }
        let sha256 = sha256_of(bytes);
        if let Some(lock) = &self.lock {
            lock.check(manifest, &sha256)?;
        }
        Ok(Checked { sha256, signer })
    }

    /// Warns about each plugin of the lock file that no served library is: a locked plugin
    /// missing from the folder.
    pub(crate) fn warn_missing<'a>(&self, served: impl Iterator<Item = &'a Manifest>) {
        if let Some(lock) = &self.lock {
            lock.warn_missing(served);
        }
    }
}

/// What was checked of a library, carried to whoever opens it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checked {
    /// The SHA-256 of the bytes checked, in hex: the private copy's bytes must have it too.
    pub sha256: String,
    /// The id of the trusted key whose signature verified, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
}
