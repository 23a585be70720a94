//! The counters limits are made of, as plain values over an explicit clock: a token bucket
//! ([`Bucket`]), a fixed window ([`Window`]), and a map of them by key that forgets the idle
//! ones ([`Keyed`]).

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::util::lock::lock;

/// A token bucket: `capacity` tokens, refilled at `rate` tokens per `period`, one taken per
/// call. Exact: the fractional tokens refilled are kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// A bucket's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    /// The most tokens it holds.
    pub(crate) capacity: f64,
    /// Tokens refilled per second.
    pub(crate) per_second: f64,
}

impl Bucket {
    /// A full bucket of `shape` at `now`.
    pub(crate) fn full(shape: Shape, now: Instant) -> Self {
        Self {
            tokens: shape.capacity,
            updated: now,
        }
    }

    /// Takes one token at `now`, or says how long until one is there.
    pub(crate) fn take(&mut self, shape: Shape, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * shape.per_second).min(shape.capacity);
        self.updated = now.max(self.updated);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64(
            (1.0 - self.tokens) / shape.per_second,
        ))
    }

    /// Gives back a token taken by a call that another limit then refused.
    pub(crate) fn give_back(&mut self, shape: Shape) {
        self.tokens = (self.tokens + 1.0).min(shape.capacity);
    }

    /// Whether it is full again at `now`, so forgetting it changes nothing.
    fn is_full(&self, shape: Shape, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens + elapsed * shape.per_second >= shape.capacity
    }
}

/// A fixed window: at most `calls` from its start until `period` later, when a new one
/// starts at the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    started: Instant,
    used: u64,
}

impl Window {
    /// A window starting at `now`, unused.
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            started: now,
            used: 0,
        }
    }

    /// Counts one call at `now` within `calls` per `period`, or says how long until the
    /// window ends.
    pub(crate) fn take(
        &mut self,
        calls: u64,
        period: Duration,
        now: Instant,
    ) -> Result<(), Duration> {
        if now.saturating_duration_since(self.started) >= period {
            *self = Self::new(now);
        }
        if self.used < calls {
            self.used += 1;
            return Ok(());
        }
        Err((self.started + period).saturating_duration_since(now))
    }

    /// Gives back a call another limit then refused.
    pub(crate) fn give_back(&mut self) {
        self.used = self.used.saturating_sub(1);
    }

    /// Whether it ended by `now`.
    fn is_over(&self, period: Duration, now: Instant) -> bool {
        now.saturating_duration_since(self.started) >= period
    }
}

/// What a [`Keyed`] map holds: a counter that can say it can be forgotten.
pub(crate) trait Counter: Copy {
    /// How the counter is set (a bucket's shape, a window's calls and period).
    type Config: Copy;
    /// A new counter at `now`.
    fn fresh(config: Self::Config, now: Instant) -> Self;
    /// Whether forgetting it at `now` changes nothing.
    fn idle(&self, config: Self::Config, now: Instant) -> bool;
}

impl Counter for Bucket {
    type Config = Shape;
    fn fresh(config: Shape, now: Instant) -> Self {
        Self::full(config, now)
    }
    fn idle(&self, config: Shape, now: Instant) -> bool {
        self.is_full(config, now)
    }
}

impl Counter for Window {
    type Config = (u64, Duration);
    fn fresh(_: (u64, Duration), now: Instant) -> Self {
        Self::new(now)
    }
    fn idle(&self, (_, period): (u64, Duration), now: Instant) -> bool {
        self.is_over(period, now)
    }
}

/// How many keys a map holds before it forgets its idle ones.
const SWEEP_AT: usize = 4096;

/// Counters by key (a caller, a tool, ...), made on first use; idle ones are forgotten when
/// the map grows past [`SWEEP_AT`], so a stream of new keys does not grow it without end.
#[derive(Debug)]
pub(crate) struct Keyed<C: Counter> {
    config: C::Config,
    counters: Mutex<HashMap<String, C>>,
}

impl<C: Counter> Keyed<C>
where
    C::Config: std::fmt::Debug,
{
    /// An empty map of counters set by `config`.
    pub(crate) fn new(config: C::Config) -> Self {
        Self {
            config,
            counters: Mutex::default(),
        }
    }

    /// The counters' config.
    pub(crate) fn config(&self) -> C::Config {
        self.config
    }

    /// Runs `f` on the counter of `key` at `now`.
    pub(crate) fn with<T>(&self, key: &str, now: Instant, f: impl FnOnce(&mut C) -> T) -> T {
        let mut counters = lock(&self.counters);
        if let Some(counter) = counters.get_mut(key) {
            return f(counter);
        }
        if counters.len() >= SWEEP_AT {
            let config = self.config;
            counters.retain(|_, counter| !counter.idle(config, now));
        }
        f(counters
            .entry(key.to_owned())
            .or_insert_with(|| C::fresh(self.config, now)))
    }

    /// How many keys it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.counters).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_PER_SECOND: Shape = Shape {
        capacity: 2.0,
        per_second: 2.0,
    };

    #[test]
    fn a_bucket_lets_its_burst_through_then_refills_at_its_rate() {
        let start = Instant::now();
        let mut bucket = Bucket::full(TWO_PER_SECOND, start);
        assert_eq!(bucket.take(TWO_PER_SECOND, start), Ok(()));
        assert_eq!(bucket.take(TWO_PER_SECOND, start), Ok(()));
        assert_eq!(
            bucket.take(TWO_PER_SECOND, start),
            Err(Duration::from_millis(500))
        );
        let later = start + Duration::from_millis(250);
        assert_eq!(
            bucket.take(TWO_PER_SECOND, later),
            Err(Duration::from_millis(250)),
            "half a token refilled"
        );
        assert_eq!(
            bucket.take(TWO_PER_SECOND, start + Duration::from_millis(500)),
            Ok(())
        );
        bucket.give_back(TWO_PER_SECOND);
        assert_eq!(
            bucket.take(TWO_PER_SECOND, start + Duration::from_millis(500)),
            Ok(())
        );
        let long_after = start + Duration::from_secs(60);
        assert!(bucket.is_full(TWO_PER_SECOND, long_after));
        assert_eq!(bucket.take(TWO_PER_SECOND, long_after), Ok(()));
        assert_eq!(bucket.take(TWO_PER_SECOND, long_after), Ok(()));
        assert!(bucket.take(TWO_PER_SECOND, long_after).is_err(), "capped");
    }

    #[test]
    fn a_window_counts_calls_until_it_ends() {
        let start = Instant::now();
        let minute = Duration::from_secs(60);
        let mut window = Window::new(start);
        assert_eq!(window.take(2, minute, start), Ok(()));
        assert_eq!(
            window.take(2, minute, start + Duration::from_secs(10)),
            Ok(())
        );
        assert_eq!(
            window.take(2, minute, start + Duration::from_secs(20)),
            Err(Duration::from_secs(40))
        );
        assert_eq!(
            window.take(2, minute, start + minute),
            Ok(()),
            "a new window"
        );
    }

    #[test]
    fn idle_keys_are_forgotten_once_the_map_is_big() {
        let keyed = Keyed::<Bucket>::new(TWO_PER_SECOND);
        let start = Instant::now();
        for key in 0..SWEEP_AT {
            keyed
                .with(&key.to_string(), start, |b| b.take(TWO_PER_SECOND, start))
                .unwrap();
        }
        assert_eq!(keyed.len(), SWEEP_AT);
        let later = start + Duration::from_secs(5);
        keyed.with("new", later, |_| ());
        assert_eq!(keyed.len(), 1);
    }
}
