//! Retry delays: per CephOSD after failed reconciles (doubling from a base, capped, reset by
//! the first success; the count of failures is in `memory`, so after a restart a failing CR
//! simply starts over), and for the watches that trigger reconciles.

use std::time::Duration;

pub(crate) struct Backoff {
    base: Duration,
    max: Duration,
}

impl Backoff {
    pub(crate) fn new(base: Duration, max: Duration) -> Self {
        Self { base, max }
    }

    /// How long to wait before the next attempt after a failure that followed `failures`
    /// others in a row.
    pub(crate) fn delay(&self, failures: u32) -> Duration {
        self.base
            .saturating_mul(1 << failures.min(16))
            .min(self.max)
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
}
