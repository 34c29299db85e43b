//! The bridge's record: what it did and saw, on the Ceph recorder's clock; each daemon's
//! life read back from it, and the bridge's rules checked on it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::ceph::Release;

/// What the bridge did or saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BridgeEventKind {
    /// `osd-start` returned for the pod, on `node`, its daemon of `release` (its image's); the
    /// OSD's `up_from` before was `up_from_before`.
    Started {
        node: String,
        up_from_before: u64,
        release: Release,
    },
    /// Ceph's osdmap shows the OSD up with this newer `up_from`.
    Booted {
        up_from: u64,
    },
    /// `testing.local/ceph-osd-up: "true"` set on the pod.
    MarkedUp,
    /// Stopping the pod's daemon, and why.
    Stopping {
        why: String,
    },
    /// `osd-stop` returned: the daemon has exited.
    Stopped,
    /// The bridge deleted the terminated pod (grace 0).
    Removed,
    /// The pod is gone from the API.
    Gone,
    /// A pod on a disk the table does not map.
    Unmapped {
        disk: String,
    },
    /// The pod's disk is withheld ([`CephBridge::withhold`]): no daemon is started for it.
    Withheld,
    /// The daemon is started without the pod's name and namespace ([`CephBridge::anonymous`]).
    Anonymous,
    /// The pod's image is broken (`…-broken`): no daemon is started for it.
    Broken {
        image: String,
    },
    /// The disk failed ([`CephBridge::fail_disk`]): the daemon of the event's pod was killed
    /// (pod `-`: none ran) and `disk`'s data wiped; its pods so far get no daemon again.
    DiskFailed {
        disk: String,
    },
    /// The pod's prepare step prepared its `OSD_ID` (the event's OSD) on its blank disk
    /// (`osd-prepare`): its daemon starts next.
    Prepared,
    /// The pod's prepare step failed (no `OSD_ID`, Ceph refused the id, or
    /// [`CephBridge::fail_prepare`]): no daemon; the pod is ended as `Failed`, its first
    /// container terminated with exit code 1 and `reason` as its message.
    PrepareFailed {
        reason: String,
    },
    /// A pre-pull pod's `ceph-release` container was given the `ceph-osd --version` of its
    /// image's release (the annotation KWOK ends that container with).
    ReleaseReported {
        release: Release,
    },
    Violation(String),
    Error(String),
}

/// One event of the bridge.
#[derive(Clone, Debug)]
pub struct BridgeEvent {
    /// On the Ceph recorder's clock.
    pub at: Duration,
    pub osd: Option<u32>,
    pub pod: String,
    pub uid: String,
    pub kind: BridgeEventKind,
}

pub(super) type Log = Arc<Mutex<Vec<BridgeEvent>>>;

pub(super) fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One daemon's life, from the bridge's events.
#[derive(Clone, Debug, Default)]
pub struct Daemon {
    pub pod: String,
    pub uid: String,
    /// The release it ran.
    pub release: Release,
    pub started: Option<Duration>,
    pub booted: Option<(Duration, u64)>,
    pub stopping: Option<Duration>,
    /// When it exited: stopped, or killed as its disk failed.
    pub stopped: Option<Duration>,
    /// When it was killed as its disk failed ([`CephBridge::fail_disk`]).
    pub disk_failed: Option<Duration>,
    pub gone: Option<Duration>,
}

pub(super) fn daemons(events: &[BridgeEvent]) -> BTreeMap<u32, Vec<Daemon>> {
    let mut out: BTreeMap<u32, Vec<Daemon>> = BTreeMap::new();
    for e in events {
        let Some(osd) = e.osd else { continue };
        let list = out.entry(osd).or_default();
        if let BridgeEventKind::Started { release, .. } = e.kind {
            list.push(Daemon {
                pod: e.pod.clone(),
                uid: e.uid.clone(),
                release,
                started: Some(e.at),
                ..Daemon::default()
            });
            continue;
        }
        let Some(d) = list.iter_mut().rev().find(|d| d.uid == e.uid) else {
            continue;
        };
        match &e.kind {
            BridgeEventKind::Booted { up_from } => d.booted = Some((e.at, *up_from)),
            BridgeEventKind::Stopping { .. } => d.stopping = d.stopping.or(Some(e.at)),
            BridgeEventKind::Stopped => d.stopped = Some(e.at),
            BridgeEventKind::DiskFailed { .. } => {
                d.stopped = Some(e.at);
                d.disk_failed = Some(e.at);
            }
            BridgeEventKind::Gone => d.gone = Some(e.at),
            _ => {}
        }
    }
    out
}

pub(super) fn check(events: &[BridgeEvent]) -> Result<(), String> {
    let mut problems: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            BridgeEventKind::Violation(v) => Some(format!("violation: {v}")),
            BridgeEventKind::Error(err) => Some(format!("error: {err}")),
            _ => None,
        })
        .collect();
    for (osd, list) in daemons(events) {
        for d in list {
            if let Some(gone) = d.gone {
                if d.stopped.is_none_or(|stopped| stopped > gone) {
                    problems.push(format!(
                        "osd.{osd}: pod {} was gone at {:.2}s before its daemon stopped",
                        d.pod,
                        gone.as_secs_f64()
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

pub(super) fn render(events: &[BridgeEvent]) -> String {
    let mut out = String::from("ceph bridge events:\n");
    for e in events {
        out.push_str(&format!(
            "  {:>8.2}s {:<7} {} {:?}\n",
            e.at.as_secs_f64(),
            e.osd
                .map_or_else(|| "-".to_owned(), |id| format!("osd.{id}")),
            e.pod,
            e.kind
        ));
    }
    out
}

#[cfg(test)]
mod tests;
