//! What a reconcile plans from: the pods and ReplicaSets carrying a CephOSD's owner label, read
//! from the watch caches (no API call) once they have synced and show every write of ours for
//! that CephOSD (see `expectations.rs`), else from a LIST when the caches lag too long.
//!
//! A reconcile whose inputs are exactly those of the last plan that had nothing to do is
//! skipped: the planner is a function of them (and of time only through `requeue_after`).

use crate::crd::{object_key, CephOsd};
use crate::expectations::{Expectations, Expected, Readiness};
use crate::labels;
use crate::locked::locked;
use crate::plan::Action;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ListParams};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
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
    /// Identifies the CephOSD and these objects (as cached: none after a LIST).
    pub fingerprint: Option<u64>,
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

/// The watch caches and, per CephOSD, the writes they have yet to show.
pub(crate) struct OwnedObjects {
    pods: Store<Pod>,
    replica_sets: Store<ReplicaSet>,
    /// True once both caches have synced.
    synced: watch::Receiver<bool>,
    expectations: Mutex<HashMap<String, Expectations>>,
    /// Per CephOSD, the fingerprint of the inputs of its last plan that had nothing to do.
    quiet: Mutex<HashMap<String, u64>>,
}

impl OwnedObjects {
    /// Needs a tokio runtime: one task waits for the first sync of both caches. (A store's
    /// own `wait_until_ready` wakes only the last of several concurrent waiters, so the
    /// reconciles wait on this task instead.)
    pub(crate) fn new(pods: Store<Pod>, replica_sets: Store<ReplicaSet>) -> Self {
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
            expectations: Mutex::default(),
            quiet: Mutex::default(),
        }
    }

    /// What to plan `cr` from at `now`.
    pub(crate) async fn observe(
        &self,
        cr: &CephOsd,
        pods: &Api<Pod>,
        replica_sets: &Api<ReplicaSet>,
        now: Timestamp,
    ) -> Result<Snapshot, kube::Error> {
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
        let (pods_cached, replica_sets_cached) =
            (owned(&self.pods, cr), owned(&self.replica_sets, cr));
        let fingerprint = fingerprint(cr, &pods_cached, &replica_sets_cached);
        let expecting = locked(&self.expectations).contains_key(&key);
        if synced && !expecting && locked(&self.quiet).get(&key) == Some(&fingerprint) {
            return Ok(Snapshot::Unchanged);
        }
        let cached = Observation {
            pods: pods_cached,
            replica_sets: replica_sets_cached,
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
                let params = ListParams::default().labels(&format!(
                    "{}={}",
                    labels::OWNER,
                    labels::owner_label_value(&cr.name_any())
                ));
                let listed = Observation {
                    pods: listed(pods, &params).await?,
                    replica_sets: listed(replica_sets, &params).await?,
                    fingerprint: None,
                };
                self.with_expectations(&key, |e| {
                    e.listed(&listed.pods, &listed.replica_sets, now);
                });
                Ok(Snapshot::Plan(listed))
            }
        }
    }

    /// Records whether the plan from `observation` had nothing to do: if so, a reconcile
    /// finding exactly these inputs again is skipped.
    pub(crate) fn planned(&self, cr: &CephOsd, observation: &Observation, quiet: bool) {
        let mut all = locked(&self.quiet);
        match observation.fingerprint.filter(|_| quiet) {
            Some(fingerprint) => all.insert(cr.object_key(), fingerprint),
            None => all.remove(&cr.object_key()),
        };
    }

    /// Records that `action` for `cr` reached the API (or may have), at `now`.
    pub(crate) fn written(&self, cr: &CephOsd, action: &Action, now: Timestamp) {
        if let Some(expected) = Expected::of(action) {
            self.with_expectations(&cr.object_key(), |e| e.expect(expected, now));
        }
    }

    /// Forgets a deleted CephOSD.
    pub(crate) fn forget(&self, namespace: &str, name: &str) {
        locked(&self.expectations).remove(&object_key(namespace, name));
        locked(&self.quiet).remove(&object_key(namespace, name));
    }

    fn with_expectations<T>(&self, key: &str, f: impl FnOnce(&mut Expectations) -> T) -> T {
        let mut all = locked(&self.expectations);
        let expectations = all.entry(key.to_owned()).or_default();
        let out = f(expectations);
        if expectations.is_empty() {
            all.remove(key);
        }
        out
    }
}

/// The objects a LIST with `params` returns, shared like the caches' objects.
async fn listed<K>(api: &Api<K>, params: &ListParams) -> Result<Vec<Arc<K>>, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    Ok(api.list(params).await?.into_iter().map(Arc::new).collect())
}

/// The cached objects of `cr`'s namespace that carry its owner label.
fn owned<K>(store: &Store<K>, cr: &CephOsd) -> Vec<Arc<K>>
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

/// Identifies `cr` (its version and the status it is planned with) and `pods` and
/// `replica_sets` (uids and versions, in any order).
fn fingerprint(cr: &CephOsd, pods: &[Arc<Pod>], replica_sets: &[Arc<ReplicaSet>]) -> u64 {
    fn identity(meta: &ObjectMeta) -> u64 {
        let mut hasher = DefaultHasher::new();
        (&meta.uid, &meta.resource_version).hash(&mut hasher);
        hasher.finish()
    }
    let mut hasher = DefaultHasher::new();
    (&cr.metadata.uid, &cr.metadata.resource_version).hash(&mut hasher);
    serde_json::to_vec(&cr.status)
        .unwrap_or_default()
        .hash(&mut hasher);
    for objects in [
        pods.iter()
            .map(|p| identity(&p.metadata))
            .collect::<Vec<_>>(),
        replica_sets.iter().map(|r| identity(&r.metadata)).collect(),
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
mod tests {
    use super::*;
    use serde_json::json;

    fn object(uid: &str, version: &str) -> Arc<Pod> {
        let mut pod = Pod::default();
        pod.metadata.uid = Some(uid.into());
        pod.metadata.resource_version = Some(version.into());
        Arc::new(pod)
    }

    #[test]
    fn the_fingerprint_changes_with_any_input_and_not_with_the_order() {
        let cr: CephOsd = serde_json::from_value(json!({
            "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
            "metadata": {"name": "osds", "namespace": "ceph", "uid": "c", "resourceVersion": "7"},
            "spec": {"storage": [], "updateDomain": "OSD", "podTemplate": {}},
        }))
        .expect("cr");
        let (a, b) = (object("a", "1"), object("b", "1"));
        let base = fingerprint(&cr, &[a.clone(), b.clone()], &[]);
        assert_eq!(fingerprint(&cr, &[b.clone(), a.clone()], &[]), base);
        let mut newer_cr = cr.clone();
        newer_cr.metadata.resource_version = Some("8".into());
        let mut other_status = cr.clone();
        other_status.status = Some(crate::crd::CephOsdStatus {
            observed_generation: Some(3),
            ..Default::default()
        });
        let changed = [
            fingerprint(&cr, &[a.clone(), object("b", "2")], &[]),
            fingerprint(&cr, std::slice::from_ref(&a), &[]),
            fingerprint(&cr, &[a.clone(), b.clone(), object("c", "1")], &[]),
            fingerprint(&newer_cr, &[a.clone(), b.clone()], &[]),
            fingerprint(&other_status, &[a.clone(), b.clone()], &[]),
            fingerprint(
                &cr,
                std::slice::from_ref(&a),
                &[Arc::new(ReplicaSet {
                    metadata: b.metadata.clone(),
                    ..ReplicaSet::default()
                })],
            ),
        ];
        for (i, fp) in changed.iter().enumerate() {
            assert_ne!(*fp, base, "change {i}");
        }
    }
}
