//! Classification: what each observed pod is to the planner. Pure; time comes in as an
//! argument.
//!
//! Rules, in order: a terminating pod is only waited for; a pod controlled by another object
//! (an ownerReference with `controller: true` that is not this CephOSD) is never ours to
//! delete, patch or count; a pod without the host, data and pod-template-hash annotations, or
//! whose name does not start with its OSD's prefix, is invalid and claims nothing; a pod that
//! ended is deleted and recreated. Of the remaining pods that claim one disk (whatever its
//! spelling), exactly one is kept: the one this CephOSD controls, else one whose OSD the CR
//! lists, else a Ready one, else the oldest (then by name). Only the others are deleted, so a
//! stray pod can never take a healthy OSD pod down.

use crate::desired::{DesiredOsd, DesiredOsds};
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
    /// Its OSD's place among the CR's OSDs ([`DesiredOsd::index`]), when it is one of them.
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
pub(crate) fn classify(
    pods: &[&Pod],
    owner: &Owner<'_>,
    template_hash: &TemplateHash,
    desired: &DesiredOsds,
    timing: &Timing,
) -> Vec<ObservedPod> {
    // First what each pod is on its own; `None` marks a pod that claims its disk.
    let mut wanted: Vec<Option<&DesiredOsd>> = Vec::with_capacity(pods.len());
    let mut observed: Vec<(ObservedPod, Option<PodClass>)> = pods
        .iter()
        .map(|pod| {
            let annotation = |k: &str| pod.annotations().get(k).map(String::as_str);
            let key = match (annotation(labels::HOST), annotation(labels::DATA)) {
                (Some(host), Some(data)) => Some(OsdKey::new(host, data)),
                _ => None,
            };
            let osd = key.as_ref().and_then(|k| desired.osds.get(k));
            wanted.push(osd);
            let controller = controlled_by(pod.metadata.owner_references.as_ref(), owner);
            let name = pod.name_any();
            let class = on_its_own(pod, &name, key.as_ref(), &controller);
            let pod = ObservedPod {
                uid: pod.metadata.uid.clone(),
                name,
                device: match osd {
                    Some(osd) => Some(osd.device.clone()),
                    None => key.as_ref().map(OsdKey::device_id),
                },
                osd: osd.map(|o| o.index),
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

    // Then one keeper per disk among the claimants; the others are told which pod keeps it.
    // Disks by number: the CR's own, then the others these pods name.
    let mut other_disks: BTreeMap<&DeviceId, usize> = BTreeMap::new();
    let disks: Vec<Option<usize>> = observed
        .iter()
        .zip(&wanted)
        .map(|((pod, class), osd)| {
            let device = pod.device().filter(|_| class.is_none())?;
            let disk = osd
                .map(|o| o.disk)
                .or_else(|| desired.disks.get(device).copied())
                .unwrap_or_else(|| {
                    let next = desired.disks.len() + other_disks.len();
                    *other_disks.entry(device).or_insert(next)
                });
            Some(disk)
        })
        .collect();
    let mut keepers: Vec<Option<usize>> = vec![None; desired.disks.len() + other_disks.len()];
    for (index, disk) in disks.iter().enumerate() {
        let Some(keeper) = disk.and_then(|d| keepers.get_mut(d)) else {
            continue;
        };
        match keeper {
            Some(current) if !keeps_over(&observed[index].0, &observed[*current].0) => {}
            _ => *keeper = Some(index),
        }
    }
    let keeper_of = |index: usize| disks[index].and_then(|d| keepers.get(d).copied().flatten());
    let kept: Vec<bool> = (0..observed.len())
        .map(|index| keeper_of(index) == Some(index))
        .collect();
    let displaced: Vec<(usize, String)> = (0..observed.len())
        .filter(|index| disks[*index].is_some() && !kept[*index])
        .map(|index| {
            let keeper = keeper_of(index)
                .map(|k| observed[k].0.name.as_str())
                .unwrap_or_default();
            (
                index,
                format!("pod {keeper} already runs the OSD on this disk"),
            )
        })
        .collect();
    let mut displaced = displaced.into_iter().peekable();
    for (index, (pod, class)) in observed.iter_mut().enumerate() {
        pod.class = match class.take() {
            Some(decided) => decided,
            None if kept[index] => {
                let source = &pods[index];
                let class = on_its_disk(source, wanted[index], template_hash, timing);
                if class == PodClass::Unready {
                    // A Ready replacement still soaking for minReadySeconds.
                    pod.soaking_since = ready_since(source);
                }
                class
            }
            None => PodClass::Invalid(
                displaced
                    .next_if(|(i, _)| *i == index)
                    .map(|(_, why)| why)
                    .unwrap_or_default(),
            ),
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
    if !key.prefixes(name) {
        return Some(PodClass::Invalid(format!(
            "its name does not start with {}",
            key.name_prefix()
        )));
    }
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .filter(|p| matches!(*p, "Failed" | "Succeeded"))
        .map(|phase| PodClass::Ended(phase.to_owned()))
}

/// Whether `candidate` is a better keeper of a disk than `current`: controlled by this
/// CephOSD, then of an OSD the CR lists (not another spelling of its disk), then Ready, then
/// older, then the smaller name.
fn keeps_over(candidate: &ObservedPod, current: &ObservedPod) -> bool {
    fn rank(p: &ObservedPod) -> (bool, bool, bool, bool, Option<Timestamp>, &str) {
        (
            !p.controlled,
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
    osd: Option<&DesiredOsd>,
    template_hash: &TemplateHash,
    timing: &Timing,
) -> PodClass {
    let annotation = |k: &str| {
        pod.annotations()
            .get(k)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    let devices_changed = osd.is_some_and(|osd| {
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
pub(crate) fn unschedulable(pod: &Pod) -> Option<String> {
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
pub(crate) fn ready_since(pod: &Pod) -> Option<Timestamp> {
    let condition = condition(pod, "Ready", "True")?;
    condition
        .last_transition_time
        .as_ref()
        .or(pod.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
        .or(Some(Timestamp::UNIX_EPOCH))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{CephOsdSpec, OsdDevices, StorageEntry, UpdateDomain};
    use crate::desired::desired_osds;
    use serde_json::json;

    /// Stands for the current template's hash in `pod()`.
    const HASH: &str = "current";

    fn current() -> TemplateHash {
        TemplateHash::of(&json!({"spec": {}}))
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("time")
    }

    /// A pod for OSD `host:/dev/sdb`: `controller` names its controller kind ("CephOSD" is
    /// ours), `ready_at` when it turned Ready.
    fn pod(
        name: &str,
        host: &str,
        hash: &str,
        state: &str,
        controller: Option<&str>,
        ready_at: Option<i64>,
    ) -> Pod {
        let current = current();
        let hash = if hash == HASH { current.as_str() } else { hash };
        let mut value = json!({
            "metadata": {
                "name": name,
                "creationTimestamp": "1970-01-01T00:00:10Z",
                "annotations": {
                    labels::HOST: host,
                    labels::DATA: "/dev/sdb",
                    labels::TEMPLATE_HASH: hash,
                    labels::POD_STATE: state,
                },
            },
            "status": {"phase": "Running"},
        });
        if let Some(kind) = controller {
            value["metadata"]["ownerReferences"] = json!([{
                "apiVersion": if kind == "CephOSD" { "ceph.elemental.net/v1alpha1" } else { "apps/v1" },
                "kind": kind, "name": "owner", "uid": if kind == "CephOSD" { "cr-uid" } else { "other" },
                "controller": true,
            }]);
        }
        if let Some(seconds) = ready_at {
            value["status"]["conditions"] = json!([{
                "type": "Ready", "status": "True",
                "lastTransitionTime": Time(at(seconds)),
            }]);
        }
        serde_json::from_value(value).expect("pod")
    }

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn classes(pods: &[Pod], min_ready: i64, now: i64) -> Vec<(String, PodClass)> {
        let desired = desired_osds(&CephOsdSpec::new(
            vec![StorageEntry {
                hosts: vec!["h1".into(), "h2".into()],
                osds: vec![OsdDevices {
                    data: "/dev/sdb".into(),
                    db: None,
                    wal: None,
                }],
            }],
            UpdateDomain::Osd,
            json!({}),
        ));
        let owner = Owner {
            name: "ceph-osds",
            uid: Some("cr-uid"),
        };
        let timing = Timing {
            now: at(now),
            min_ready: SignedDuration::from_secs(min_ready),
        };
        classify(
            &pods.iter().collect::<Vec<_>>(),
            &owner,
            &current(),
            &desired,
            &timing,
        )
        .into_iter()
        .map(|p| (p.name, p.class))
        .collect()
    }

    #[test]
    fn each_pod_on_its_own_disk_gets_its_class() {
        let mut ended = pod(
            "osd-h2-sdb-ended",
            "h2",
            HASH,
            "up-to-date",
            Some("CephOSD"),
            None,
        );
        ended.status = Some(serde_json::from_value(json!({"phase": "Failed"})).expect("status"));
        let got = classes(
            &[
                pod("osd-h1-sdb-adopt", "h1", HASH, "up-to-date", None, Some(20)),
                ended,
            ],
            0,
            100,
        );
        assert_eq!(got[0].1, PodClass::UpToDate);
        assert_eq!(got[1].1, PodClass::Ended("Failed".into()));
        let old = classes(
            &[pod(
                "osd-h1-sdb-old",
                "h1",
                "older",
                "up-to-date",
                None,
                Some(20),
            )],
            0,
            100,
        );
        assert_eq!(old[0].1, PodClass::OutOfDate);
        let foreign = classes(
            &[pod(
                "osd-h1-sdb-rs",
                "h1",
                HASH,
                "up-to-date",
                Some("ReplicaSet"),
                Some(20),
            )],
            0,
            100,
        );
        assert!(matches!(&foreign[0].1, PodClass::Foreign(c) if c.kind == "ReplicaSet"));
        let misnamed = classes(
            &[pod("debug-copy", "h1", HASH, "up-to-date", None, Some(20))],
            0,
            100,
        );
        assert!(matches!(&misnamed[0].1, PodClass::Invalid(why) if why.contains("osd-h1-sdb-")));
    }

    #[test]
    fn a_replacement_is_ready_only_after_its_soak() {
        let fresh = pod(
            "osd-h1-sdb-new",
            "h1",
            HASH,
            "wait-for-ready",
            Some("CephOSD"),
            Some(90),
        );
        assert_eq!(
            classes(std::slice::from_ref(&fresh), 30, 100)[0].1,
            PodClass::Unready
        );
        assert_eq!(
            classes(std::slice::from_ref(&fresh), 30, 120)[0].1,
            PodClass::Ready
        );
        assert_eq!(
            classes(std::slice::from_ref(&fresh), 0, 90)[0].1,
            PodClass::Ready
        );
        let unready = pod(
            "osd-h1-sdb-new",
            "h1",
            HASH,
            "wait-for-ready",
            Some("CephOSD"),
            None,
        );
        assert_eq!(classes(&[unready], 0, 100)[0].1, PodClass::Unready);
    }

    #[test]
    fn one_keeper_per_disk_ours_then_ready_then_oldest_and_invalid_pods_claim_nothing() {
        // An adopted Ready pod and our own unready one: ours is kept.
        let got = classes(
            &[
                pod("osd-h1-sdb-aaaaa", "h1", HASH, "up-to-date", None, Some(20)),
                pod(
                    "osd-h1-sdb-bbbbb",
                    "h1",
                    HASH,
                    "wait-for-ready",
                    Some("CephOSD"),
                    None,
                ),
            ],
            0,
            100,
        );
        assert!(matches!(&got[0].1, PodClass::Invalid(why) if why.contains("osd-h1-sdb-bbbbb")));
        assert_eq!(got[1].1, PodClass::Unready);
        // Two adopted pods: the Ready one, whatever the name order.
        let got = classes(
            &[
                pod("osd-h1-sdb-aaaaa", "h1", HASH, "up-to-date", None, None),
                pod("osd-h1-sdb-bbbbb", "h1", HASH, "up-to-date", None, Some(20)),
            ],
            0,
            100,
        );
        assert!(matches!(got[0].1, PodClass::Invalid(_)));
        assert_eq!(got[1].1, PodClass::UpToDate);
        // A misnamed copy never takes the disk from the real pod.
        let got = classes(
            &[
                pod(
                    "debug-copy",
                    "h1",
                    HASH,
                    "up-to-date",
                    Some("CephOSD"),
                    Some(20),
                ),
                pod("osd-h1-sdb-bbbbb", "h1", HASH, "up-to-date", None, None),
            ],
            0,
            100,
        );
        assert!(matches!(got[0].1, PodClass::Invalid(_)));
        assert_eq!(got[1].1, PodClass::UpToDate);
    }

    #[test]
    fn another_spelling_of_a_listed_disk_claims_that_disk_and_the_listed_one_is_kept() {
        // A Ready copy naming the disk `/dev//sdb` (not in the CR) and the adopted, unready
        // pod of `h1:/dev/sdb`: one disk, and the pod of the listed OSD keeps it.
        let mut respelled = pod("osd-h1-sdb-aaaaa", "h1", HASH, "up-to-date", None, Some(5));
        respelled
            .annotations_mut()
            .insert(labels::DATA.into(), "/dev//sdb".into());
        let listed = pod("osd-h1-sdb-bbbbb", "h1", HASH, "up-to-date", None, None);
        for pods in [[respelled.clone(), listed.clone()], [listed, respelled]] {
            let got = classes(&pods, 0, 100);
            let class = |name: &str| got.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone());
            assert_eq!(class("osd-h1-sdb-bbbbb"), Some(PodClass::UpToDate));
            assert!(
                matches!(class("osd-h1-sdb-aaaaa"), Some(PodClass::Invalid(why)) if why.contains("osd-h1-sdb-bbbbb")),
                "{got:?}"
            );
        }
    }
}
