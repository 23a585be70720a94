//! Serving through changes of the plugins: each batch of triggers ([`crate::reload`]) is a new
//! scan; a scan that changes anything becomes the next generation, swapped in atomically, and
//! the sessions whose lists changed are told ([`crate::serve::mcp::notifications`]). A scan that fails (the
//! folder went away, `--strict-config` and a bad `mcp.json`) keeps the current generation.

use std::{collections::BTreeSet, path::PathBuf, sync::Arc};

use tokio::sync::mpsc;

use crate::serve::{ServeState, edge::readiness::Watcher, generation::Generation};
use crate::{
    discovery::{self, Discovery},
    registry::Registry,
    reload::{self, Changes, DEBOUNCE, MAX_BATCH, Source, Trigger, Triggers},
};

/// What keeps reloading going: the watcher, when files are watched.
#[derive(Debug)]
pub(crate) struct Reloading {
    _watcher: Option<notify::RecommendedWatcher>,
}

/// Starts reloading `state` from `source`: watches its files (unless `--no-watch`), listens for
/// `SIGHUP`, polls the pins of bridged servers with changed tools, and applies each batch of
/// what comes through `receiver` (fed by `triggers`).
pub(crate) fn start(
    state: Arc<ServeState>,
    source: Source,
    triggers: Triggers,
    receiver: mpsc::UnboundedReceiver<Trigger>,
) -> Reloading {
    let watcher = if source.watch {
        let files: Vec<PathBuf> = source
            .config_files
            .iter()
            .chain(&source.trust_files)
            .cloned()
            .collect();
        let watching = reload::watch(&source.plugin_dir, &files, triggers.clone());
        state.readiness.set_watcher(match &watching {
            Ok(_) => Watcher::Running,
            Err(error) => Watcher::Failed(error.to_string()),
        });
        watching
            .inspect_err(|error| {
                tracing::warn!(
                    "cannot watch {} for changes: {error}; send SIGHUP to scan it again \
                     (/readyz answers 503; --no-watch serves without watching)",
                    source.plugin_dir.display()
                );
            })
            .ok()
    } else {
        tracing::info!(
            "not watching {} (--no-watch); send SIGHUP to scan it again",
            source.plugin_dir.display()
        );
        None
    };
    tokio::spawn(reload::on_accepted_pins(
        source.pins.clone(),
        triggers.clone(),
    ));
    tokio::spawn(reload::on_hangup(triggers));
    tokio::spawn(apply_batches(state, source, receiver));
    Reloading { _watcher: watcher }
}

/// Scans again after each batch of triggers, until every sender is gone.
async fn apply_batches(
    state: Arc<ServeState>,
    source: Source,
    mut receiver: mpsc::UnboundedReceiver<Trigger>,
) {
    let mut seen = source.skipped.clone();
    while let Some(relisted) = reload::next_batch(&mut receiver, DEBOUNCE, MAX_BATCH).await {
        let discover = Arc::clone(&source.discover);
        let known = Arc::clone(state.generation().registry());
        let found = match tokio::task::spawn_blocking(move || discover(known.plugins())).await {
            Ok(Ok(found)) => found,
            Ok(Err(error)) => {
                crate::observe::metrics::reload_failed();
                tracing::warn!(
                    "cannot scan the plugins again: {error}; still serving generation {}",
                    state.generation().info().number
                );
                continue;
            }
            Err(error) => {
                crate::observe::metrics::reload_failed();
                tracing::error!("scanning the plugins again failed: {error}");
                continue;
            }
        };
        discovery::warn_skipped(&found, Some(&seen));
        (state.skipped).store(Arc::new(crate::reports::SkippedRow::all(&found.skipped)));
        apply(&state, &found, &relisted).await;
        seen = found.skipped;
    }
}

/// Opens in `next` the `relisted` bridged servers `old` had open, while `old` still holds their
/// connections: the new instance takes the connection over, and the server process (and its
/// state) lives on.
async fn reopen_relisted(old: &Generation, next: &Generation, relisted: &BTreeSet<String>) {
    let open: Vec<String> = relisted
        .iter()
        .filter(|name| old.builder().is_open(name))
        .cloned()
        .collect();
    if open.is_empty() {
        return;
    }
    let builder = Arc::clone(next.builder());
    let _ = tokio::task::spawn_blocking(move || {
        for name in open {
            let _ = builder.plugin(&name);
        }
    })
    .await;
}

/// Makes `found` the next generation if it changes anything (`relisted` bridged servers are
/// opened anew), tells the sessions whose lists changed, and opens the new generation's
/// start-up plugins. Returns the new generation, if one was made.
pub(crate) async fn apply(
    state: &ServeState,
    found: &Discovery,
    relisted: &BTreeSet<String>,
) -> Option<Arc<Generation>> {
    // One change of generation at a time: a scan and a plugin turning something off each build
    // on the generation before theirs.
    let _changing = state.changing.lock().await;
    let old = state.generation();
    let registry = Arc::new(Registry::new(found.plugins.clone()));
    let changes = Changes::between(old.registry(), &registry, relisted);
    if changes.is_empty() {
        tracing::debug!("scanned the plugins again: nothing changed");
        return None;
    }
    registry.warn_of_new_conflicts(Some(old.registry()));
    let builder = Arc::new(old.builder().next(registry, &changes.replaced));
    // A plugin replaced or removed starts anew: what it turned off is on again.
    let starting_anew = changes.replaced.union(&changes.removed).cloned().collect();
    let hidden = old.hidden().forgetting(old.registry(), &starting_anew);
    let next = state.advance(&old, builder, hidden);
    reopen_relisted(&old, &next, relisted).await;
    let told = state.announce(&old, &next, &changes.code());
    tracing::info!(
        "generation {}: {changes}; {told} of {} session(s) told their lists changed",
        next.info().number,
        state.listeners.len()
    );
    let startup = Arc::clone(next.builder());
    let _ = tokio::task::spawn_blocking(move || startup.open_startup_plugins()).await;
    Some(next)
}
