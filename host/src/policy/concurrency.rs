//! Concurrency caps: at most `max` calls at once for each plugin, tool or caller an entry is
//! counted per, `queue` more waiting for a place; past the queue, the answer is "busy" at once.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{
    Caller, Denial, DenialKind, ToolFacts,
    file::{ConcurrencyEntry, Entry, Per},
    matcher::{Matcher, key},
};
use crate::util::lock::lock;

/// How many places a cap keeps before it forgets the unused ones.
const SWEEP_AT: usize = 4096;

/// The places of one cap's key: its semaphore and how many wait on it.
#[derive(Debug)]
struct Places {
    semaphore: Arc<Semaphore>,
    waiting: AtomicU32,
}

/// One cap, compiled.
#[derive(Debug)]
struct Cap {
    name: String,
    entry: ConcurrencyEntry,
    matcher: Matcher,
    places: Arc<Mutex<HashMap<String, Arc<Places>>>>,
}

/// The concurrency caps of a policy.
#[derive(Debug, Default)]
pub(crate) struct Caps {
    caps: Vec<Cap>,
}

/// The places a call holds until it ends.
#[derive(Debug, Default)]
pub(crate) struct Held(#[allow(dead_code)] Vec<OwnedSemaphorePermit>);

impl Caps {
    /// The caps of `entries`, keeping the places of `previous`'s entries that did not change
    /// (so the calls running keep counting).
    pub(crate) fn compile(entries: &[Entry<ConcurrencyEntry>], previous: Option<&Caps>) -> Self {
        let caps = entries
            .iter()
            .map(|entry| {
                let kept = previous.and_then(|p| {
                    p.caps
                        .iter()
                        .find(|c| c.name == entry.name && c.entry == entry.value)
                });
                Cap {
                    name: entry.name.clone(),
                    entry: entry.value.clone(),
                    matcher: Matcher::new(entry.value.matching()),
                    places: kept.map_or_else(Arc::default, |c| Arc::clone(&c.places)),
                }
            })
            .collect();
        Self { caps }
    }

    /// Takes a place in every cap that applies to `caller` calling `tool`, waiting in each
    /// queue with room; "busy" when a cap and its queue are full.
    pub(crate) async fn enter(
        &self,
        caller: &Caller<'_>,
        tool: &ToolFacts<'_>,
    ) -> Result<Held, Denial> {
        let mut held = Vec::new();
        for cap in &self.caps {
            if !cap.matcher.matches(caller, tool) {
                continue;
            }
            let places = cap.places_of(&key(&cap.entry.per, caller, tool));
            if let Ok(permit) = Arc::clone(&places.semaphore).try_acquire_owned() {
                held.push(permit);
                continue;
            }
            let queued = places
                .waiting
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < cap.entry.queue).then_some(n + 1)
                });
            if queued.is_err() {
                return Err(Denial {
                    rule: cap.name.clone(),
                    kind: DenialKind::Busy,
                    message: format!(
                        "busy: `{}` allows {} call(s) at once{} and {} waiting, all taken; try \
                         again shortly",
                        cap.name,
                        cap.entry.max,
                        per_text(&cap.entry.per, caller, tool),
                        cap.entry.queue
                    ),
                    retry_after: Some(std::time::Duration::from_secs(1)),
                });
            }
            let permit = Arc::clone(&places.semaphore).acquire_owned().await;
            places.waiting.fetch_sub(1, Ordering::AcqRel);
            match permit {
                Ok(permit) => held.push(permit),
                Err(_) => unreachable!("a cap's semaphore is never closed"),
            }
        }
        Ok(Held(held))
    }

    /// How many caps it has.
    pub(crate) fn len(&self) -> usize {
        self.caps.len()
    }
}

impl Cap {
    /// The places of `key`, made on first use.
    fn places_of(&self, key: &str) -> Arc<Places> {
        let mut places = lock(&self.places);
        if let Some(found) = places.get(key) {
            return Arc::clone(found);
        }
        if places.len() >= SWEEP_AT {
            let max = self.entry.max as usize;
            places.retain(|_, p| Arc::strong_count(p) > 1 || p.semaphore.available_permits() < max);
        }
        let made = Arc::new(Places {
            semaphore: Arc::new(Semaphore::new(self.entry.max.max(1) as usize)),
            waiting: AtomicU32::new(0),
        });
        places.insert(key.to_owned(), Arc::clone(&made));
        made
    }
}

/// ` for plugin x`, naming what the cap is counted per.
fn per_text(per: &[Per], caller: &Caller<'_>, tool: &ToolFacts<'_>) -> String {
    per.iter()
        .map(|p| match p {
            Per::Identity => format!(" for caller `{}`", caller.name),
            Per::Tool => format!(" for tool `{}`", tool.name),
            Per::Toolset => format!(" for toolset `{}`", tool.toolset),
            Per::Plugin => format!(" for plugin `{}`", tool.plugin),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::policy::{
        file::PolicyFile,
        tests::{alice, tool},
    };

    #[tokio::test]
    async fn calls_past_the_cap_wait_in_the_queue_and_past_it_are_busy() {
        let file = PolicyFile::parse(
            Path::new("p"),
            "[[concurrency]]\nname = \"one\"\nplugin = \"p\"\nper = [\"plugin\"]\nmax = 1\nqueue = 1\n",
        )
        .unwrap();
        let caps = Arc::new(Caps::compile(&file.concurrency, None));
        let t = tool("t", "s", false);
        let first = caps.enter(&alice(), &t).await.unwrap();
        let waiting = tokio::spawn({
            let caps = Arc::clone(&caps);
            async move { caps.enter(&alice(), &tool("t", "s", false)).await.is_ok() }
        });
        while caps.caps[0].places_of("p").waiting.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        let busy = caps.enter(&alice(), &t).await.unwrap_err();
        assert_eq!(busy.kind, DenialKind::Busy);
        assert!(busy.message.contains("for plugin `p`"), "{}", busy.message);
        drop(first);
        assert!(waiting.await.unwrap(), "the waiting call got the place");
    }
}
