//! The Ansible operator's ReplicaSet era (its releases v0.4–v0.6): one `apps/v1` ReplicaSet per
//! OSD, with the owner label and the `host`/`data` annotations, whose pod the ReplicaSet
//! controller keeps running.
//!
//! Such a ReplicaSet stands for its OSD until the rollout replaces it: it holds its disk until
//! it is gone (no pod of ours is created while it exists, even with no pod right now: its
//! controller may be about to create one), and it is always out of date (the Ansible operator
//! hashed another structure). It is replaced, deleted as superfluous or as
//! invalid through the ReplicaSet itself (foreground deletion takes its pod with it), never by
//! deleting its pod, which the ReplicaSet controller would only recreate. Pure.

use crate::crd::osd::{DeviceId, OsdKey};
use crate::labels;
use crate::plan::observed::classify::{
    controlled_by, ControlledBy, Controller, ObservedPod, Owner, Ownership, PodClass, Workload,
};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};

/// How the planner sees one ReplicaSet carrying the owner label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ReplicaSetClass {
    /// Being deleted: it creates no more pods, but holds its disk until it is gone.
    Terminating,
    /// Controlled by another object: left alone (its pods hold their disks).
    Foreign(Controller),
    /// Not one the Ansible operator could have made, or a second one for a disk: deleted.
    Invalid(String),
    /// Stands for its OSD until replaced (deleted instead when the OSD left the spec).
    Era,
}

/// One observed ReplicaSet and what the planner made of it.
#[derive(Clone, Debug)]
pub(crate) struct ObservedReplicaSet {
    pub name: String,
    pub uid: Option<String>,
    pub key: Option<OsdKey>,
    pub class: ReplicaSetClass,
    pub created: Option<Timestamp>,
    /// Whether one of its pods is Ready (and not terminating).
    pub ready: bool,
}

impl ObservedReplicaSet {
    /// The disk it names, when its annotations name one.
    pub(crate) fn device(&self) -> Option<DeviceId> {
        self.key.as_ref().map(OsdKey::device_id)
    }

    /// The OSD it stands for, as the rollout sees it: a live, out-of-date workload;
    /// `osd` its OSD's place among the CR's, when it is one of them.
    pub(crate) fn as_workload(&self, osd: Option<usize>) -> ObservedPod {
        ObservedPod {
            name: self.name.clone(),
            uid: self.uid.clone(),
            device: self.device(),
            osd,
            key: self.key.clone(),
            class: PodClass::OutOfDate,
            ready: self.ready,
            state: None,
            created: self.created,
            soaking_since: None,
            deleted: None,
            ownership: Ownership::None,
            workload: Workload::ReplicaSet,
            unschedulable: None,
            also_holds: Vec::new(),
            tampered: None,
            duplicate: false,
            domain_label: None,
        }
    }
}

/// Classifies the ReplicaSets carrying the owner label; `pods` are the classified pods (for
/// readiness, and the disks our own live pods already run).
pub(crate) fn classify_replica_sets(
    replica_sets: &[&ReplicaSet],
    pods: &[ObservedPod],
    owner: &Owner<'_>,
) -> Vec<ObservedReplicaSet> {
    let ready_sets: BTreeSet<&str> = pods
        .iter()
        .filter(|p| p.ready)
        .filter_map(|p| match &p.class {
            PodClass::Foreign(c) if c.kind == "ReplicaSet" => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    let run_by_our_pods: BTreeMap<DeviceId, &str> = pods
        .iter()
        .filter(|p| p.is_live())
        .filter_map(|p| Some((p.device()?.clone(), p.name.as_str())))
        .collect();
    let mut observed: Vec<ObservedReplicaSet> = replica_sets
        .iter()
        .map(|rs| {
            let name = rs.name_any();
            let annotation = |k: &str| rs.annotations().get(k).map(String::as_str);
            let key = match (annotation(labels::HOST), annotation(labels::DATA)) {
                (Some(host), Some(data)) => Some(OsdKey::new(host, data)),
                _ => None,
            };
            let class = if rs.metadata.deletion_timestamp.is_some() {
                ReplicaSetClass::Terminating
            } else if let ControlledBy::Other(other) =
                controlled_by(rs.metadata.owner_references.as_ref(), owner)
            {
                ReplicaSetClass::Foreign(other)
            } else {
                on_its_own(&name, key.as_ref(), &run_by_our_pods)
            };
            ObservedReplicaSet {
                ready: ready_sets.contains(name.as_str()),
                uid: rs.metadata.uid.clone(),
                created: rs.metadata.creation_timestamp.as_ref().map(|t| t.0),
                name,
                key,
                class,
            }
        })
        .collect();
    keep_one_per_disk(&mut observed);
    observed
}

fn on_its_own(
    name: &str,
    key: Option<&OsdKey>,
    run_by_our_pods: &BTreeMap<DeviceId, &str>,
) -> ReplicaSetClass {
    let Some(key) = key else {
        return ReplicaSetClass::Invalid("it lacks the host or data annotation".into());
    };
    let prefix = key.name_prefix();
    if !name.starts_with(&prefix) {
        return ReplicaSetClass::Invalid(format!("its name does not start with {prefix}"));
    }
    match run_by_our_pods.get(&key.device_id()) {
        Some(pod) => {
            ReplicaSetClass::Invalid(format!("pod {pod} already runs the OSD on this disk"))
        }
        None => ReplicaSetClass::Era,
    }
}

/// Of several era ReplicaSets for one disk, the one with a Ready pod (else the oldest, then
/// by name) is kept; the others are invalid.
fn keep_one_per_disk(observed: &mut [ObservedReplicaSet]) {
    let rank =
        |rs: &ObservedReplicaSet| (!rs.ready, rs.created.is_none(), rs.created, rs.name.clone());
    let mut keepers: BTreeMap<DeviceId, usize> = BTreeMap::new();
    for (index, rs) in observed.iter().enumerate() {
        let Some(device) = rs.device().filter(|_| rs.class == ReplicaSetClass::Era) else {
            continue;
        };
        let keeper = keepers.entry(device).or_insert(index);
        if rank(rs) < rank(&observed[*keeper]) {
            *keeper = index;
        }
    }
    let kept: BTreeMap<DeviceId, String> = keepers
        .into_iter()
        .map(|(device, index)| (device, observed[index].name.clone()))
        .collect();
    for rs in observed.iter_mut() {
        if let (ReplicaSetClass::Era, Some(keeper)) =
            (&rs.class, rs.device().and_then(|d| kept.get(&d)))
        {
            if *keeper != rs.name {
                rs.class =
                    ReplicaSetClass::Invalid(format!("ReplicaSet {keeper} already runs this disk"));
            }
        }
    }
}
