//! Per-CephOSD retry delays after failed reconciles: doubling from a base, capped, reset by
//! the first success. In memory only: after a restart a failing CR simply starts over.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

pub struct Backoff {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Records a failure of `object` and returns how long to wait before the next attempt.
    pub fn failed(&self, object: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let count = failures.entry(object.to_owned()).or_insert(0);
        let delay = self
            .base
            .saturating_mul(1 << (*count).min(16))
            .min(self.max);
        *count = count.saturating_add(1);
        delay
    }

    /// Forgets the failures of `object`.
    pub fn succeeded(&self, object: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(object);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
