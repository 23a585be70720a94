//! Circuit breakers, one per plugin an entry matches (the first entry matching a plugin's
//! name): `failures` failed calls (errors, timeouts, crashes) within `window` open it; while
//! open, calls are answered at once with the reason; after `open_for` one probe call is let
//! through (half-open), and its success closes the breaker, its failure opens it again.

use std::{
    collections::{HashMap, VecDeque},
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use super::{
    Denial, DenialKind,
    file::{BreakerEntry, Entry, PolicyFileError},
};
use crate::{selection::glob_matches, util::lock::lock};

/// One plugin's breaker.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Calls pass; the times of the recent failures.
    Closed(VecDeque<Instant>),
    /// Calls are refused until then, for this reason.
    Open { until: Instant, reason: String },
    /// One probe call went through at this time; the others are refused until it ends.
    HalfOpen { since: Instant, reason: String },
}

/// What a breaker's state is called in `/healthz`, `/toolsets` and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Calls pass.
    Closed,
    /// Calls are refused.
    Open,
    /// One probe call is let through.
    HalfOpen,
}

impl Phase {
    /// `closed`, `open` or `half_open`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
        }
    }
}

/// One `[[breaker]]` entry, compiled, with the state of each plugin it watches.
#[derive(Debug)]
struct Breaker {
    name: String,
    entry: BreakerEntry,
    states: Arc<Mutex<HashMap<String, State>>>,
}

/// The circuit breakers of a policy.
#[derive(Debug, Default)]
pub(crate) struct Breakers {
    breakers: Vec<Breaker>,
}

impl Breakers {
    /// The breakers of `entries`, keeping the states of `previous`'s entries that did not
    /// change; an entry that could never open is an error naming its line.
    pub(crate) fn compile(
        path: &Path,
        entries: &[Entry<BreakerEntry>],
        previous: Option<&Breakers>,
    ) -> Result<Self, PolicyFileError> {
        let breakers = entries
            .iter()
            .map(|entry| {
                if entry.value.failures == 0 {
                    return Err(PolicyFileError::invalid(
                        path,
                        entry.line,
                        format!("breaker `{}`: `failures` must be at least 1", entry.name),
                    ));
                }
                let kept = previous.and_then(|p| {
                    p.breakers
                        .iter()
                        .find(|b| b.name == entry.name && b.entry == entry.value)
                });
                Ok(Breaker {
                    name: entry.name.clone(),
                    entry: entry.value.clone(),
                    states: kept.map_or_else(Arc::default, |b| Arc::clone(&b.states)),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { breakers })
    }

    /// The breaker watching `plugin`.
    fn of(&self, plugin: &str) -> Option<&Breaker> {
        self.breakers
            .iter()
            .find(|b| glob_matches(&b.entry.plugin, plugin))
    }

    /// Whether a call of `plugin` may go through at `now`: refused while its breaker is open,
    /// and while a probe is out.
    pub(crate) fn check(&self, plugin: &str, now: Instant) -> Result<(), Denial> {
        let Some(breaker) = self.of(plugin) else {
            return Ok(());
        };
        let mut states = lock(&breaker.states);
        let Some(state) = states.get_mut(plugin) else {
            return Ok(());
        };
        let refuse = |reason: &str, wait: Duration| Denial {
            rule: breaker.name.clone(),
            kind: DenialKind::BreakerOpen,
            message: format!(
                "plugin `{plugin}` is failing and its circuit breaker `{}` is open: {reason}",
                breaker.name
            ),
            retry_after: Some(wait),
        };
        match state {
            State::Closed(_) => Ok(()),
            State::Open { until, reason } if now < *until => {
                Err(refuse(reason, until.saturating_duration_since(now)))
            }
            State::HalfOpen { since, reason }
                if now.saturating_duration_since(*since) < breaker.entry.open_for =>
            {
                Err(refuse(reason, breaker.entry.open_for))
            }
            State::Open { reason, .. } | State::HalfOpen { reason, .. } => {
                tracing::info!(
                    "circuit breaker `{}` of plugin `{plugin}` is half open: one call probes it",
                    breaker.name
                );
                *state = State::HalfOpen {
                    since: now,
                    reason: std::mem::take(reason),
                };
                Ok(())
            }
        }
    }

    /// Records how a call of `plugin` ended at `now`: `Err` with why it failed.
    pub(crate) fn record(&self, plugin: &str, outcome: Result<(), &str>, now: Instant) {
        let Some(breaker) = self.of(plugin) else {
            return;
        };
        let mut states = lock(&breaker.states);
        match outcome {
            Ok(()) => {
                if let Some(State::Open { .. } | State::HalfOpen { .. }) = states.get(plugin) {
                    tracing::warn!(
                        "circuit breaker `{}` of plugin `{plugin}` closed: a call succeeded",
                        breaker.name
                    );
                }
                if let Some(state) = states.get_mut(plugin) {
                    if !matches!(state, State::Closed(_)) {
                        crate::observe::metrics::breaker_state(plugin, false);
                    }
                    *state = State::Closed(VecDeque::new());
                }
            }
            Err(reason) => {
                let entry = &breaker.entry;
                let state = states
                    .entry(plugin.to_owned())
                    .or_insert_with(|| State::Closed(VecDeque::new()));
                let opens = match state {
                    State::Closed(failures) => {
                        failures.push_back(now);
                        while failures
                            .front()
                            .is_some_and(|t| now.saturating_duration_since(*t) > entry.window)
                        {
                            failures.pop_front();
                        }
                        failures.len() >= entry.failures as usize
                    }
                    State::HalfOpen { .. } => true,
                    State::Open { .. } => false,
                };
                if opens {
                    tracing::warn!(
                        "circuit breaker `{}` of plugin `{plugin}` opened for {:?}: {reason}",
                        breaker.name,
                        entry.open_for
                    );
                    crate::observe::metrics::breaker_state(plugin, true);
                    *state = State::Open {
                        until: now + entry.open_for,
                        reason: reason.to_owned(),
                    };
                }
            }
        }
    }

    /// The phase of each plugin's breaker that has seen a failure, with its breaker's name,
    /// by plugin name.
    pub(crate) fn phases(&self, now: Instant) -> Vec<(String, Phase, String)> {
        let mut phases = Vec::new();
        for breaker in &self.breakers {
            for (plugin, state) in lock(&breaker.states).iter() {
                let phase = match state {
                    State::Closed(_) => Phase::Closed,
                    State::Open { until, .. } if now < *until => Phase::Open,
                    State::Open { .. } | State::HalfOpen { .. } => Phase::HalfOpen,
                };
                phases.push((plugin.clone(), phase, breaker.name.clone()));
            }
        }
        phases.sort();
        phases
    }

    /// How many breakers it has.
    pub(crate) fn len(&self) -> usize {
        self.breakers.len()
    }

    /// Whether there are no breakers.
    pub(crate) fn is_empty(&self) -> bool {
        self.breakers.is_empty()
    }
}

impl PartialOrd for Phase {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Phase {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::file::PolicyFile;

    fn breakers() -> Breakers {
        let path = Path::new("p");
        let file = PolicyFile::parse(
            path,
            "[[breaker]]\nname = \"b\"\nplugin = \"up*\"\nfailures = 2\nwindow = \"10s\"\nopen_for = \"5s\"\n",
        )
        .unwrap();
        Breakers::compile(path, &file.breakers, None).unwrap()
    }

    #[test]
    fn failures_in_the_window_open_it_and_a_probe_closes_it() {
        let breakers = breakers();
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        breakers.record("upstream", Err("connection refused"), at(0));
        assert!(breakers.check("upstream", at(0)).is_ok());
        breakers.record("upstream", Err("connection refused"), at(20));
        assert!(
            breakers.check("upstream", at(20)).is_ok(),
            "the first left the window"
        );
        breakers.record("upstream", Err("connection refused"), at(21));
        let denial = breakers.check("upstream", at(22)).unwrap_err();
        assert_eq!(denial.kind, DenialKind::BreakerOpen);
        assert!(
            denial.message.contains("connection refused"),
            "{}",
            denial.message
        );
        assert_eq!(denial.retry_after, Some(Duration::from_secs(4)));
        assert_eq!(breakers.phases(at(22))[0].1, Phase::Open);
        assert!(breakers.check("other", at(22)).is_ok(), "not watched");

        assert!(breakers.check("upstream", at(26)).is_ok(), "the probe");
        assert!(
            breakers.check("upstream", at(26)).is_err(),
            "one probe at a time"
        );
        breakers.record("upstream", Err("still down"), at(27));
        assert!(breakers.check("upstream", at(28)).is_err(), "open again");
        assert!(breakers.check("upstream", at(32)).is_ok(), "the next probe");
        breakers.record("upstream", Ok(()), at(32));
        assert!(breakers.check("upstream", at(32)).is_ok());
        assert_eq!(breakers.phases(at(32))[0].1, Phase::Closed);
    }
}
