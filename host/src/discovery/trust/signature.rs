//! Detached signatures of plugin libraries, in minisign's format: made by `keygen` and `sign`
//! (or by the `minisign` tool itself: `minisign -S -m libx.so`), checked at discovery.
//!
//! A library's signature is the file beside it named like it plus `.minisig`
//! (`libx.so.minisig`), as minisign names it. It signs the BLAKE2b-512 of the library's bytes
//! with Ed25519, and its trusted comment (`plugin:x version:1.2.0 file:libx.so`) with it.

use std::{
    io::Cursor,
    path::{Path, PathBuf},
};

use minisign::{KeyPair, PublicKey, SecretKey, SignatureBox};
use plugin_manifest::Manifest;

use super::keys::{TrustedKeys, key_id};
use crate::discovery::SkipReason;

/// The suffix of a signature's file name, after the library's.
pub const SIGNATURE_SUFFIX: &str = ".minisig";

/// Where the signature of the library at `library` is.
pub fn signature_path(library: &Path) -> PathBuf {
    let mut name = library.as_os_str().to_owned();
    name.push(SIGNATURE_SUFFIX);
    PathBuf::from(name)
}

/// Verifies the signature beside `library`, whose bytes are `bytes`: the id of the trusted key
/// that made it, or `None` when there is no signature.
///
/// # Errors
///
/// [`SkipReason::BadSignature`] when the signature cannot be read, is from no trusted key, or
/// does not verify.
pub(crate) fn verify(
    keys: &TrustedKeys,
    library: &Path,
    bytes: &[u8],
) -> Result<Option<String>, SkipReason> {
    let path = signature_path(library);
    let bad = |reason: String| SkipReason::BadSignature {
        signature: path.clone(),
        reason,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(bad(format!("cannot be read: {error}"))),
    };
    let signature =
        SignatureBox::from_string(&text).map_err(|e| bad(format!("not a signature: {e}")))?;
    let id = key_id(signature.keynum());
    let key = keys.find(&id).ok_or_else(|| {
        bad(format!(
            "made by key {id}, which is not in the trusted keys file {}",
            keys.path().display()
        ))
    })?;
    minisign::verify(key, &signature, Cursor::new(bytes), true, false, false).map_err(|e| {
        bad(format!(
            "does not verify with key {id}: {e} (the library is not the file that was signed)"
        ))
    })?;
    Ok(Some(id))
}

/// Why a key pair cannot be made or a library signed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// A file cannot be read or written.
    #[error("{}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A key file exists, and `--force` was not given.
    #[error("{} exists: give --force to replace it (anything it signed will no longer verify with a new key)", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The secret key is protected by a password, and none was given.
    #[error(
        "the secret key {} is protected by a password: name the environment variable that holds \
         it with --password-env",
        path.display()
    )]
    NeedsPassword {
        /// The key file.
        path: PathBuf,
    },
    /// minisign refused (a bad key file, a wrong password, ...).
    #[error("{what}: {reason}")]
    Minisign {
        /// What was being done.
        what: String,
        /// What minisign said.
        reason: String,
    },
    /// The file to sign is not a plugin this host could serve.
    #[error("{} is not a plugin library: {reason}", path.display())]
    NotAPlugin {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: SkipReason,
    },
}

/// The files of a new key pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFiles {
    /// The secret key, readable by its owner alone.
    pub secret: PathBuf,
    /// The public key, to hand to `--trusted-keys`.
    pub public: PathBuf,
    /// The key's id.
    pub id: String,
}

/// Makes a key pair, written to `PREFIX.key` (mode 0600; encrypted with `password` when given)
/// and `PREFIX.pub`, in minisign's formats.
///
/// # Errors
///
/// If a file exists (unless `force`), or cannot be written.
pub fn keygen(prefix: &Path, password: Option<String>, force: bool) -> Result<KeyFiles, SignError> {
    let with = |extension: &str| {
        let mut name = prefix.as_os_str().to_owned();
        name.push(extension);
        PathBuf::from(name)
    };
    let (secret, public) = (with(".key"), with(".pub"));
    for path in [&secret, &public] {
        if path.exists() && !force {
            return Err(SignError::Exists { path: path.clone() });
        }
    }
    let minisign_error = |what: &str| {
        let what = what.to_owned();
        move |e: minisign::PError| SignError::Minisign {
            what,
            reason: e.to_string(),
        }
    };
    let pair = match password {
        Some(password) => KeyPair::generate_encrypted_keypair(Some(password)),
        None => KeyPair::generate_unencrypted_keypair(),
    }
    .map_err(minisign_error("making a key pair"))?;
    let id = key_id(pair.pk.keynum());
    let comment = format!("reactor-mcp-server secret key {id}");
    let secret_text = pair
        .sk
        .to_box(Some(&comment))
        .map_err(minisign_error("writing the secret key"))?
        .into_string();
    let public_text = pair
        .pk
        .to_box()
        .map_err(minisign_error("writing the public key"))?
        .into_string();
    write_file(&secret, secret_text.as_bytes(), 0o600)?;
    write_file(&public, public_text.as_bytes(), 0o644)?;
    Ok(KeyFiles { secret, public, id })
}

/// Reads the secret key at `path`, decrypting it with `password` when it is protected.
///
/// # Errors
///
/// If it cannot be read, is not a minisign secret key, or needs a password not given (or
/// given wrong).
pub fn read_secret_key(path: &Path, password: Option<String>) -> Result<SecretKey, SignError> {
    let text = std::fs::read_to_string(path).map_err(|source| SignError::File {
        path: path.to_owned(),
        source,
    })?;
    let refused = |e: minisign::PError| SignError::Minisign {
        what: format!("reading the secret key {}", path.display()),
        reason: e.to_string(),
    };
    match SecretKey::from_unencrypted_box(text.clone().into()) {
        Ok(key) => Ok(key),
        Err(error) if error.to_string().contains("encrypted") => match password {
            Some(password) => SecretKey::from_box(text.into(), Some(password)).map_err(refused),
            None => Err(SignError::NeedsPassword {
                path: path.to_owned(),
            }),
        },
        Err(error) => Err(refused(error)),
    }
}

/// Signs the plugin library at `library` with `key`, writing its signature beside it; the
/// signature's path and the signing key's id.
///
/// # Errors
///
/// If the file is not a plugin library, or a file cannot be read or written.
pub fn sign(library: &Path, key: &SecretKey) -> Result<(PathBuf, String), SignError> {
    let bytes = std::fs::read(library).map_err(|source| SignError::File {
        path: library.to_owned(),
        source,
    })?;
    let manifest =
        crate::discovery::manifest_of(&bytes).map_err(|reason| SignError::NotAPlugin {
            path: library.to_owned(),
            reason,
        })?;
    let public = PublicKey::from_secret_key(key).map_err(|e| SignError::Minisign {
        what: "reading the public half of the secret key".to_owned(),
        reason: e.to_string(),
    })?;
    let signature = minisign::sign(
        Some(&public),
        key,
        Cursor::new(&bytes),
        Some(&trusted_comment(library, &manifest)),
        Some("signature of a reactor-mcp-server plugin"),
    )
    .map_err(|e| SignError::Minisign {
        what: format!("signing {}", library.display()),
        reason: e.to_string(),
    })?;
    let path = signature_path(library);
    write_file(&path, signature.into_string().as_bytes(), 0o644)?;
    Ok((path, key_id(public.keynum())))
}

/// The trusted comment of a library's signature: what it is, signed with it.
fn trusted_comment(library: &Path, manifest: &Manifest) -> String {
    let file = library
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        "plugin:{} version:{} abi:{} file:{file} timestamp:{}",
        manifest.name,
        manifest.version,
        manifest.abi,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default()
    )
}

/// Writes `bytes` to `path` (replacing it), with Unix mode `mode`.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), SignError> {
    let failed = |source| SignError::File {
        path: path.to_owned(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(failed)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(failed)?;
    }
    std::io::Write::write_all(&mut file, bytes).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys made by [`keygen`] in `dir`, and the trusted keys file of its public key.
    fn keys_in(dir: &Path) -> (KeyFiles, TrustedKeys) {
        let files = keygen(&dir.join("release"), None, false).unwrap();
        let trusted = TrustedKeys::read(&files.public).unwrap();
        (files, trusted)
    }

    #[test]
    fn a_signature_made_over_other_bytes_does_not_verify() {
        let dir = tempfile::tempdir().unwrap();
        let (files, trusted) = keys_in(dir.path());
        let key = read_secret_key(&files.secret, None).unwrap();
        let library = dir.path().join("libx.so");
        let public = PublicKey::from_secret_key(&key).unwrap();
        let made = minisign::sign(Some(&public), &key, Cursor::new(b"built"), None, None).unwrap();
        std::fs::write(signature_path(&library), made.into_string()).unwrap();
        assert_eq!(
            verify(&trusted, &library, b"built").unwrap(),
            Some(files.id.clone())
        );
        let error = verify(&trusted, &library, b"changed").unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("does not verify with key {}", files.id)),
            "{error}"
        );
    }

    #[test]
    fn a_signature_of_an_unknown_key_names_the_key_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (_, trusted) = keys_in(dir.path());
        let other = KeyPair::generate_unencrypted_keypair().unwrap();
        let library = dir.path().join("libx.so");
        let made = minisign::sign(None, &other.sk, Cursor::new(b"x"), None, None).unwrap();
        std::fs::write(signature_path(&library), made.into_string()).unwrap();
        let text = verify(&trusted, &library, b"x").unwrap_err().to_string();
        let id = key_id(other.pk.keynum());
        assert!(
            text.contains(&format!(
                "made by key {id}, which is not in the trusted keys file"
            )),
            "{text}"
        );
        assert!(text.contains("libx.so.minisig"), "{text}");
    }

    #[test]
    fn no_signature_file_is_no_signature() {
        let dir = tempfile::tempdir().unwrap();
        let (_, trusted) = keys_in(dir.path());
        assert_eq!(
            verify(&trusted, &dir.path().join("libx.so"), b"x").unwrap(),
            None
        );
    }

    #[test]
    fn keygen_keeps_existing_keys_and_makes_the_secret_one_private() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("k");
        let files = keygen(&prefix, None, false).unwrap();
        assert!(matches!(
            keygen(&prefix, None, false),
            Err(SignError::Exists { .. })
        ));
        assert!(read_secret_key(&files.secret, None).is_ok());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&files.secret)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
