//! The planner: a pure function from (CR, observed pods, suffixes) to the actions that move the
//! cluster one safe step towards the CR. No I/O happens here; every rule is unit-testable.
//!
//! Safety rules beyond the reference operator: a pod for an OSD is created only when no pod of
//! that OSD exists any more (terminating ones included), so two pods never share a device; and a
//! rollout step starts only when every desired OSD has a live pod and none is waiting for Ready.

use crate::crd::{CephOsd, UpdateDomain};
use crate::desired::{desired_osds, DesiredOsd};
use crate::hash::TemplateHash;
use crate::labels::{self, PodState};
use crate::osd::{OsdKey, SuffixSource};
use crate::render::{render_pod, PodIdentity, RenderError};
use k8s_openapi::api::core::v1::Pod;
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
}

impl ObservedPod {
    /// A live pod (one that counts as the OSD's pod).
    pub fn is_live(&self) -> bool {
        matches!(
            self.class,
            PodClass::UpToDate | PodClass::OutOfDate | PodClass::Ready | PodClass::Unready
        )
    }
}

/// Why a pod is deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeleteReason {
    Invalid(String),
    Ended(String),
    /// Its OSD is no longer in the CR.
    Superfluous,
    /// Rolling update: out-of-date, its successor follows once it is gone.
    Replace,
}

/// One API write.
#[derive(Clone, Debug)]
pub enum Action {
    Delete {
        name: String,
        uid: Option<String>,
        key: Option<OsdKey>,
        reason: DeleteReason,
    },
    Create {
        key: OsdKey,
        pod: Box<Pod>,
    },
    PatchState {
        name: String,
        key: OsdKey,
        state: PodState,
    },
}

/// Counts for logs and status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub desired: usize,
    /// Desired OSDs with a live pod.
    pub current: usize,
    /// Live pods whose Ready condition is True.
    pub ready: usize,
    /// Live pods on the current template and devices.
    pub updated: usize,
    pub out_of_date: usize,
    pub unready: usize,
    pub invalid: usize,
    pub terminating: usize,
}

/// The outcome of planning one reconcile.
#[derive(Clone, Debug)]
pub struct Plan {
    pub template_hash: TemplateHash,
    pub pods: Vec<ObservedPod>,
    pub actions: Vec<Action>,
    pub summary: Summary,
    /// The OSDs whose replacement started in this plan (rollout step), in order.
    pub replacing: Vec<OsdKey>,
    /// Why no rollout step started although pods are out of date, if so.
    pub halted: Option<String>,
    /// Messages about the spec that deserve a condition (e.g. conflicting duplicates).
    pub spec_warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot build the pod for OSD {key}: {source}")]
    Render {
        key: OsdKey,
        #[source]
        source: RenderError,
    },
    #[error("the CephOSD has no namespace")]
    NoNamespace,
}

/// Plans one reconcile of `cr` given every pod carrying its owner label.
pub fn plan(
    cr: &CephOsd,
    pods: &[Pod],
    suffixes: &mut dyn SuffixSource,
) -> Result<Plan, PlanError> {
    let template_hash = TemplateHash::of(&cr.spec.pod_template);
    let (desired, conflicts) = desired_osds(&cr.spec);
    let observed = classify(pods, &template_hash, &desired);

    let mut actions = Vec::new();
    // 1 + 2: invalid and ended pods, then pods of OSDs no longer in the CR.
    for pod in &observed {
        let reason = match &pod.class {
            PodClass::Invalid(why) => Some(DeleteReason::Invalid(why.clone())),
            PodClass::Ended(phase) => Some(DeleteReason::Ended(phase.clone())),
            _ if pod.is_live() && !pod.key.as_ref().is_some_and(|k| desired.contains_key(k)) => {
                Some(DeleteReason::Superfluous)
            }
            _ => None,
        };
        if let Some(reason) = reason {
            actions.push(delete(pod, reason));
        }
    }

    // 3: missing OSDs, created only once no pod of theirs exists at all (never two per device).
    let occupied: BTreeSet<&OsdKey> = observed.iter().filter_map(|p| p.key.as_ref()).collect();
    let live: BTreeSet<&OsdKey> = observed
        .iter()
        .filter(|p| p.is_live())
        .filter_map(|p| p.key.as_ref())
        .collect();
    let namespace = cr.namespace().ok_or(PlanError::NoNamespace)?;
    let cr_name = cr.name_any();
    let owner_uid = cr.uid();
    let mut missing = Vec::new();
    for osd in desired.values().filter(|o| !live.contains(&o.key)) {
        missing.push(osd.key.clone());
        if occupied.contains(&osd.key) {
            continue;
        }
        let name = format!("{}{}", osd.key.name_prefix(), suffixes.next_suffix());
        let identity = PodIdentity {
            cr_name: &cr_name,
            namespace: &namespace,
            owner_uid: owner_uid.as_deref(),
            name: &name,
            template_hash: &template_hash,
            // Every pod we create gates the rollout until it is Ready.
            pod_state: PodState::WaitForReady,
        };
        let pod = render_pod(&cr.spec.pod_template, osd, &identity).map_err(|source| {
            PlanError::Render {
                key: osd.key.clone(),
                source,
            }
        })?;
        actions.push(Action::Create {
            key: osd.key.clone(),
            pod: Box::new(pod),
        });
    }

    // 4: record states (only where the annotation differs: adoption writes nothing).
    let current: Vec<&ObservedPod> = observed
        .iter()
        .filter(|p| p.is_live() && p.key.as_ref().is_some_and(|k| desired.contains_key(k)))
        .collect();
    for pod in &current {
        let state = match pod.class {
            PodClass::OutOfDate => PodState::OutOfDate,
            PodClass::UpToDate | PodClass::Ready => PodState::UpToDate,
            _ => continue,
        };
        if pod.state.as_deref() != Some(state.as_str()) {
            if let Some(key) = &pod.key {
                actions.push(Action::PatchState {
                    name: pod.name.clone(),
                    key: key.clone(),
                    state,
                });
            }
        }
    }

    // 5: rolling update, one update domain at a time.
    let out_of_date: Vec<&ObservedPod> = current
        .iter()
        .copied()
        .filter(|p| p.class == PodClass::OutOfDate)
        .collect();
    let unready: Vec<&ObservedPod> = current
        .iter()
        .copied()
        .filter(|p| p.class == PodClass::Unready)
        .collect();
    let mut replacing = Vec::new();
    let mut halted = None;
    if !out_of_date.is_empty() {
        if let Some(pod) = unready.first() {
            halted = Some(format!(
                "waiting for pod {} ({}) to become Ready",
                pod.name,
                pod.key
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            ));
        } else if let Some(key) = missing.first() {
            halted = Some(format!("waiting for OSD {key} to have a running pod"));
        } else {
            let step = next_update_domain(&out_of_date, cr.spec.update_domain);
            for pod in step {
                actions.push(delete(pod, DeleteReason::Replace));
                replacing.extend(pod.key.clone());
            }
        }
    }

    let summary = Summary {
        desired: desired.len(),
        current: current.len(),
        ready: current.iter().filter(|p| p.ready).count(),
        updated: current
            .iter()
            .filter(|p| {
                matches!(
                    p.class,
                    PodClass::UpToDate | PodClass::Ready | PodClass::Unready
                )
            })
            .count(),
        out_of_date: out_of_date.len(),
        unready: unready.len(),
        invalid: observed
            .iter()
            .filter(|p| matches!(p.class, PodClass::Invalid(_) | PodClass::Ended(_)))
            .count(),
        terminating: observed
            .iter()
            .filter(|p| p.class == PodClass::Terminating)
            .count(),
    };
    Ok(Plan {
        template_hash,
        pods: observed,
        actions,
        summary,
        replacing,
        halted,
        spec_warnings: conflicts.into_iter().map(|c| c.message).collect(),
    })
}

fn delete(pod: &ObservedPod, reason: DeleteReason) -> Action {
    Action::Delete {
        name: pod.name.clone(),
        uid: pod.uid.clone(),
        key: pod.key.clone(),
        reason,
    }
}

/// The out-of-date pods of the first update domain in case-insensitive key order.
fn next_update_domain<'a>(
    out_of_date: &[&'a ObservedPod],
    domain: UpdateDomain,
) -> Vec<&'a ObservedPod> {
    let mut by_key: BTreeMap<&OsdKey, &ObservedPod> = BTreeMap::new();
    for pod in out_of_date {
        if let Some(key) = &pod.key {
            by_key.insert(key, pod);
        }
    }
    let Some((first, _)) = by_key.first_key_value() else {
        return Vec::new();
    };
    match domain {
        UpdateDomain::Osd => by_key.values().take(1).copied().collect(),
        UpdateDomain::Host => {
            // The smallest host in the same case-insensitive order the keys use.
            let host_order = |h: &str| (h.to_lowercase(), h.to_owned());
            let host = by_key
                .keys()
                .map(|k| k.host.as_str())
                .min_by_key(|h| host_order(h))
                .unwrap_or(first.host.as_str())
                .to_owned();
            by_key
                .iter()
                .filter(|(k, _)| k.host == host)
                .map(|(_, p)| *p)
                .collect()
        }
    }
}

/// Classifies pods in list order (section 5 of the reference, plus our fixes).
pub fn classify(
    pods: &[Pod],
    template_hash: &TemplateHash,
    desired: &BTreeMap<OsdKey, DesiredOsd>,
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
            let ready = is_ready(pod);
            let class = if pod.metadata.deletion_timestamp.is_some() {
                PodClass::Terminating
            } else {
                classify_live(pod, &name, key.as_ref(), &mut seen, template_hash, desired)
            };
            ObservedPod {
                uid: pod.metadata.uid.clone(),
                name,
                key,
                class,
                ready,
                state,
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
        if is_ready(pod) {
            PodClass::Ready
        } else {
            PodClass::Unready
        }
    } else {
        PodClass::UpToDate
    }
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
