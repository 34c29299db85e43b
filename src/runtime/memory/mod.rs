//! What the operator remembers of each CephOSD between reconciles, in one map keyed by
//! `namespace/name`, so that forgetting a deleted CephOSD forgets all of it. In memory only:
//! after a restart everything is learnt again from the cluster.
//!
//! The written status is read-your-own-writes: a reconcile triggered by a pod event may get
//! the CephOSD from the watch cache before the cache has seen the status the previous
//! reconcile wrote. Planning from that older status would forget, for example, which update
//! domain is being replaced. So the last status written is remembered with the version it was
//! planned from, and used while the cache still shows that version.
//!
//! Beside it: the expectations of a CephOSD's writes (`expectations`) and the one way its maps
//! are locked (`locked`).

pub(crate) mod expectations;
pub(crate) mod locked;

use crate::ceph::{CrashReport, OsdId};
use crate::crd::{CephOsd, CephOsdStatus, CephStep};
use crate::plan::gate::placement::PlacementSeen;
use crate::plan::gate::{confirmed, DrainProgress, StepWatch};
use crate::plan::rules::expanded_spec::ExpandedSpec;
use crate::runtime::memory::expectations::Expectations;
use crate::runtime::memory::locked::locked;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::ResourceExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Everything remembered of one CephOSD.
#[derive(Debug, Default)]
pub(crate) struct Remembered {
    /// Our writes the watch caches have yet to show.
    pub(crate) expectations: Expectations,
    /// The fingerprint of the inputs of its last plan that had nothing to do.
    pub(crate) quiet: Option<u64>,
    /// The last status written, with the version (`uid/resourceVersion`) it was planned from.
    written: Option<(String, CephOsdStatus)>,
    /// Its spec expanded, with the version (`uid/resourceVersion`) it was expanded from.
    expanded: Option<(String, Arc<ExpandedSpec>)>,
    /// Retries failed in a row (the retry backoff), and when the next one is due.
    failures: u32,
    retry_at: Option<Instant>,
    /// The open Ceph step's watch, with the step it follows (see `step_identity`).
    step_watch: Option<(String, StepWatch)>,
    /// The placement the last look at Ceph showed, and since when.
    placement: Option<PlacementSeen>,
    /// When the OSDs' releases were last read for the status of an upgrade under way.
    releases_read: Option<Instant>,
    /// Ceph's new crash reports as last read during a rollout, and when.
    crashes: Option<(Instant, Vec<CrashReport>)>,
    /// The open drain (see `step_identity`) and since when the looks in a row found it safe.
    drain_safe_since: Option<(String, Instant)>,
}

impl Remembered {
    fn is_empty(&self) -> bool {
        self.expectations.is_empty()
            && self.quiet.is_none()
            && self.written.is_none()
            && self.expanded.is_none()
            && self.failures == 0
            && self.retry_at.is_none()
            && self.step_watch.is_none()
            && self.placement.is_none()
            && self.releases_read.is_none()
            && self.crashes.is_none()
            && self.drain_safe_since.is_none()
    }
}

/// What is remembered of every CephOSD, by `namespace/name`.
#[derive(Default)]
pub(crate) struct Memory {
    by_cr: Mutex<HashMap<String, Remembered>>,
}

impl Memory {
    /// Runs `f` on what is remembered of the CephOSD `key`; an entry left empty is dropped.
    pub(crate) fn with<T>(&self, key: &str, f: impl FnOnce(&mut Remembered) -> T) -> T {
        let mut all = locked(&self.by_cr);
        if let Some(remembered) = all.get_mut(key) {
            let out = f(remembered);
            if remembered.is_empty() {
                all.remove(key);
            }
            return out;
        }
        let mut remembered = Remembered::default();
        let out = f(&mut remembered);
        if !remembered.is_empty() {
            all.insert(key.to_owned(), remembered);
        }
        out
    }

    /// Forgets the CephOSD `key` (deleted).
    pub(crate) fn forget(&self, key: &str) {
        locked(&self.by_cr).remove(key);
    }

    /// Forgets the CephOSDs `event` of the CephOSD watch shows gone: the one deleted, or, once
    /// a relist is complete, every one `store` (the watch's cache) no longer holds.
    pub(crate) fn forget_gone(&self, store: &Store<CephOsd>, event: &watcher::Event<CephOsd>) {
        match event {
            watcher::Event::Delete(cr) => self.forget(&cr.object_key()),
            watcher::Event::InitDone => locked(&self.by_cr).retain(|key, _| {
                key.split_once('/').is_some_and(|(namespace, name)| {
                    store.get(&ObjectRef::new(name).within(namespace)).is_some()
                })
            }),
            _ => {}
        }
    }

    /// `cr`'s spec expanded: the kept expansion when `cr` is the version it was made from.
    /// An object without uid or resourceVersion (never one from the API) is expanded anew.
    pub(crate) fn expanded(&self, cr: &CephOsd) -> Arc<ExpandedSpec> {
        let Some(version) = version(cr) else {
            return Arc::new(ExpandedSpec::of(&cr.spec));
        };
        let key = cr.object_key();
        let kept = self.with(&key, |r| {
            (r.expanded.as_ref())
                .filter(|(kept, _)| *kept == version)
                .map(|(_, expanded)| expanded.clone())
        });
        if let Some(expanded) = kept {
            return expanded;
        }
        let expanded = Arc::new(ExpandedSpec::of(&cr.spec));
        self.with(&key, |r| r.expanded = Some((version, expanded.clone())));
        expanded
    }

    /// `cr` as of our last status write: the remembered status replaces the cached one while
    /// the cache still holds the version that write was planned from.
    pub(crate) fn latest(&self, cr: Arc<CephOsd>) -> Arc<CephOsd> {
        let Some(version) = version(&cr) else {
            return cr;
        };
        self.with(&cr.object_key(), |r| match &r.written {
            Some((planned_from, status)) if *planned_from == version => {
                let mut newer = (*cr).clone();
                newer.status = Some(status.clone());
                Arc::new(newer)
            }
            Some(_) => {
                // The cache has moved on: it holds our write or something newer.
                r.written = None;
                cr
            }
            None => cr,
        })
    }

    /// Records that `status` was written over `cr` (as planned from).
    pub(crate) fn remember(&self, cr: &CephOsd, status: &CephOsdStatus) {
        if let Some(version) = version(cr) {
            self.with(&cr.object_key(), |r| {
                r.written = Some((version, status.clone()));
            });
        }
    }

    /// Runs `f` on the watch of `step`, the open Ceph step of the CephOSD `key`: the one kept
    /// when it follows that step, else a new one from the `up_from`s the status recorded (after
    /// a restart, or for a new step). `None` drops the kept watch and a drain's confirmation
    /// (no step open).
    pub(crate) fn step_watch<T>(
        &self,
        key: &str,
        step: Option<&CephStep>,
        pg_stats_lag: Duration,
        f: impl FnOnce(&mut StepWatch) -> T,
    ) -> Option<T> {
        self.with(key, |r| {
            let Some(step) = step else {
                r.step_watch = None;
                r.drain_safe_since = None;
                return None;
            };
            let identity = step_identity(step);
            if r.step_watch
                .as_ref()
                .is_none_or(|(kept, _)| *kept != identity)
            {
                let up_from = step.osds.iter().map(|o| (OsdId(o.id), o.up_from)).collect();
                r.step_watch = Some((identity, StepWatch::new(up_from, pg_stats_lag)));
            }
            r.step_watch.as_mut().map(|(_, watch)| f(watch))
        })
    }

    /// The placement a look at Ceph for the CephOSD `key` last showed, and since when.
    pub(crate) fn placement_seen(&self, key: &str) -> Option<PlacementSeen> {
        self.with(key, |r| r.placement.clone())
    }

    /// Whether the OSDs' releases are due to be read again for the CephOSD `key` at `now`
    /// (read at most `every`); when they are, the read is remembered as made.
    pub(crate) fn releases_read_due(&self, key: &str, now: Instant, every: Duration) -> bool {
        self.with(key, |r| {
            let due = r
                .releases_read
                .is_none_or(|at| now.saturating_duration_since(at) >= every);
            if due {
                r.releases_read = Some(now);
            }
            due
        })
    }

    /// Ceph's new crash reports as read for the CephOSD `key` less than `every` before `now`;
    /// None when they are due to be read again.
    pub(crate) fn recent_crashes(
        &self,
        key: &str,
        now: Instant,
        every: Duration,
    ) -> Option<Vec<CrashReport>> {
        self.with(key, |r| {
            (r.crashes.as_ref())
                .filter(|(at, _)| now.saturating_duration_since(*at) < every)
                .map(|(_, crashes)| crashes.clone())
        })
    }

    /// Ceph's new crash reports as last read for the CephOSD `key`, however long ago.
    pub(crate) fn last_crashes(&self, key: &str) -> Option<Vec<CrashReport>> {
        self.with(key, |r| {
            r.crashes.as_ref().map(|(_, crashes)| crashes.clone())
        })
    }

    /// Remembers Ceph's new crash reports as read for the CephOSD `key` at `at`.
    pub(crate) fn remember_crashes(&self, key: &str, at: Instant, crashes: Vec<CrashReport>) {
        self.with(key, |r| r.crashes = Some((at, crashes)));
    }

    /// The look at the open drain `step` of the CephOSD `key`, taken at `at`, confirmed
    /// (`confirmed`): safe only once looks in a row at least `gap` apart found it safe.
    pub(crate) fn drain_confirmed(
        &self,
        key: &str,
        step: &CephStep,
        progress: DrainProgress,
        at: Instant,
        gap: Duration,
    ) -> DrainProgress {
        let identity = step_identity(step);
        self.with(key, |r| {
            let since = (r.drain_safe_since.as_ref())
                .filter(|(kept, _)| *kept == identity)
                .map(|(_, since)| *since);
            let (progress, since) = confirmed(progress, since, at, gap);
            r.drain_safe_since = since.map(|since| (identity, since));
            progress
        })
    }

    /// Remembers what a look at Ceph for the CephOSD `key` showed.
    pub(crate) fn remember_placement(&self, key: &str, seen: PlacementSeen) {
        self.with(key, |r| r.placement = Some(seen));
    }

    /// Records a failed reconcile of `key` at `now`; returns how long until the next attempt,
    /// `delay_of` the number of retries failed in a row before it. Failures count per retry,
    /// not per trigger: one before the retry already due (another trigger, such as the
    /// failure's own status write) leaves that retry where it was.
    pub(crate) fn failed(
        &self,
        key: &str,
        now: Instant,
        delay_of: impl FnOnce(u32) -> Duration,
    ) -> Duration {
        self.with(key, |r| {
            if let Some(due) = r.retry_at.filter(|due| now < *due) {
                return due - now;
            }
            let delay = delay_of(r.failures);
            r.failures = r.failures.saturating_add(1);
            r.retry_at = Some(now + delay);
            delay
        })
    }

    /// Records a successful reconcile of `key`: its failures are forgotten.
    pub(crate) fn succeeded(&self, key: &str) {
        self.with(key, |r| {
            r.failures = 0;
            r.retry_at = None;
        });
    }
}

/// One step: when it started and what it stops.
fn step_identity(step: &CephStep) -> String {
    let osds: Vec<String> = step
        .osds
        .iter()
        .map(|o| format!("{}@{}", o.id, o.up_from))
        .collect();
    format!("{} {}", step.started.0, osds.join(","))
}

/// `uid/resourceVersion`: one version of one object (a CephOSD deleted and created again
/// under its name is another object).
fn version(cr: &CephOsd) -> Option<String> {
    Some(format!("{}/{}", cr.uid()?, cr.resource_version()?))
}

#[cfg(test)]
mod tests;
