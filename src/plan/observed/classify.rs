//! Classification: what each observed pod is to the planner. Pure; time comes in as an
//! argument.
//!
//! Which OSD a pod runs is told by `pod::identity`. A pod whose annotations disagree with what it runs is out of date: replaced in its turn (never at once,
//! never while paused), and until it is gone it holds both its disk and the one its
//! annotations name.
//!
//! Rules, in order: a terminating pod is only waited for; a pod controlled by another object
//! (an ownerReference with `controller: true` that is not this CephOSD) is never ours to
//! delete, patch or count; a pod that runs no OSD we can tell is invalid and claims nothing
//! (but holds every disk it may run on); a pod that ended is deleted and recreated. Of the
//! remaining pods that claim one disk (whatever its spelling), exactly one is kept: the one
//! this CephOSD controls, else one whose OSD the CR lists, else a Ready one, else the oldest
//! (then by name). Only the others are deleted, so a stray pod can never take a healthy OSD
//! pod down.

use crate::crd::desired::DesiredOsds;
use crate::crd::osd::{DeviceId, OsdKey};
use crate::hash::TemplateHash;
use crate::labels::{self, PodState};
use crate::pod::identity::identify;
use crate::pod::owner_reference::is_cephosd;
use crate::pod::pod_record::{bound_host, recorded_data};
use crate::pod::pod_status::{ready_since, unschedulable};
use k8s_openapi::api::core::v1::Pod;
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
    /// Older template, changed db/wal devices or annotations that disagree with what it runs:
    /// replaced in its turn.
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
    /// The OSD it runs, when that can be told (see the module docs).
    pub key: Option<OsdKey>,
    /// The disk it holds: its OSD's, else the one its annotations name (computed once: every
    /// map of the planner looks it up).
    pub device: Option<DeviceId>,
    /// Other disks it may run a daemon on until it is gone: the one its annotations name when
    /// that is not its OSD's, every disk its name and host fit when its OSD cannot be told.
    pub also_holds: Vec<DeviceId>,
    /// Its OSD's place among the CR's OSDs
    /// ([`DesiredOsd::index`](crate::crd::desired::DesiredOsd::index)), when it is one of them.
    pub osd: Option<usize>,
    pub class: PodClass,
    pub ready: bool,
    pub state: Option<String>,
    /// When the pod was created (deadline of a replacement).
    pub created: Option<Timestamp>,
    /// Ready since then, but not yet for minReadySeconds.
    pub soaking_since: Option<Timestamp>,
    /// The pod's deletionTimestamp (when its graceful termination should have ended).
    pub deleted: Option<Timestamp>,
    /// How its ownerReferences name this CephOSD.
    pub ownership: Ownership,
    /// A pod, or a ReplicaSet of the Ansible operator standing for one.
    pub workload: Workload,
    /// Why the scheduler cannot place it (its `PodScheduled` condition is False).
    pub unschedulable: Option<String>,
    /// Why its annotations are not believed, when they disagree with what it runs.
    pub tampered: Option<String>,
    /// A second pod for a disk another pod keeps (deleted at once).
    pub duplicate: bool,
    /// Its update-domain label (the disruption budget selects pods by it), if it has one.
    pub domain_label: Option<String>,
}

impl ObservedPod {
    /// `name (host:data)`, for messages.
    pub fn describe(&self) -> String {
        match &self.key {
            Some(key) => format!("{} ({key})", self.name),
            None => self.name.clone(),
        }
    }

    /// Whether its controller ownerReference is this CephOSD (false: adopted).
    pub fn controlled(&self) -> bool {
        self.ownership == Ownership::Controller
    }

    /// A live pod (one that counts as the OSD's pod).
    pub fn is_live(&self) -> bool {
        matches!(
            self.class,
            PodClass::UpToDate | PodClass::OutOfDate | PodClass::Ready | PodClass::Unready
        )
    }

    /// A pod of the CephOSD (its owner label) that names no owner and is not going: one the
    /// garbage collector let go of.
    pub fn is_orphan(&self) -> bool {
        self.ownership == Ownership::None
            && self.workload == Workload::Pod
            && self.deleted.is_none()
            && !matches!(self.class, PodClass::Foreign(_))
    }

    /// Whether it runs the current template (up to date, or created by us for it).
    pub fn runs_the_template(&self) -> bool {
        matches!(
            self.class,
            PodClass::UpToDate | PodClass::Ready | PodClass::Unready
        )
    }

    /// The disk it holds, when one can be told.
    pub fn device(&self) -> Option<&DeviceId> {
        self.device.as_ref()
    }

    /// Every disk it may run a daemon on.
    pub fn holds(&self) -> impl Iterator<Item = &DeviceId> {
        self.device.iter().chain(&self.also_holds)
    }
}

/// The CephOSD whose pods are classified.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Owner<'a> {
    pub name: &'a str,
    /// Its uid (None only offline): a controller reference must carry it to be ours.
    pub uid: Option<&'a str>,
}

/// Time facts classification needs.
pub(crate) struct Timing {
    pub now: Timestamp,
    /// `spec.minReadySeconds`.
    pub min_ready: SignedDuration,
}

/// Who controls an object.
pub(crate) enum ControlledBy {
    ThisCephOsd,
    Nobody,
    Other(Controller),
}

/// How a pod's ownerReferences name this CephOSD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// As its controller.
    Controller,
    /// Without `controller`: the Ansible operator's pods (adopted) name their CephOSD so. The
    /// garbage collector takes them with it all the same.
    Owner,
    /// Not at all: adopted from elsewhere, or let go of.
    None,
}

/// Whether `reference` names the CephOSD `owner`.
fn names(reference: &OwnerReference, owner: &Owner<'_>) -> bool {
    is_cephosd(reference)
        && match owner.uid {
            Some(uid) => reference.uid == uid,
            None => reference.name == owner.name,
        }
}

/// The controller of an object with these ownerReferences, relative to `owner`.
pub(crate) fn controlled_by(
    references: Option<&Vec<OwnerReference>>,
    owner: &Owner<'_>,
) -> ControlledBy {
    let Some(reference) = references
        .into_iter()
        .flatten()
        .find(|o| o.controller == Some(true))
    else {
        return ControlledBy::Nobody;
    };
    if names(reference, owner) {
        ControlledBy::ThisCephOsd
    } else {
        ControlledBy::Other(Controller {
            kind: reference.kind.clone(),
            name: reference.name.clone(),
        })
    }
}

/// The CephOSD a pod belongs to (by name): its controller, else its owner label.
pub(crate) fn owning_cephosd(pod: &Pod) -> Option<&str> {
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && is_cephosd(o));
    match controller {
        Some(reference) => Some(reference.name.as_str()),
        None => labels::owner_named_by(pod.labels().get(labels::OWNER)?),
    }
}

/// One pod that claims a disk (by number: the CR's disks first, then others).
struct Claim {
    pod: usize,
    disk: usize,
}

/// Classifies `pods` (see the module docs).
pub(crate) fn classify(
    pods: &[&Pod],
    owner: &Owner<'_>,
    template_hash: &TemplateHash,
    desired: &DesiredOsds,
    timing: &Timing,
) -> Vec<ObservedPod> {
    // First what each pod is on its own; `None` marks a pod that claims its disk.
    let mut observed: Vec<(ObservedPod, Option<PodClass>)> = pods
        .iter()
        .map(|pod| observe(pod, owner, desired))
        .collect();
    let claims = claims(&observed, desired);
    let keepers = keeper_per_disk(&claims, &observed);
    for claim in &claims {
        let keeper = keepers[claim.disk];
        if keeper != claim.pod {
            let why = format!(
                "pod {} already runs the OSD on this disk",
                observed[keeper].0.name
            );
            let (pod, class) = &mut observed[claim.pod];
            pod.duplicate = true;
            *class = Some(PodClass::Invalid(why));
            continue;
        }
        let (pod, class) = &mut observed[claim.pod];
        let source = pods[claim.pod];
        let kept = on_its_disk(source, pod, desired, template_hash, timing);
        if kept == PodClass::Unready {
            // A Ready replacement still soaking for minReadySeconds.
            pod.soaking_since = ready_since(source);
        }
        *class = Some(kept);
    }
    observed
        .into_iter()
        .map(|(mut pod, class)| {
            if let Some(class) = class {
                pod.class = class;
            }
            pod
        })
        .collect()
}

/// The pod on its own, and its class unless it is a claimant of its disk (`None`).
fn observe(pod: &Pod, owner: &Owner<'_>, desired: &DesiredOsds) -> (ObservedPod, Option<PodClass>) {
    let name = pod.name_any();
    let identity = identify(pod, &name, desired);
    let osd = identity.key.as_ref().and_then(|k| desired.osds.get(k));
    let controller = controlled_by(pod.metadata.owner_references.as_ref(), owner);
    let device = match (osd, &identity.key) {
        (Some(osd), _) => Some(osd.device.clone()),
        (None, Some(key)) => Some(key.device_id()),
        (None, None) => identity.annotated.clone(),
    };
    let mut also_holds = identity.fitting;
    // A pod made before the record takes its data device from its annotation when it
    // restarts: that path, on the node it is bound to (an edited host annotation moves
    // nothing).
    if identity.tampered.is_some() && recorded_data(pod).is_none() {
        let data = pod.annotations().get(labels::DATA);
        let host = bound_host(pod).or(identity.key.as_ref().map(|k| k.host.as_str()));
        if let (Some(host), Some(data)) = (host, data) {
            also_holds.push(OsdKey::new(host, data.as_str()).device_id());
        }
    }
    also_holds.retain(|d| Some(d) != device.as_ref());
    also_holds.dedup();
    let class = if pod.metadata.deletion_timestamp.is_some() {
        Some(PodClass::Terminating)
    } else if let ControlledBy::Other(other) = &controller {
        Some(PodClass::Foreign(other.clone()))
    } else if let Some(why) = identity.unknown {
        Some(PodClass::Invalid(why))
    } else {
        pod.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .filter(|p| matches!(*p, "Failed" | "Succeeded"))
            .map(|phase| PodClass::Ended(phase.to_owned()))
    };
    let observed = ObservedPod {
        uid: pod.metadata.uid.clone(),
        name,
        device,
        also_holds,
        osd: osd.map(|o| o.index),
        key: identity.key,
        class: PodClass::Terminating,
        ready: ready_since(pod).is_some(),
        state: pod.annotations().get(labels::POD_STATE).cloned(),
        created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
        deleted: pod.metadata.deletion_timestamp.as_ref().map(|t| t.0),
        soaking_since: None,
        ownership: if matches!(controller, ControlledBy::ThisCephOsd) {
            Ownership::Controller
        } else if (pod.metadata.owner_references.iter().flatten()).any(|r| names(r, owner)) {
            Ownership::Owner
        } else {
            Ownership::None
        },
        workload: Workload::Pod,
        unschedulable: unschedulable(pod),
        tampered: identity.tampered,
        duplicate: false,
        domain_label: pod.labels().get(labels::UPDATE_DOMAIN).cloned(),
    };
    (observed, class)
}

/// The claimants among `observed` and their disks' numbers: the CR's own disk numbers, then
/// one number per other disk these pods name.
fn claims(observed: &[(ObservedPod, Option<PodClass>)], desired: &DesiredOsds) -> Vec<Claim> {
    let mut other_disks: BTreeMap<&DeviceId, usize> = BTreeMap::new();
    observed
        .iter()
        .enumerate()
        .filter(|(_, (pod, class))| class.is_none() && pod.key.is_some())
        .filter_map(|(index, (pod, _))| {
            let device = pod.device()?;
            let disk = (pod.key.as_ref())
                .and_then(|k| desired.osds.get(k))
                .map(|o| o.disk)
                .or_else(|| desired.disks.get(device).copied())
                .unwrap_or_else(|| {
                    let next = desired.disks.len() + other_disks.len();
                    *other_disks.entry(device).or_insert(next)
                });
            Some(Claim { pod: index, disk })
        })
        .collect()
}

/// The pod kept for each disk number (`usize::MAX` where none claims it).
fn keeper_per_disk(claims: &[Claim], observed: &[(ObservedPod, Option<PodClass>)]) -> Vec<usize> {
    let disks = claims.iter().map(|c| c.disk + 1).max().unwrap_or(0);
    let mut keepers = vec![usize::MAX; disks];
    for claim in claims {
        let keeper = &mut keepers[claim.disk];
        if *keeper == usize::MAX || keeps_over(&observed[claim.pod].0, &observed[*keeper].0) {
            *keeper = claim.pod;
        }
    }
    keepers
}

/// Whether `candidate` is a better keeper of a disk than `current`: controlled by this
/// CephOSD, then of an OSD the CR lists (not another spelling of its disk), then Ready, then
/// older, then the smaller name.
fn keeps_over(candidate: &ObservedPod, current: &ObservedPod) -> bool {
    fn rank(p: &ObservedPod) -> (bool, bool, bool, bool, Option<Timestamp>, &str) {
        (
            !p.controlled(),
            p.osd.is_none(),
            !p.ready,
            p.created.is_none(),
            p.created,
            p.name.as_str(),
        )
    }
    rank(candidate) < rank(current)
}

/// The class of the pod kept for its disk.
fn on_its_disk(
    pod: &Pod,
    observed: &ObservedPod,
    desired: &DesiredOsds,
    template_hash: &TemplateHash,
    timing: &Timing,
) -> PodClass {
    let annotation = |k: &str| {
        pod.annotations()
            .get(k)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    let osd = observed.key.as_ref().and_then(|k| desired.osds.get(k));
    let devices_changed = osd.is_some_and(|osd| {
        osd.db.as_deref() != annotation(labels::DB) || osd.wal.as_deref() != annotation(labels::WAL)
    });
    if annotation(labels::TEMPLATE_HASH) != Some(template_hash.as_str())
        || devices_changed
        || observed.tampered.is_some()
    {
        PodClass::OutOfDate
    } else if matches!(
        annotation(labels::POD_STATE),
        Some(state) if state == PodState::WaitForReady.as_str() || state == PodState::OutOfDate.as_str()
    ) {
        // Up to date only through Ready (or an admin's override): a pod waiting for Ready, or
        // one marked out of date and current again (a template reverted, annotations
        // restored), gates the rollout until it is Ready.
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

#[cfg(test)]
mod tests;
