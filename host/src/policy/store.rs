//! The policy file as the server holds it: read and compiled at start-up, and again when it
//! changes. A file that no longer reads or compiles keeps the last good policy in force, with a
//! warning naming the file, the line and the entry.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, RwLock, Weak},
};

use arc_swap::ArcSwap;
use tokio_util::sync::CancellationToken;

use super::{
    Policy,
    file::{PolicyFile, PolicyFileError},
};
use crate::util::{
    error::chain,
    lock::{read, write},
    watched::{Stamp, poll, stamp},
};

/// The policy of a file, kept current.
#[derive(Debug)]
pub(crate) struct PolicyStore {
    path: PathBuf,
    policy: ArcSwap<Policy>,
    stamp: RwLock<Stamp>,
}

impl PolicyStore {
    /// Reads and compiles `path`: an error when it cannot, naming the line.
    pub(crate) fn open(path: &Path) -> Result<Self, PolicyFileError> {
        let stamp = stamp(path);
        let policy = load(path, None)?;
        tracing::info!("policy from {}: {}", path.display(), policy.summary());
        Ok(Self {
            path: path.to_owned(),
            policy: ArcSwap::from_pointee(policy),
            stamp: RwLock::new(stamp),
        })
    }

    /// The policy in force.
    pub(crate) fn current(&self) -> Arc<Policy> {
        self.policy.load_full()
    }

    /// Reads the file again if it changed since last read; whether the policy changed.
    pub(crate) fn refresh(&self) -> bool {
        let now = stamp(&self.path);
        if *read(&self.stamp) == now {
            return false;
        }
        *write(&self.stamp) = now;
        match load(&self.path, Some(&self.current())) {
            Ok(policy) => {
                tracing::info!(
                    "the policy file {} changed: {}",
                    self.path.display(),
                    policy.summary()
                );
                self.policy.store(Arc::new(policy));
                true
            }
            Err(error) => {
                tracing::warn!("{}; the policy read before stays in force", chain(&error));
                false
            }
        }
    }

    /// Refreshes the store every [`crate::util::watched::POLL`] until `cancel`, or until
    /// the server drops it; `changed` runs after each change that may change what a caller is
    /// listed (the rules, before or after).
    pub(crate) async fn watch<F>(store: Weak<Self>, cancel: CancellationToken, changed: F)
    where
        F: Fn() + Clone + Send + 'static,
    {
        poll(
            move || {
                let Some(store) = store.upgrade() else {
                    return false;
                };
                let had_rules = store.current().has_rules();
                if store.refresh() && (had_rules || store.current().has_rules()) {
                    changed();
                }
                true
            },
            cancel,
        )
        .await;
    }
}

/// Reads and compiles `path`, keeping `previous`'s counters of unchanged entries.
fn load(path: &Path, previous: Option<&Policy>) -> Result<Policy, PolicyFileError> {
    let file = PolicyFile::read(path)?;
    Policy::compile(path, &file, previous)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{alice, tool};

    #[test]
    fn a_changed_file_is_read_again_and_a_broken_one_keeps_the_policy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(
            &path,
            "[[rule]]\neffect = \"deny\"\nwhen = \"mcp.tool.name == 'a'\"\n",
        )
        .unwrap();
        let store = PolicyStore::open(&path).unwrap();
        let denied = |store: &PolicyStore, name| {
            store
                .current()
                .hides(&alice(), &tool(name, "s", true))
                .is_some()
        };
        assert!(denied(&store, "a") && !denied(&store, "b"));
        assert!(!store.refresh(), "unchanged");

        std::fs::write(
            &path,
            "[[rule]]\neffect = \"deny\"\nwhen = \"mcp.tool.name == 'bb'\"\n",
        )
        .unwrap();
        assert!(store.refresh());
        assert!(!denied(&store, "a") && denied(&store, "bb"));

        std::fs::write(
            &path,
            "[[rule]]\neffect = \"deny\"\nwhen = \"mcp.tool.name ==\"\n",
        )
        .unwrap();
        assert!(!store.refresh());
        assert!(denied(&store, "bb"), "the last good policy stays");
    }

    #[test]
    fn a_bad_file_at_start_is_an_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, "\n\n[[limit]]\nrate = \"x\"\nperiod = \"1s\"\n").unwrap();
        let error = PolicyStore::open(&path).unwrap_err().to_string();
        assert!(error.contains("line 4"), "{error}");
    }
}
