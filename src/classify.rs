//! Classification: what each observed pod is to the planner (section 5 of the reference
//! behaviour, plus our fixes). Pure; time comes in as an argument.

use crate::desired::DesiredOsd;
use crate::hash::TemplateHash;
use crate::labels::{self, PodState};
use crate::osd::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};

/// How the planner sees one observed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodClass {
    /// Has a deletionTimestamp: ignored, but still holds its OSD's device until gone.
    Terminating,
    /// Not a pod we could have made (or a duplicate): deleted.
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

/// One observed pod and what the planner made of it.
#[derive(Clone, Debug)]
pub struct ObservedPod {
    pub name: String,
    pub uid: Option<String>,
    /// The OSD it belongs to, when its annotations say so.
    pub key: Option<OsdKey>,
    pub class: PodClass,
    pub ready: bool,
    pub state: Option<String>,
    /// When the pod was created (deadline of a replacement).
    pub created: Option<Timestamp>,
    /// Ready since then, but not yet for minReadySeconds.
    pub soaking_since: Option<Timestamp>,
    /// The pod's deletionTimestamp (when its graceful termination should have ended).
    pub deleted: Option<Timestamp>,
    /// Whether a controller ownerReference points at the CR (false: adopted from elsewhere).
    pub controlled: bool,
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
}

/// Time facts classification needs.
pub struct Timing {
    pub now: Timestamp,
    /// `spec.minReadySeconds`.
    pub min_ready: SignedDuration,
}

/// Classifies pods in list order (section 5 of the reference, plus our fixes).
pub fn classify(
    pods: &[Pod],
    template_hash: &TemplateHash,
    desired: &BTreeMap<OsdKey, DesiredOsd>,
    timing: &Timing,
) -> Vec<ObservedPod> {
    let mut seen = BTreeSet::new();
    pods.iter()
        .map(|pod| {
            let annotations = pod.metadata.annotations.as_ref();
            let annotation = |k: &str| annotations.and_then(|a| a.get(k)).map(String::as_str);
            let key = match (annotation(labels::HOST), annotation(labels::DATA)) {
                (Some(host), Some(data)) => Some(OsdKey::new(host, data)),
                _ => None,
            };
            let name = pod.name_any();
            let state = annotation(labels::POD_STATE).map(str::to_owned);
            let ready = ready_since(pod).is_some();
            let class = if pod.metadata.deletion_timestamp.is_some() {
                PodClass::Terminating
            } else {
                classify_live(
                    pod,
                    &name,
                    key.as_ref(),
                    &mut seen,
                    template_hash,
                    desired,
                    timing,
                )
            };
            // A Ready replacement still soaking for minReadySeconds.
            let soaking_since = (class == PodClass::Unready)
                .then(|| ready_since(pod))
                .flatten();
            ObservedPod {
                uid: pod.metadata.uid.clone(),
                name,
                key,
                class,
                ready,
                state,
                created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
                deleted: pod.metadata.deletion_timestamp.as_ref().map(|t| t.0),
                soaking_since,
                controlled: pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.controller == Some(true) && o.kind == "CephOSD"),
            }
        })
        .collect()
}

fn classify_live(
    pod: &Pod,
    name: &str,
    key: Option<&OsdKey>,
    seen: &mut BTreeSet<OsdKey>,
    template_hash: &TemplateHash,
    desired: &BTreeMap<OsdKey, DesiredOsd>,
    timing: &Timing,
) -> PodClass {
    let annotations = pod.metadata.annotations.as_ref();
    let annotation = |k: &str| {
        annotations
            .and_then(|a| a.get(k))
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    let (Some(key), Some(hash)) = (key, annotation(labels::TEMPLATE_HASH)) else {
        return PodClass::Invalid("it lacks the host, data or pod-template-hash annotation".into());
    };
    if !seen.insert(key.clone()) {
        return PodClass::Invalid(format!("another pod already runs OSD {key}"));
    }
    let prefix = key.name_prefix();
    if !name.starts_with(&prefix) {
        return PodClass::Invalid(format!("its name does not start with {prefix}"));
    }
    if let Some(phase) = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .filter(|p| matches!(*p, "Failed" | "Succeeded"))
    {
        return PodClass::Ended(phase.to_owned());
    }
    let devices_changed = desired.get(key).is_some_and(|osd| {
        osd.db.as_deref() != annotation(labels::DB) || osd.wal.as_deref() != annotation(labels::WAL)
    });
    if template_hash != hash || devices_changed {
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

/// When the pod's `Ready` condition turned `True` (its creation time when the kubelet did not
/// say), or None while it is not Ready.
pub fn ready_since(pod: &Pod) -> Option<Timestamp> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?;
    condition
        .last_transition_time
        .as_ref()
        .or(pod.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
        .or(Some(Timestamp::UNIX_EPOCH))
}
