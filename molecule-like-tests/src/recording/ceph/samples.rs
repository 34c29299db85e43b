//! Ceph's view as recorded: one sample (an osdmap, PG states, or a failed look) on the clock.

use std::time::Duration;

use crate::ceph::{OsdMap, PgStat};

/// One sample of Ceph's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    OsdMap(OsdMap),
    Pgs(PgStat),
    /// A sample that failed (mon or mgr away, a timeout).
    Error(String),
}

/// One recorded sample.
#[derive(Clone, Debug)]
pub struct CephEvent {
    /// On the recorder's clock (see [`CephRecorder::start`](super::CephRecorder::start)).
    pub at: Duration,
    pub observed: Observed,
}
