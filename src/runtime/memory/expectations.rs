//! Expectations: our own writes to pods and ReplicaSets that the watch cache has not shown yet.
//!
//! The planner reads pods from the watch cache. A cache that has not seen our last creation
//! would show its OSD without a pod, and a second pod would be created for one disk; one that
//! has not seen a deletion would let the rollout count a domain as available. So after writing
//! for a CephOSD, it is planned again only once the cache shows every write (a created pod
//! exists, a deleted object is gone or terminating, a written pod-state is visible), or, when
//! that takes longer than a timeout, from an authoritative LIST. A write whose outcome is
//! unknown (a timeout, a 5xx) is expected as if it succeeded. Pure; time comes in as an
//! argument.

use crate::labels;
use crate::plan::says::actions::Action;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::borrow::Borrow;
use std::collections::HashMap;

/// One write the cache has yet to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Expected {
    /// A pod of this name exists.
    Created { name: String },
    /// The pod with this uid is gone or terminating.
    Deleted { uid: String },
    /// The pod with this name carries this `pod-state` (or is gone).
    State { name: String, state: String },
    /// The ReplicaSet with this uid is gone or being deleted.
    ReplicaSetDeleted { uid: String },
    /// The pod with this name carries this update-domain label (or is gone): the budget
    /// counts pods by it.
    Label { name: String, value: String },
}

impl Expected {
    /// What the cache must show after `action` was attempted; `None` when there is nothing to
    /// wait for (a delete without a uid precondition cannot be told from a newer namesake).
    pub(crate) fn of(action: &Action) -> Option<Self> {
        match action {
            Action::Create { pod, .. } | Action::CreatePrePull { pod, .. } => Some(Self::Created {
                name: pod.name_any(),
            }),
            Action::Delete { uid, .. } | Action::DeletePrePull { uid, .. } => {
                uid.clone().map(|uid| Self::Deleted { uid })
            }
            Action::DeleteReplicaSet { uid, .. } => {
                uid.clone().map(|uid| Self::ReplicaSetDeleted { uid })
            }
            Action::PatchState { name, state, .. } => Some(Self::State {
                name: name.clone(),
                state: state.as_str().to_owned(),
            }),
            Action::LabelDomain { name, value } => Some(Self::Label {
                name: name.clone(),
                value: value.clone(),
            }),
            // The status written is remembered (`Memory::remember`); Ceph is no cache of ours;
            // the budget is written whole from the pods, never from what it showed before.
            Action::RecordCephStep
            | Action::SetNoout { .. }
            | Action::ClearNoout { .. }
            | Action::MarkOut { .. }
            | Action::MarkIn { .. }
            | Action::DestroyOsd { .. }
            | Action::RequireOsdRelease { .. }
            | Action::LetGo { .. }
            | Action::WriteBudget { .. }
            | Action::DeleteBudget { .. } => None,
        }
    }

    fn seen(&self, shown: &Shown<'_>) -> bool {
        let terminating_or_gone = |found: Option<&&ObjectMeta>| {
            found.is_none_or(|meta| meta.deletion_timestamp.is_some())
        };
        match self {
            Self::Created { name } => shown.pods_by_name.contains_key(name.as_str()),
            Self::Deleted { uid } => terminating_or_gone(shown.pods_by_uid.get(uid.as_str())),
            Self::ReplicaSetDeleted { uid } => {
                terminating_or_gone(shown.replica_sets_by_uid.get(uid.as_str()))
            }
            Self::State { name, state } => shown
                .pods_by_name
                .get(name.as_str())
                .is_none_or(|p| p.annotations().get(labels::POD_STATE) == Some(state)),
            Self::Label { name, value } => shown
                .pods_by_name
                .get(name.as_str())
                .is_none_or(|p| p.labels().get(labels::UPDATE_DOMAIN) == Some(value)),
        }
    }
}

/// The objects a cache or a LIST shows, by what expectations look them up by.
struct Shown<'a> {
    pods_by_name: HashMap<&'a str, &'a Pod>,
    pods_by_uid: HashMap<&'a str, &'a ObjectMeta>,
    replica_sets_by_uid: HashMap<&'a str, &'a ObjectMeta>,
}

impl<'a> Shown<'a> {
    fn new(pods: &'a [impl Borrow<Pod>], replica_sets: &'a [impl Borrow<ReplicaSet>]) -> Self {
        let pods = pods.iter().map(Borrow::borrow);
        Self {
            pods_by_name: pods
                .clone()
                .filter_map(|p: &Pod| Some((p.metadata.name.as_deref()?, p)))
                .collect(),
            pods_by_uid: pods
                .filter_map(|p| Some((p.metadata.uid.as_deref()?, &p.metadata)))
                .collect(),
            replica_sets_by_uid: replica_sets
                .iter()
                .map(Borrow::borrow)
                .filter_map(|r: &ReplicaSet| Some((r.metadata.uid.as_deref()?, &r.metadata)))
                .collect(),
        }
    }
}

/// The writes for one CephOSD that the cache has yet to show.
#[derive(Clone, Debug, Default)]
pub(crate) struct Expectations {
    pending: Vec<Expected>,
    /// When the oldest pending write was made.
    since: Option<Timestamp>,
}

/// What to plan from.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// The cache shows every write: plan from it.
    Cache,
    /// Writes are not visible yet: wait for the cache (its events bring the next reconcile).
    Wait,
    /// Waited `timeout` in vain: plan from an authoritative LIST.
    List,
}

impl Expectations {
    /// Records a write made at `now`.
    pub(crate) fn expect(&mut self, expected: Expected, now: Timestamp) {
        self.since.get_or_insert(now);
        self.pending.push(expected);
    }

    /// Drops the writes `pods` and `replica_sets` (the cache) show, then says what to plan
    /// from.
    pub(crate) fn check(
        &mut self,
        pods: &[impl Borrow<Pod>],
        replica_sets: &[impl Borrow<ReplicaSet>],
        now: Timestamp,
        timeout: SignedDuration,
    ) -> Readiness {
        if !self.pending.is_empty() {
            let shown = Shown::new(pods, replica_sets);
            self.pending.retain(|e| !e.seen(&shown));
        }
        match self.since {
            _ if self.pending.is_empty() => {
                self.since = None;
                Readiness::Cache
            }
            Some(since) if now.duration_since(since) >= timeout => Readiness::List,
            _ => Readiness::Wait,
        }
    }

    /// After planning from a LIST (`pods`, `replica_sets`) made at `now`: the writes the LIST
    /// shows stay expected (the cache must catch up with them before it is trusted again),
    /// those it contradicts are dropped (a created pod already gone may never be seen), and the
    /// timeout starts anew.
    pub(crate) fn listed(
        &mut self,
        pods: &[impl Borrow<Pod>],
        replica_sets: &[impl Borrow<ReplicaSet>],
        now: Timestamp,
    ) {
        let shown = Shown::new(pods, replica_sets);
        self.pending.retain(|e| e.seen(&shown));
        self.since = (!self.pending.is_empty()).then_some(now);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests;
