//! The wait before trying again what failed: a bridged server that did not open, a child
//! process that crashed.

use std::time::Duration;

/// The wait after `attempt + 1` failures: 1 s, doubling up to a minute.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1 << attempt.min(6)).min(Duration::from_secs(60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_a_second_up_to_a_minute() {
        let waits: Vec<u64> = (0..8).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
    }
}
