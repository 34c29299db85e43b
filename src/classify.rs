//! Classification: what each observed pod is to the planner. Pure; time comes in as an
//! argument.
//!
//! Rules, in order: a terminating pod is only waited for; a pod controlled by another object
//! (an ownerReference with `controller: true` that is not this CephOSD) is never ours to
//! delete, patch or count; a pod without the host, data and pod-template-hash annotations, or
//! whose name does not start with its OSD's prefix, is invalid and claims nothing; a pod that
//! ended is deleted and recreated. Of the remaining pods that claim one disk, exactly one is
//! kept: the one this CephOSD controls, else a Ready one, else the oldest (then by name). Only
//! the others are deleted, so a stray pod can never take a healthy OSD pod down.

use crate::desired::DesiredOsd;
use crate::hash::TemplateHash;
use crate::labels::{self, PodState};
use crate::osd::{DeviceId, OsdKey};
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::collections::BTreeMap;

/// How the planner sees one observed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodClass {
    /// Has a deletionTimestamp: ignored, but still holds its OSD's device until gone.
    Terminating,
    /// Controlled by another object: left alone, but it holds its OSD's device.
    Foreign(Controller),
    /// Not a pod we could have made (or a second pod for one disk): deleted.
    Invalid(String),
    /// Ended (`Failed`/`Succeeded`, e.g. evicted): deleted, then recreated once gone.
    Ended(String),
    /// Current template and devices.
    UpToDate,
    /// Older template or changed db/wal devices: replaced in its turn.
    OutOfDate,
    /// Created by us and now Ready: becomes up-to-date.
    Ready,
    /// Created by us and not yet Ready: halts the rollout.
    Unready,
}

/// The object a controller ownerReference names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Controller {
    pub kind: String,
    pub name: String,
}

impl std::fmt::Display for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// What stands for an OSD: a pod, or (from the Ansible operator's ReplicaSet era) a
/// ReplicaSet that keeps one pod running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Pod,
    ReplicaSet,
}

/// One observed pod and what the planner made of it.
#[derive(Clone, Debug)]
pub struct ObservedPod {
    pub name: String,
    pub uid: Option<String>,
    /// The OSD it belongs to, when its annotations say so.
    pub key: Option<OsdKey>,
    /// The disk that key names (computed once: every map of the planner looks it up).
    pub device: Option<DeviceId>,
    pub class: PodClass,
    pub ready: bool,
    pub state: Option<String>,
    /// When the pod was created (deadline of a replacement).
    pub created: Option<Timestamp>,
    /// Ready since then, but not yet for minReadySeconds.
    pub soaking_since: Option<Timestamp>,
    /// The pod's deletionTimestamp (when its graceful termination should have ended).
    pub deleted: Option<Timestamp>,
    /// Whether its controller ownerReference is this CephOSD (false: adopted from elsewhere).
    pub controlled: bool,
    /// A pod, or a ReplicaSet of the Ansible operator standing for one.
    pub workload: Workload,
    /// Why the scheduler cannot place it (its `PodScheduled` condition is False).
    pub unschedulable: Option<String>,
}

impl ObservedPod {
    /// `name (host:data)`, for messages.
    pub fn describe(&self) -> String {
        match &self.key {
            Some(key) => format!("{} ({key})", self.name),
            None => self.name.clone(),
        }
    }

    /// A live pod (one that counts as the OSD's pod).
    pub fn is_live(&self) -> bool {
        matches!(
            self.class,
            PodClass::UpToDate | PodClass::OutOfDate | PodClass::Ready | PodClass::Unready
        )
    }

    /// The disk it holds, when its annotations name one.
    pub fn device(&self) -> Option<&DeviceId> {
        self.device.as_ref()
    }
}

/// The CephOSD whose pods are classified.
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    pub name: &'a str,
    /// Its uid (None only offline): a controller reference must carry it to be ours.
    pub uid: Option<&'a str>,
}

/// Time facts classification needs.
pub struct Timing {
    pub now: Timestamp,
    /// `spec.minReadySeconds`.
    pub min_ready: SignedDuration,
}

/// Who controls an object.
pub enum ControlledBy {
    ThisCephOsd,
    Nobody,
    Other(Controller),
}

/// The controller of an object with these ownerReferences, relative to `owner`.
pub fn controlled_by(references: Option<&Vec<OwnerReference>>, owner: &Owner<'_>) -> ControlledBy {
    let Some(reference) = references
        .into_iter()
        .flatten()
        .find(|o| o.controller == Some(true))
    else {
        return ControlledBy::Nobody;
    };
    let same_cr = reference.kind == "CephOSD"
        && reference.api_version.split('/').next() == Some(crate::crd::GROUP)
        && match owner.uid {
            Some(uid) => reference.uid == uid,
            None => reference.name == owner.name,
        };
    if same_cr {
        ControlledBy::ThisCephOsd
    } else {
        ControlledBy::Other(Controller {
            kind: reference.kind.clone(),
            name: reference.name.clone(),
        })
    }
}

/// Classifies `pods` (see the module docs).
pub fn classify(
    pods: &[Pod],
    owner: &Owner<'_>,
    template_hash: &TemplateHash,
    desired: &BTreeMap<OsdKey, DesiredOsd>,
    timing: &Timing,
) -> Vec<ObservedPod> {
    // First what each pod is on its own; `None` marks a pod that claims its disk.
    let mut observed: Vec<(ObservedPod, Option<PodClass>)> = pods
        .iter()
        .map(|pod| {
            let annotation = |k: &str| pod.annotations().get(k).map(String::as_str);
            let key = match (annotation(labels::HOST), annotation(labels::DATA)) {
                (Some(host), Some(data)) => Some(OsdKey::new(host, data)),
                _ => None,
            };
            let controller = controlled_by(pod.metadata.owner_references.as_ref(), owner);
            let name = pod.name_any();
            let class = on_its_own(pod, &name, key.as_ref(), &controller);
            let pod = ObservedPod {
                uid: pod.metadata.uid.clone(),
                name,
                device: key.as_ref().map(OsdKey::device_id),
                key,
                class: PodClass::Terminating,
                ready: ready_since(pod).is_some(),
                state: annotation(labels::POD_STATE).map(str::to_owned),
                created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
                deleted: pod.metadata.deletion_timestamp.as_ref().map(|t| t.0),
                soaking_since: None,
                controlled: matches!(controller, ControlledBy::ThisCephOsd),
                workload: Workload::Pod,
                unschedulable: unschedulable(pod),
            };
            (pod, class)
        })
        .collect();

    // Then one keeper per disk among the claimants.
    let mut keepers: BTreeMap<DeviceId, usize> = BTreeMap::new();
    for (index, (pod, class)) in observed.iter().enumerate() {
        let Some(device) = pod.device().filter(|_| class.is_none()).cloned() else {
            continue;
        };
        let keeper = keepers.entry(device).or_insert(index);
        if keeps_over(pod, &observed[*keeper].0) {
            *keeper = index;
        }
    }
    let kept: BTreeMap<usize, &DeviceId> = keepers.iter().map(|(d, i)| (*i, d)).collect();
    let keeper_names: BTreeMap<&DeviceId, String> = keepers
        .iter()
        .map(|(device, index)| (device, observed[*index].0.name.clone()))
        .collect();
    for (index, (pod, class)) in observed.iter_mut().enumerate() {
        pod.class = match class.take() {
            Some(decided) => decided,
            None if kept.contains_key(&index) => {
                let source = &pods[index];
                let class = on_its_disk(source, pod.key.as_ref(), template_hash, desired, timing);
                if class == PodClass::Unready {
                    // A Ready replacement still soaking for minReadySeconds.
                    pod.soaking_since = ready_since(source);
                }
                class
            }
            None => {
                let keeper = pod
                    .device()
                    .and_then(|d| keeper_names.get(&d).cloned())
                    .unwrap_or_default();
                PodClass::Invalid(format!("pod {keeper} already runs the OSD on this disk"))
            }
        };
    }
    observed.into_iter().map(|(pod, _)| pod).collect()
}

/// What a pod is regardless of the others; `None` when it is a valid claimant of its disk.
fn on_its_own(
    pod: &Pod,
    name: &str,
    key: Option<&OsdKey>,
    controller: &ControlledBy,
) -> Option<PodClass> {
    if pod.metadata.deletion_timestamp.is_some() {
        return Some(PodClass::Terminating);
    }
    if let ControlledBy::Other(other) = controller {
        return Some(PodClass::Foreign(other.clone()));
    }
    let has_hash = pod
        .annotations()
        .get(labels::TEMPLATE_HASH)
        .is_some_and(|h| !h.is_empty());
    let Some(key) = key.filter(|_| has_hash) else {
        return Some(PodClass::Invalid(
            "it lacks the host, data or pod-template-hash annotation".into(),
        ));
    };
    let prefix = key.name_prefix();
    if !name.starts_with(&prefix) {
        return Some(PodClass::Invalid(format!(
            "its name does not start with {prefix}"
        )));
    }
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .filter(|p| matches!(*p, "Failed" | "Succeeded"))
        .map(|phase| PodClass::Ended(phase.to_owned()))
}

/// Whether `candidate` is a better keeper of a disk than `current`: controlled by this
/// CephOSD, then Ready, then older, then the smaller name.
fn keeps_over(candidate: &ObservedPod, current: &ObservedPod) -> bool {
    let rank = |p: &ObservedPod| {
        (
            !p.controlled,
            !p.ready,
            p.created.is_none(),
            p.created,
            p.name.clone(),
        )
    };
    rank(candidate) < rank(current)
}

/// The class of the pod kept for its disk.
fn on_its_disk(
    pod: &Pod,
    key: Option<&OsdKey>,
    template_hash: &TemplateHash,
    desired: &BTreeMap<OsdKey, DesiredOsd>,
    timing: &Timing,
) -> PodClass {
    let annotation = |k: &str| {
        pod.annotations()
            .get(k)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    let devices_changed = key.and_then(|k| desired.get(k)).is_some_and(|osd| {
        osd.db.as_deref() != annotation(labels::DB) || osd.wal.as_deref() != annotation(labels::WAL)
    });
    if annotation(labels::TEMPLATE_HASH) != Some(template_hash.as_str()) || devices_changed {
        PodClass::OutOfDate
    } else if annotation(labels::POD_STATE) == Some(PodState::WaitForReady.as_str()) {
        let soaked = ready_since(pod).is_some_and(|since| {
            timing.min_ready.is_zero() || timing.now.duration_since(since) >= timing.min_ready
        });
        if soaked {
            PodClass::Ready
        } else {
            PodClass::Unready
        }
    } else {
        PodClass::UpToDate
    }
}

/// The pod's condition of type `type_` when its status is `status`.
fn condition<'a>(pod: &'a Pod, type_: &str, status: &str) -> Option<&'a PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
}

/// The scheduler's message while a pod cannot be placed (`PodScheduled` False).
pub fn unschedulable(pod: &Pod) -> Option<String> {
    let condition = condition(pod, "PodScheduled", "False")?;
    Some(
        condition
            .message
            .clone()
            .or_else(|| condition.reason.clone())
            .unwrap_or_else(|| "not scheduled".to_owned()),
    )
}

/// When the pod's `Ready` condition turned `True` (its creation time when the kubelet did not
/// say), or None while it is not Ready.
pub fn ready_since(pod: &Pod) -> Option<Timestamp> {
    let condition = condition(pod, "Ready", "True")?;
    condition
        .last_transition_time
        .as_ref()
        .or(pod.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
        .or(Some(Timestamp::UNIX_EPOCH))
}
