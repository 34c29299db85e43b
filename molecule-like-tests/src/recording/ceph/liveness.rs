//! Whether `ceph watch` still samples: each of its two samplers (the osdmap from the mon, the
//! PG states from the mgr) says something at least every few seconds, a sample or the error of
//! a bounded call (mon or mgr away). One silent for longer is hung (librados has been seen to
//! hang or abort when the mgr comes back during a call): the recorder then starts it again.

use std::time::{Duration, Instant};

use super::samples::Observed;

/// The longest silence of a sampler that is not a hang: its calls end within 5 s
/// (`rados_mon_op_timeout`), a sample every 0.25 s otherwise.
pub(super) const SILENT_AT_MOST: Duration = Duration::from_secs(15);

/// When each sampler of one `ceph watch` last said something.
#[derive(Clone, Copy, Debug)]
pub(super) struct Heard {
    osdmap: Instant,
    pgs: Instant,
}

impl Heard {
    /// A watch started at `now`: neither sampler silent yet.
    pub(super) fn new(now: Instant) -> Self {
        Self {
            osdmap: now,
            pgs: now,
        }
    }

    /// Notes what a sampler said at `now`. The first connection's errors (before either
    /// sampler runs: the mon away) count for both; the PG sampler's own reconnects say `pgs:`.
    pub(super) fn note(&mut self, observed: &Observed, now: Instant) {
        match observed {
            Observed::OsdMap(_) => self.osdmap = now,
            Observed::Pgs(_) => self.pgs = now,
            Observed::Error(e) if e.starts_with("osdmap:") => self.osdmap = now,
            Observed::Error(e) if e.starts_with("pgs:") => self.pgs = now,
            Observed::Error(e) if e.starts_with("connect:") => *self = Self::new(now),
            Observed::Error(_) => {}
        }
    }

    /// The sampler silent for longer than [`SILENT_AT_MOST`] at `now`, if one is.
    pub(super) fn silent(&self, now: Instant) -> Option<&'static str> {
        let quiet = |last: Instant| now.saturating_duration_since(last) > SILENT_AT_MOST;
        if quiet(self.osdmap) {
            Some("osdmap")
        } else if quiet(self.pgs) {
            Some("pgs")
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests;
