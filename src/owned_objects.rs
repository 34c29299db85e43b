//! What a reconcile plans from: the pods and ReplicaSets carrying a CephOSD's owner label, read
//! from the watch caches (no API call) once they have synced and show every write of ours for
//! that CephOSD (see `expectations.rs`), else from a LIST when the caches lag too long.

use crate::crd::{object_key, CephOsd};
use crate::expectations::{Expectations, Expected, Readiness};
use crate::labels;
use crate::locked::locked;
use crate::plan::Action;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ListParams};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::watch;
use tracing::warn;

/// How long the caches may take to show a write before a LIST is trusted instead.
const CACHE_TIMEOUT: SignedDuration = SignedDuration::from_secs(10);

/// How long a reconcile waits for the watch caches' first sync before it LISTs instead.
const SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The objects one reconcile plans from.
pub(crate) struct Observation {
    pub pods: Vec<Pod>,
    pub replica_sets: Vec<ReplicaSet>,
}

/// The watch caches and, per CephOSD, the writes they have yet to show.
pub(crate) struct OwnedObjects {
    pods: Store<Pod>,
    replica_sets: Store<ReplicaSet>,
    /// True once both caches have synced.
    synced: watch::Receiver<bool>,
    expectations: Mutex<HashMap<String, Expectations>>,
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
        }
    }

    /// What to plan `cr` from at `now`; `None` while the caches do not show our last writes
    /// yet (their events bring the next reconcile).
    pub(crate) async fn observe(
        &self,
        cr: &CephOsd,
        pods: &Api<Pod>,
        replica_sets: &Api<ReplicaSet>,
        now: Timestamp,
    ) -> Result<Option<Observation>, kube::Error> {
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
        let cached = Observation {
            pods: owned(&self.pods, cr),
            replica_sets: owned(&self.replica_sets, cr),
        };
        let key = cr.object_key();
        let readiness = if synced {
            self.with_expectations(&key, |e| {
                e.check(&cached.pods, &cached.replica_sets, now, CACHE_TIMEOUT)
            })
        } else {
            Readiness::List
        };
        match readiness {
            Readiness::Cache => Ok(Some(cached)),
            Readiness::Wait => Ok(None),
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
                    pods: pods.list(&params).await?.items,
                    replica_sets: replica_sets.list(&params).await?.items,
                };
                self.with_expectations(&key, |e| {
                    e.listed(&listed.pods, &listed.replica_sets, now);
                });
                Ok(Some(listed))
            }
        }
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

/// The cached objects of `cr`'s namespace that carry its owner label.
fn owned<K>(store: &Store<K>, cr: &CephOsd) -> Vec<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let namespace = cr.namespace();
    let owner = labels::owner_label_value(&cr.name_any());
    store
        .state()
        .iter()
        .filter(|o| o.meta().namespace == namespace)
        .filter(|o| o.meta().labels.as_ref().and_then(|l| l.get(labels::OWNER)) == Some(&owner))
        .map(|o| K::clone(o))
        .collect()
}

/// What the cache keeps of a pod: what the planner reads — its metadata without the managed
/// fields, and of its status the phase and the conditions.
pub(crate) fn strip_pod(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
    pod.spec = None;
    pod.status = pod.status.take().map(|status| PodStatus {
        phase: status.phase,
        conditions: status.conditions,
        ..PodStatus::default()
    });
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
    use crate::classify::{ready_since, unschedulable};
    use serde_json::json;

    #[test]
    fn a_stripped_pod_keeps_what_the_planner_reads_and_nothing_else() {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {
                "name": "osd-h1-sdb-abcde",
                "annotations": {"ceph.elemental.net/host": "h1"},
                "managedFields": [{"manager": "kubelet", "operation": "Update"}],
            },
            "spec": {"containers": [{"name": "osd", "image": "ceph"}], "nodeName": "h1"},
            "status": {
                "phase": "Running",
                "podIP": "10.0.0.7",
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "PodScheduled", "status": "True"},
                ],
                "containerStatuses": [{"name": "osd", "image": "ceph", "imageID": "x",
                                       "ready": true, "restartCount": 0}],
            },
        }))
        .expect("pod");
        let (ready, waiting) = (ready_since(&pod), unschedulable(&pod));
        strip_pod(&mut pod);
        assert_eq!((ready_since(&pod), unschedulable(&pod)), (ready, waiting));
        assert!(ready.is_some());
        let status = pod.status.as_ref().expect("status");
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(status.conditions.as_ref().map(Vec::len), Some(2));
        assert!(status.container_statuses.is_none() && status.pod_ip.is_none());
        assert!(pod.spec.is_none() && pod.metadata.managed_fields.is_none());
        assert_eq!(
            pod.metadata
                .annotations
                .as_ref()
                .map(std::collections::BTreeMap::len),
            Some(1)
        );
    }
}
