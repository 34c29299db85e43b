//! Retry delays: per CephOSD after failed reconciles (doubling from a base, capped, reset by
//! the first success; in memory only: after a restart a failing CR simply starts over), and
//! for the watches that trigger reconciles.

use crate::runtime::locked::locked;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

pub(crate) struct Backoff {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    pub(crate) fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Records a failure of `object` and returns how long to wait before the next attempt.
    pub(crate) fn failed(&self, object: &str) -> Duration {
        let mut failures = locked(&self.failures);
        let count = failures.entry(object.to_owned()).or_insert(0);
        let delay = self
            .base
            .saturating_mul(1 << (*count).min(16))
            .min(self.max);
        *count = count.saturating_add(1);
        delay
    }

    /// Forgets the failures of `object`.
    pub(crate) fn succeeded(&self, object: &str) {
        locked(&self.failures).remove(object);
    }
}

/// Delays between retries of the watches that trigger reconciles: from 100 ms doubling to
/// at most 2 s, reset by the first event. The watches resume (relisting after `410 Gone`)
/// within seconds of the API server coming back, whatever the length of the outage.
#[derive(Clone, Debug)]
pub(crate) struct WatchRetry {
    next: Duration,
}

impl WatchRetry {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(2);
}

impl Default for WatchRetry {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

impl Iterator for WatchRetry {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        Some(delay)
    }
}

impl kube::runtime::utils::Backoff for WatchRetry {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_retries_stay_short_and_reset() {
        let mut retry = WatchRetry::default();
        let delays: Vec<u128> = retry.by_ref().take(7).map(|d| d.as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 2000, 2000]);
        kube::runtime::utils::Backoff::reset(&mut retry);
        assert_eq!(retry.next(), Some(Duration::from_millis(100)));
    }

    #[test]
    fn doubles_caps_and_resets() {
        let backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(60));
        let delays: Vec<u64> = (0..6).map(|_| backoff.failed("ns/a").as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 60, 60]);
        assert_eq!(backoff.failed("ns/b").as_secs(), 5, "per object");
        backoff.succeeded("ns/a");
        assert_eq!(backoff.failed("ns/a").as_secs(), 5);
    }
}
