//! Retry delays: per CephOSD after failed reconciles (doubling from a base, capped, reset by
//! the first success; the count of failures is in `memory`, so after a restart a failing CR
//! simply starts over), and for the watches that trigger reconciles.

use std::time::{Duration, Instant};

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
/// at most 2 s, back to 100 ms once the watch has worked for a while. The watches resume
/// (relisting after `410 Gone`) within seconds of the API server coming back, whatever the
/// length of the outage. A watch that fails on every LIST (the CRD not installed, a missing
/// permission) still says `Init` before each LIST: that is no sign of health and resets
/// nothing, so such a watch retries every 2 s, not ten times a second.
#[derive(Clone, Debug)]
pub(crate) struct WatchRetry {
    next: Duration,
    /// Since when the watch has yielded events without failing.
    working_since: Option<Instant>,
}

impl WatchRetry {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(2);
    /// Working this long before a failure: the next retry starts from `FIRST` again.
    const HEALTHY: Duration = Duration::from_secs(10);

    /// The delay before the retry after a failure at `now`.
    fn next_at(&mut self, now: Instant) -> Duration {
        if self
            .working_since
            .take()
            .is_some_and(|since| now.saturating_duration_since(since) >= Self::HEALTHY)
        {
            self.next = Self::FIRST;
        }
        let delay = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        delay
    }

    /// An event arrived at `now`.
    fn worked_at(&mut self, now: Instant) {
        self.working_since.get_or_insert(now);
    }
}

impl Default for WatchRetry {
    fn default() -> Self {
        Self {
            next: Self::FIRST,
            working_since: None,
        }
    }
}

impl Iterator for WatchRetry {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(self.next_at(Instant::now()))
    }
}

impl kube::runtime::utils::Backoff for WatchRetry {
    fn reset(&mut self) {
        self.worked_at(Instant::now());
    }
}

#[cfg(test)]
mod tests;
