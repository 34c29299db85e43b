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

use crate::ceph::{OsdId, StepWatch};
use crate::crd::{CephOsd, CephOsdStatus, CephStep};
use crate::plan::expanded_spec::ExpandedSpec;
use crate::runtime::memory::expectations::Expectations;
use crate::runtime::memory::locked::locked;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::ResourceExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    /// Reconciles failed in a row (the retry backoff).
    failures: u32,
    /// The open Ceph step's watch, with the step it follows (see `step_identity`).
    step_watch: Option<(String, StepWatch)>,
}

impl Remembered {
    fn is_empty(&self) -> bool {
        self.expectations.is_empty()
            && self.quiet.is_none()
            && self.written.is_none()
            && self.expanded.is_none()
            && self.failures == 0
            && self.step_watch.is_none()
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
    /// a restart, or for a new step). `None` drops the kept watch (no step open).
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

    /// Records a failed reconcile of `key`; returns how many failed in a row before it.
    pub(crate) fn failed(&self, key: &str) -> u32 {
        self.with(key, |r| {
            let before = r.failures;
            r.failures = before.saturating_add(1);
            before
        })
    }

    /// Records a successful reconcile of `key`: its failures are forgotten.
    pub(crate) fn succeeded(&self, key: &str) {
        self.with(key, |r| r.failures = 0);
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
mod tests {
    use super::*;
    use crate::crd::UpdateDomain;
    use crate::runtime::backoff::Backoff;
    use crate::runtime::memory::expectations::Expected;
    use crate::testing::CephOsdBuilder;
    use k8s_openapi::jiff::Timestamp;
    use kube::runtime::reflector;
    use serde_json::json;
    use std::time::Duration;

    fn cr(version: &str, updating: &[&str]) -> Arc<CephOsd> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
                "metadata": {"name": "c", "namespace": "n", "uid": "u", "resourceVersion": version},
                "spec": {"storage": [], "updateDomain": "OSD", "podTemplate": {}},
                "status": {"currentUpdate": updating},
            }))
            .expect("a CephOSD"),
        )
    }

    fn updating(cr: &CephOsd) -> Vec<String> {
        cr.status.clone().unwrap_or_default().current_update
    }

    #[test]
    fn the_written_status_stands_in_until_the_cache_moves_on() {
        let written = Memory::default();
        let planned_from = cr("7", &[]);
        let mut status = planned_from.status.clone().unwrap_or_default();
        status.current_update = vec!["w1".into()];
        written.remember(&planned_from, &status);

        // The cache still shows version 7: our write replaces its status.
        assert_eq!(updating(&written.latest(cr("7", &[]))), ["w1"]);
        assert_eq!(updating(&written.latest(cr("7", &[]))), ["w1"]);
        // The cache has seen a newer version: it is used as it is, and the memory dropped.
        assert_eq!(updating(&written.latest(cr("8", &["w2"]))), ["w2"]);
        assert!(updating(&written.latest(cr("7", &[]))).is_empty());
    }

    #[test]
    fn nothing_remembered_changes_nothing() {
        let written = Memory::default();
        assert!(updating(&written.latest(cr("7", &[]))).is_empty());
    }

    fn osds(version: &str, hosts: &[&str]) -> CephOsd {
        let mut cr = CephOsdBuilder::new("osds")
            .storage(hosts, &["/dev/sdb"])
            .update_domain(UpdateDomain::Host)
            .template(json!({"spec": {"containers": [{"name": "osd", "image": "ceph"}]}}))
            .namespace("ceph")
            .uid("uid-1")
            .build()
            .expect("a CephOSD");
        cr.metadata.resource_version = Some(version.into());
        cr
    }

    #[test]
    fn one_version_is_expanded_once_and_a_new_one_anew() {
        let specs = Memory::default();
        let first = specs.expanded(&osds("1", &["h1"]));
        assert!(Arc::ptr_eq(&first, &specs.expanded(&osds("1", &["h1"]))));
        let edited = specs.expanded(&osds("2", &["h1", "h2"]));
        assert!(!Arc::ptr_eq(&first, &edited));
        assert_eq!(edited.desired.osds.len(), 2);
        let mut recreated = osds("2", &["h1"]);
        recreated.metadata.uid = Some("uid-2".into());
        assert_eq!(specs.expanded(&recreated).desired.osds.len(), 1);
        specs.forget("ceph/osds");
        assert!(!Arc::ptr_eq(
            &edited,
            &specs.expanded(&osds("2", &["h1", "h2"]))
        ));
    }

    #[test]
    fn an_object_without_a_version_is_expanded_every_time() {
        let specs = Memory::default();
        let mut unversioned = osds("1", &["h1"]);
        unversioned.metadata.resource_version = None;
        assert!(!Arc::ptr_eq(
            &specs.expanded(&unversioned),
            &specs.expanded(&unversioned)
        ));
    }

    #[test]
    fn doubles_caps_and_resets() {
        let memory = Memory::default();
        let backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(60));
        let failed = |object: &str| backoff.delay(memory.failed(object)).as_secs();
        let delays: Vec<u64> = (0..6).map(|_| failed("ns/a")).collect();
        assert_eq!(delays, [5, 10, 20, 40, 60, 60]);
        assert_eq!(failed("ns/b"), 5, "per object");
        memory.succeeded("ns/a");
        assert_eq!(backoff.delay(memory.failed("ns/a")).as_secs(), 5);
    }

    /// Remembers one of everything of `cr`: expectations, a quiet fingerprint, a written
    /// status, an expanded spec and a failure.
    fn remember_everything(memory: &Memory, cr: &CephOsd) {
        let key = cr.object_key();
        memory.with(&key, |r| {
            r.expectations.expect(
                Expected::Created { name: "p".into() },
                Timestamp::UNIX_EPOCH,
            );
            r.quiet = Some(7);
        });
        memory.remember(cr, &CephOsdStatus::default());
        memory.expanded(cr);
        memory.failed(&key);
        memory.with(&key, |r| {
            assert!(
                !r.expectations.is_empty()
                    && r.quiet.is_some()
                    && r.written.is_some()
                    && r.expanded.is_some()
                    && r.failures == 1,
                "{r:?}"
            );
        });
    }

    fn remembered(memory: &Memory) -> Vec<String> {
        let mut keys: Vec<String> = locked(&memory.by_cr).keys().cloned().collect();
        keys.sort();
        keys
    }

    fn named(name: &str) -> CephOsd {
        let mut cr = osds("1", &["h1"]);
        cr.metadata.name = Some(name.into());
        cr.metadata.uid = Some(format!("uid-{name}"));
        cr
    }

    #[test]
    fn nothing_of_a_deleted_cephosd_outlives_it() {
        let memory = Memory::default();
        let (a, b, c) = (named("a"), named("b"), named("c"));
        for cr in [&a, &b, &c] {
            remember_everything(&memory, cr);
        }
        let (store, mut writer) = reflector::store();
        for cr in [&a, &b, &c] {
            writer.apply_watcher_event(&watcher::Event::Apply(cr.clone()));
        }
        // Forgotten at once when the reconcile of a deleted CephOSD finds it gone.
        memory.forget(&a.object_key());
        assert_eq!(remembered(&memory), ["ceph/b", "ceph/c"]);
        // Deleted while the watch runs.
        let deleted = watcher::Event::Delete(b.clone());
        writer.apply_watcher_event(&deleted);
        memory.forget_gone(&store, &deleted);
        assert_eq!(remembered(&memory), ["ceph/c"]);
        // Deleted while the watch was down: gone once the relist is complete.
        remember_everything(&memory, &a);
        for event in [
            watcher::Event::Init,
            watcher::Event::InitApply(a.clone()),
            watcher::Event::InitDone,
        ] {
            writer.apply_watcher_event(&event);
            memory.forget_gone(&store, &event);
        }
        assert_eq!(remembered(&memory), ["ceph/a"]);
    }

    #[test]
    fn an_entry_emptied_is_dropped() {
        let memory = Memory::default();
        let cr = named("a");
        memory.failed(&cr.object_key());
        memory.succeeded(&cr.object_key());
        assert!(remembered(&memory).is_empty());
    }
}
