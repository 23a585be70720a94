//! When a bridged server that went away may be started again.
//!
//! The first start after a connection that worked is immediate. Each further failure (the
//! server exiting, or failing to start) before a connection has stayed up for [`STABLE`]
//! doubles the wait before the next start: 1 s, 2 s, 4 s, ... up to a minute. After
//! [`PARK_AFTER`] failures in a row it is *parked* for [`PARKED_FOR`]. Meanwhile calls fail at
//! once with the reason and the time left, rather than starting the server again.

use std::time::{Duration, Instant};

use crate::util::backoff::backoff;

/// How long a connection must stay up for its end to count as the first failure again.
pub(super) const STABLE: Duration = Duration::from_secs(60);

/// How many failures in a row park a server.
pub(super) const PARK_AFTER: u32 = 5;

/// How long a parked server is left alone.
pub(super) const PARKED_FOR: Duration = Duration::from_secs(300);

/// A server's recent starts and failures.
#[derive(Debug, Default)]
pub(super) struct Restarts {
    /// Failures since the last connection that stayed up.
    failures: u32,
    /// When the current connection was made.
    started: Option<Instant>,
    /// No start before this.
    not_before: Option<Instant>,
}

impl Restarts {
    /// Notes that a connection was made at `now`.
    pub(super) fn started(&mut self, now: Instant) {
        self.started = Some(now);
        self.not_before = None;
    }

    /// Notes that the connection ended (the server exited) at `now`.
    pub(super) fn ended(&mut self, now: Instant) {
        if self.started.take().is_some_and(|s| now - s >= STABLE) {
            self.failures = 0;
        }
        self.failed(now);
    }

    /// Notes that a start failed at `now`.
    pub(super) fn failed(&mut self, now: Instant) {
        self.failures += 1;
        self.not_before = if self.failures >= PARK_AFTER {
            Some(now + PARKED_FOR)
        } else {
            (self.failures > 1).then(|| now + backoff(self.failures - 2))
        };
    }

    /// Whether it is parked (and so waits [`PARKED_FOR`]) rather than backing off.
    pub(super) fn parked(&self) -> bool {
        self.failures >= PARK_AFTER
    }

    /// Failures since the last connection that stayed up.
    pub(super) fn failures(&self) -> u32 {
        self.failures
    }

    /// How long to wait before the next start, if at all; with how many failures came before.
    pub(super) fn wait(&self, now: Instant) -> Option<(Duration, u32)> {
        let left = self.not_before?.checked_duration_since(now)?;
        (!left.is_zero()).then_some((left, self.failures))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_restart_is_immediate_and_each_further_failure_doubles_the_wait() {
        let t = Instant::now();
        let mut restarts = Restarts::default();
        restarts.started(t);
        restarts.ended(t + Duration::from_secs(1));
        assert_eq!(restarts.wait(t + Duration::from_secs(1)), None);
        restarts.started(t + Duration::from_secs(1));
        restarts.ended(t + Duration::from_secs(2));
        assert_eq!(
            restarts.wait(t + Duration::from_secs(2)),
            Some((Duration::from_secs(1), 2))
        );
        assert_eq!(restarts.wait(t + Duration::from_secs(3)), None);
        restarts.failed(t + Duration::from_secs(3));
        assert_eq!(
            restarts.wait(t + Duration::from_secs(3)),
            Some((Duration::from_secs(2), 3))
        );
    }

    #[test]
    fn five_failures_in_a_row_park_it() {
        let t = Instant::now();
        let mut restarts = Restarts::default();
        for _ in 0..PARK_AFTER - 1 {
            restarts.failed(t);
        }
        assert!(!restarts.parked());
        restarts.failed(t);
        assert!(restarts.parked());
        assert_eq!(restarts.wait(t), Some((PARKED_FOR, PARK_AFTER)));
    }

    #[test]
    fn a_connection_that_stayed_up_starts_the_count_again() {
        let t = Instant::now();
        let mut restarts = Restarts::default();
        for s in 0..5 {
            restarts.started(t + Duration::from_secs(s));
            restarts.ended(t + Duration::from_secs(s));
        }
        restarts.started(t + Duration::from_secs(100));
        restarts.ended(t + Duration::from_secs(100) + STABLE);
        assert_eq!(restarts.wait(t + Duration::from_secs(100) + STABLE), None);
    }
}
