//! The commands that make plugins trusted: `keygen`, `sign` and `lock`. What they write is
//! read by discovery ([`crate::discovery::trust`]).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::args::Common;
use crate::discovery::{
    Provider, SkipReason,
    trust::{
        lock::{Lock, LockEntry},
        signature,
    },
};
use crate::util::hash::sha256_of;

/// The value of the environment variable `name`, the password `--password-env` names.
fn password(name: Option<&str>) -> anyhow::Result<Option<String>> {
    name.map(|name| {
        std::env::var(name)
            .with_context(|| format!("--password-env names `{name}`, which is not set"))
    })
    .transpose()
}

/// `keygen`: makes a key pair at `out` and says where it is.
pub(crate) fn keygen(out: &Path, password_env: Option<&str>, force: bool) -> anyhow::Result<()> {
    let protected = password_env.is_some();
    let files = signature::keygen(out, password(password_env)?, force)?;
    eprintln!(
        "made key {}: the secret key is {} ({}), the public key {}; give the public key to \
         --trusted-keys, keep the secret one out of the plugin folder",
        files.id,
        files.secret.display(),
        if protected {
            "protected by the password"
        } else {
            "unencrypted, readable by you alone"
        },
        files.public.display()
    );
    Ok(())
}

/// `sign`: signs each library with the secret key at `key`.
pub(crate) fn sign(
    libraries: &[PathBuf],
    key: &Path,
    password_env: Option<&str>,
) -> anyhow::Result<()> {
    let key = signature::read_secret_key(key, password(password_env)?)?;
    for library in libraries {
        let (path, id) = signature::sign(library, &key)?;
        eprintln!(
            "signed {} with key {id}: {}",
            library.display(),
            path.display()
        );
    }
    Ok(())
}

/// `lock`: writes the lock file of every library the plugin folder serves (signatures checked
/// as the flags say, the lock file itself not).
pub(crate) fn lock(common: &Common) -> anyhow::Result<()> {
    let mut sources = common.sources();
    sources.trust.locked = false;
    let path = sources.trust.lock_path(&sources.plugin_dir);
    let found = sources.discover()?;
    let mut entries = Vec::new();
    for plugin in &found.plugins {
        if matches!(plugin.provider, Provider::Bridged { .. }) {
            continue;
        }
        let sha256 = match &plugin.checked {
            Some(checked) => checked.sha256.clone(),
            None => sha256_of(
                &std::fs::read(&plugin.path)
                    .with_context(|| format!("reading {}", plugin.path.display()))?,
            ),
        };
        let entry = LockEntry::new(&plugin.path, &plugin.manifest, sha256);
        eprintln!(
            "locked {} {} ({}): SHA-256 {}",
            entry.name, entry.version, entry.file, entry.sha256
        );
        entries.push(entry);
    }
    for skipped in &found.skipped {
        if !matches!(skipped.reason, SkipReason::BadServer { .. }) {
            eprintln!("not locked: {skipped}");
        }
    }
    Lock::write(&path, entries)?;
    eprintln!(
        "wrote {}: serve with --locked to serve these libraries alone",
        path.display()
    );
    Ok(())
}
