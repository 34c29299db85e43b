//! What a reconcile plans from: the pods a CephOSD owns (by its owner label or its controller
//! reference: a pod this CephOSD controls is its pod whatever its labels), the ReplicaSets
//! carrying its owner label, and the pods of other CephOSDs that hold its disks; read from the
//! watch caches (no API call) once they have synced and show every write of ours for that
//! CephOSD (see `runtime/memory/expectations.rs`), else from a LIST when the caches lag too long. A plan
//! that takes pods down is made again from a fresh LIST first (`fresh`): a cache may be
//! behind by seconds (a process frozen and thawed), and a domain it still shows available
//! may be down.
//!
//! A reconcile whose inputs are exactly those of the last plan that had nothing to do is
//! skipped: the planner is a function of them (and of time only through `requeue_after`).

use crate::crd::osd::OsdKey;
use crate::crd::CephOsd;
use crate::labels;
use crate::plan::rules::expanded_spec::ExpandedSpec;
use crate::plan::says::actions::Action;
use crate::pod::identity::held_disks;
use crate::pod::owner_reference::is_cephosd;
use crate::runtime::memory::expectations::{Expectations, Expected, Readiness};
use crate::runtime::memory::Memory;
use crate::runtime::observe::watched_pod::WatchedPod;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ListParams};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use tokio::sync::watch;
use tracing::warn;

/// How long the caches may take to show a write before a LIST is trusted instead.
const CACHE_TIMEOUT: SignedDuration = SignedDuration::from_secs(10);

/// How long a reconcile waits for the watch caches' first sync before it LISTs instead.
const SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The objects one reconcile plans from.
pub(crate) struct Observation {
    pub pods: Vec<Arc<Pod>>,
    pub replica_sets: Vec<Arc<ReplicaSet>>,
    /// Pods of other CephOSDs that hold disks this one lists.
    pub others: Vec<Arc<Pod>>,
    /// Identifies the CephOSD and these objects (as cached: none after a LIST).
    pub fingerprint: Option<u64>,
}

/// What a reconcile of one CephOSD knows before it looks at pods.
pub(crate) struct Subject<'a> {
    pub cr: &'a CephOsd,
    pub expanded: &'a ExpandedSpec,
    /// Its OSDs whose disk an older CephOSD holds.
    pub claimed: Option<&'a BTreeMap<OsdKey, String>>,
    /// Identifies the other inputs of its plan (the disruption budgets and cordoned nodes).
    pub others_fingerprint: u64,
}

/// What a reconcile finds.
pub(crate) enum Snapshot {
    /// The objects to plan from.
    Plan(Observation),
    /// Exactly the inputs of the last plan of this CephOSD that had nothing to do.
    Unchanged,
    /// The caches do not show our last writes yet (their events bring the next reconcile).
    Lagging,
}

/// The watch caches and, per CephOSD (in `memory`), the writes they have yet to show and the
/// fingerprint of the inputs of its last plan that had nothing to do.
pub(crate) struct OwnedObjects {
    pods: Store<Pod>,
    replica_sets: Store<ReplicaSet>,
    /// True once both caches have synced.
    synced: watch::Receiver<bool>,
    memory: Arc<Memory>,
}

impl OwnedObjects {
    /// Needs a tokio runtime: one task waits for the first sync of both caches. (A store's
    /// own `wait_until_ready` wakes only the last of several concurrent waiters, so the
    /// reconciles wait on this task instead.)
    pub(crate) fn new(
        pods: Store<Pod>,
        replica_sets: Store<ReplicaSet>,
        memory: Arc<Memory>,
    ) -> Self {
        let (synced_tx, synced) = watch::channel(false);
        let (pods_ready, replica_sets_ready) = (pods.clone(), replica_sets.clone());
        tokio::spawn(async move {
            let ready = pods_ready.wait_until_ready().await.is_ok()
                && replica_sets_ready.wait_until_ready().await.is_ok();
            let _ = synced_tx.send(ready);
        });
        Self {
            pods,
            replica_sets,
            synced,
            memory,
        }
    }

    /// What to plan `subject` from at `now`.
    pub(crate) async fn observe(
        &self,
        subject: &Subject<'_>,
        pods: &Api<WatchedPod>,
        replica_sets: &Api<ReplicaSet>,
        now: Timestamp,
    ) -> Result<Snapshot, kube::Error> {
        let cr = subject.cr;
        // A cache that has not synced is never taken for "no pods"; one that takes long to
        // sync is bypassed by a LIST.
        let mut synced = self.synced.clone();
        let ready = async move { synced.wait_for(|synced| *synced).await.is_ok() };
        let synced = tokio::time::timeout(SYNC_TIMEOUT, ready)
            .await
            .unwrap_or_else(|_| {
                warn!(cephosd = %cr.object_key(), "the watch caches have not synced within 10 s; planning from a LIST");
                false
            });
        let key = cr.object_key();
        let (pods_cached, others) = self.cached_pods(subject);
        let replica_sets_cached = labelled(&self.replica_sets, cr);
        let fingerprint = fingerprint(subject, &pods_cached, &replica_sets_cached, &others);
        let unchanged = self.memory.with(&key, |r| {
            r.expectations.is_empty() && r.quiet == Some(fingerprint)
        });
        if synced && unchanged {
            return Ok(Snapshot::Unchanged);
        }
        let cached = Observation {
            pods: pods_cached,
            replica_sets: replica_sets_cached,
            others,
            fingerprint: Some(fingerprint),
        };
        let readiness = if synced {
            self.with_expectations(&key, |e| {
                e.check(&cached.pods, &cached.replica_sets, now, CACHE_TIMEOUT)
            })
        } else {
            Readiness::List
        };
        match readiness {
            Readiness::Cache => Ok(Snapshot::Plan(cached)),
            Readiness::Wait => Ok(Snapshot::Lagging),
            Readiness::List => {
                if synced {
                    warn!(cephosd = %key, "the watch cache did not show our writes within 10 s; planning from a LIST");
                }
                let mut listed = self.list(cr, pods, replica_sets, now).await?;
                listed.others = cached.others;
                Ok(Snapshot::Plan(listed))
            }
        }
    }

    /// `subject`'s objects read from the API now (its pods and ReplicaSets; the other
    /// CephOSDs' pods from the cache), for a plan that takes pods down.
    pub(crate) async fn fresh(
        &self,
        subject: &Subject<'_>,
        pods: &Api<WatchedPod>,
        replica_sets: &Api<ReplicaSet>,
        now: Timestamp,
    ) -> Result<Observation, kube::Error> {
        let mut listed = self.list(subject.cr, pods, replica_sets, now).await?;
        listed.others = self.cached_pods(subject).1;
        Ok(listed)
    }

    /// `cr`'s pods and ReplicaSets from a LIST made at `now`; the expectations then wait for
    /// the caches to catch up with what it shows.
    async fn list(
        &self,
        cr: &CephOsd,
        pods: &Api<WatchedPod>,
        replica_sets: &Api<ReplicaSet>,
        now: Timestamp,
    ) -> Result<Observation, kube::Error> {
        let labelled = ListParams::default().labels(&format!(
            "{}={}",
            labels::OWNER,
            labels::owner_label_value(&cr.name_any())
        ));
        // Every pod of the namespace: one this CephOSD controls is its pod whatever its labels.
        let every = ListParams::default();
        let (pods, replica_sets) =
            futures::try_join!(pods.list(&every), replica_sets.list(&labelled))?;
        let of_cr = PodsOf::new(cr);
        let listed = Observation {
            pods: (pods.into_iter())
                .map(WatchedPod::into_pod)
                .filter(|p| of_cr.contains(p))
                .map(Arc::new)
                .collect(),
            replica_sets: replica_sets.into_iter().map(Arc::new).collect(),
            others: Vec::new(),
            fingerprint: None,
        };
        self.with_expectations(&cr.object_key(), |e| {
            e.listed(&listed.pods, &listed.replica_sets, now);
        });
        Ok(listed)
    }

    /// From the cache: the pods `subject` owns, and the pods of other CephOSDs that may run a
    /// daemon on a disk it lists.
    fn cached_pods(&self, subject: &Subject<'_>) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
        let desired = &subject.expanded.desired;
        let of_cr = PodsOf::new(subject.cr);
        let (mut own, mut others) = (Vec::new(), Vec::new());
        for pod in self.pods.state() {
            if of_cr.contains(&pod) {
                own.push(pod);
            } else if !desired.disks.is_empty()
                && held_disks(&pod, desired)
                    .iter()
                    .any(|d| desired.disks.contains_key(d))
            {
                others.push(pod);
            }
        }
        (own, others)
    }

    /// Records whether the plan from `observation` had nothing to do: if so, a reconcile
    /// finding exactly these inputs again is skipped.
    pub(crate) fn planned(&self, cr: &CephOsd, observation: &Observation, quiet: bool) {
        self.memory.with(&cr.object_key(), |r| {
            r.quiet = observation.fingerprint.filter(|_| quiet);
        });
    }

    /// Forgets that `cr`'s last plan had nothing to do: its next reconcile plans.
    pub(crate) fn unquiet(&self, cr: &CephOsd) {
        self.memory.with(&cr.object_key(), |r| r.quiet = None);
    }

    /// Records that `action` for `cr` reached the API (or may have), at `now`.
    pub(crate) fn written(&self, cr: &CephOsd, action: &Action, now: Timestamp) {
        if let Some(expected) = Expected::of(action) {
            self.with_expectations(&cr.object_key(), |e| e.expect(expected, now));
        }
    }

    fn with_expectations<T>(&self, key: &str, f: impl FnOnce(&mut Expectations) -> T) -> T {
        self.memory.with(key, |r| f(&mut r.expectations))
    }
}

/// Tells a CephOSD's pods: in its namespace with its owner label, or controlled by it
/// (whatever their labels).
pub(crate) struct PodsOf<'a> {
    namespace: Option<&'a str>,
    uid: Option<&'a str>,
    label: String,
}

impl<'a> PodsOf<'a> {
    pub(crate) fn new(cr: &'a CephOsd) -> Self {
        Self {
            namespace: cr.metadata.namespace.as_deref(),
            uid: cr.metadata.uid.as_deref(),
            label: labels::owner_label_value(&cr.name_any()),
        }
    }

    pub(crate) fn contains(&self, pod: &Pod) -> bool {
        if pod.metadata.namespace.as_deref() != self.namespace {
            return false;
        }
        let controlled = self.uid.is_some_and(|uid| {
            pod.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && is_cephosd(o) && o.uid == uid)
        });
        controlled || pod.labels().get(labels::OWNER) == Some(&self.label)
    }
}

/// Whether the pod watch keeps `pod`: it carries an owner label, or a CephOSD controls it.
pub(crate) fn is_osd_pod(pod: &Pod) -> bool {
    pod.labels().contains_key(labels::OWNER)
        || pod
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && is_cephosd(o))
}

/// The cached objects of `cr`'s namespace that carry its owner label.
fn labelled<K>(store: &Store<K>, cr: &CephOsd) -> Vec<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let namespace = cr.namespace();
    let owner = labels::owner_label_value(&cr.name_any());
    let mut objects = store.state();
    objects.retain(|o| {
        o.meta().namespace == namespace
            && o.meta().labels.as_ref().and_then(|l| l.get(labels::OWNER)) == Some(&owner)
    });
    objects
}

/// Identifies the subject (its CephOSD's version, the status it is planned with, the disks
/// older CephOSDs claim of it) and the objects it is planned from (uids and versions, in any
/// order).
fn fingerprint(
    subject: &Subject<'_>,
    pods: &[Arc<Pod>],
    replica_sets: &[Arc<ReplicaSet>],
    others: &[Arc<Pod>],
) -> u64 {
    fn identity(meta: &ObjectMeta) -> u64 {
        let mut hasher = DefaultHasher::new();
        (&meta.uid, &meta.resource_version).hash(&mut hasher);
        hasher.finish()
    }
    let cr = subject.cr;
    let mut hasher = DefaultHasher::new();
    (&cr.metadata.uid, &cr.metadata.resource_version).hash(&mut hasher);
    serde_json::to_vec(&cr.status)
        .unwrap_or_default()
        .hash(&mut hasher);
    subject.claimed.hash(&mut hasher);
    subject.others_fingerprint.hash(&mut hasher);
    for objects in [
        pods.iter()
            .map(|p| identity(&p.metadata))
            .collect::<Vec<_>>(),
        replica_sets.iter().map(|r| identity(&r.metadata)).collect(),
        others.iter().map(|p| identity(&p.metadata)).collect(),
    ] {
        (
            objects.len(),
            objects.iter().fold(0u64, |sum, h| sum.wrapping_add(*h)),
        )
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// What the cache keeps of a ReplicaSet: its metadata (the planner reads nothing else).
pub(crate) fn strip_replica_set(replica_set: &mut ReplicaSet) {
    replica_set.metadata.managed_fields = None;
    replica_set.spec = k8s_openapi::api::apps::v1::ReplicaSetSpec::default();
    replica_set.status = None;
}

#[cfg(test)]
mod tests;
