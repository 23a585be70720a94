//! A file the server reads again when it changes (the API keys file, the policy file): what
//! says it changed ([`stamp`]), and the loop that looks every [`POLL`] ([`poll`]).

use std::{
    path::Path,
    time::{Duration, SystemTime},
};

use tokio_util::sync::CancellationToken;

/// How often a watched file is looked at.
pub(crate) const POLL: Duration = Duration::from_millis(500);

/// What identifies one version of a file: its modification time and length.
pub(crate) type Stamp = Option<(SystemTime, u64)>;

/// The file's modification time and length, `None` when it cannot be read.
pub(crate) fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Runs `refresh` off the runtime's threads every [`POLL`] until `cancel`, or until it
/// returns `false` (what it refreshes is gone).
pub(crate) async fn poll<F>(refresh: F, cancel: CancellationToken)
where
    F: Fn() -> bool + Clone + Send + 'static,
{
    let mut ticks = tokio::time::interval(POLL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticks.tick() => {}
        }
        if let Ok(false) = tokio::task::spawn_blocking(refresh.clone()).await {
            return;
        }
    }
}
