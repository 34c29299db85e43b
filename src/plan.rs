//! The planner: a pure function from (CR, observed pods, suffixes) to the actions that move the
//! cluster one safe step towards the CR. No I/O happens here; every rule is unit-testable.
//!
//! Safety rules beyond the reference operator: a pod for an OSD is created only when no pod of
//! that OSD exists any more (terminating ones included), so two pods never share a device; and a
//! rollout step starts only when every desired OSD has a live pod and none is waiting for Ready.

use crate::classify::{classify, Timing};
pub use crate::classify::{ObservedPod, PodClass};
use crate::crd::{CephOsd, CephOsdStatus};
use crate::desired::desired_osds;
use crate::hash::TemplateHash;
use crate::labels::PodState;
use crate::osd::{OsdKey, SuffixSource};
use crate::render::{render_pod, PodIdentity, RenderError};
use crate::rollout::{deadlines, domain_id, rollout_step};
use crate::status::{compute_status, StatusInput};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::collections::BTreeSet;

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

/// Why a pod is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateReason {
    /// An OSD new to the CR (or the CR is new).
    New,
    /// The successor of a pod replaced by the rollout.
    Replacement,
    /// The OSD's pod vanished (deleted by hand, evicted, ended).
    Recreate,
}

/// An Event to publish on the CephOSD, computed as data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub warning: bool,
    pub reason: &'static str,
    pub note: String,
    /// The pod the event is about (its `related` object), if one.
    pub pod: Option<String>,
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
        reason: CreateReason,
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
    /// A replacement past its progress deadline, described.
    pub stalled: Option<String>,
    /// Events that are not tied to one action (halts, stalls, overrides, adoptions).
    pub events: Vec<PlannedEvent>,
    /// The status to write (only when it differs from the CR's current one).
    pub status: CephOsdStatus,
    /// When to look again at the latest (a soak or a deadline ends), if sooner than resync.
    pub requeue_after: Option<SignedDuration>,
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

/// Plans one reconcile of `cr` given every pod carrying its owner label, at time `now`.
pub fn plan(
    cr: &CephOsd,
    pods: &[Pod],
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Result<Plan, PlanError> {
    let spec = &cr.spec;
    let template_hash = TemplateHash::of(&spec.pod_template);
    let (desired, conflicts) = desired_osds(spec);
    let timing = Timing {
        now,
        min_ready: spec.min_ready(),
    };
    let observed = classify(pods, &template_hash, &desired, &timing);
    let previous = cr.status.clone().unwrap_or_default();
    let same_generation = previous.observed_generation.is_some()
        && previous.observed_generation == cr.metadata.generation;
    let domain_of = |key: &OsdKey| domain_id(key, spec.update_domain);
    let previous_update: BTreeSet<&str> =
        previous.current_update.iter().map(String::as_str).collect();

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
        let pod =
            render_pod(&spec.pod_template, osd, &identity).map_err(|source| PlanError::Render {
                key: osd.key.clone(),
                source,
            })?;
        let reason = if previous_update.contains(domain_of(&osd.key).as_str()) {
            CreateReason::Replacement
        } else if same_generation {
            CreateReason::Recreate
        } else {
            CreateReason::New
        };
        actions.push(Action::Create {
            key: osd.key.clone(),
            pod: Box::new(pod),
            reason,
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

    // 5: rolling update, at most `maxUnavailable` update domains unavailable at once.
    let step = rollout_step(spec, &current, &missing);
    let mut replacing = Vec::new();
    for pod in &step.replace {
        actions.push(delete(pod, DeleteReason::Replace));
        replacing.extend(pod.key.clone());
    }
    let halted = step.halted;
    let unavailable = step.unavailable;
    let blocking_terminations = observed.iter().filter(|p| {
        p.class == PodClass::Terminating && p.key.as_ref().is_some_and(|k| missing.contains(k))
    });
    let watch = deadlines(
        spec,
        current.iter().copied().chain(blocking_terminations),
        now,
    );
    let (stalled, requeue_after) = (watch.stalled, watch.requeue_after);

    let mut current_update: BTreeSet<String> = unavailable
        .iter()
        .filter(|d| previous_update.contains(d.as_str()))
        .cloned()
        .collect();
    current_update.extend(replacing.iter().map(domain_of));

    let count = |class: PodClass| current.iter().filter(|p| p.class == class).count();
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
        out_of_date: count(PodClass::OutOfDate),
        unready: count(PodClass::Unready),
        invalid: observed
            .iter()
            .filter(|p| matches!(p.class, PodClass::Invalid(_) | PodClass::Ended(_)))
            .count(),
        terminating: observed
            .iter()
            .filter(|p| p.class == PodClass::Terminating)
            .count(),
    };
    let spec_warnings: Vec<String> = conflicts.into_iter().map(|c| c.message).collect();
    let status = compute_status(&StatusInput {
        previous: &previous,
        generation: cr.metadata.generation,
        now,
        template_hash: &template_hash,
        summary: &summary,
        paused: spec.is_paused(),
        halted: halted.as_deref(),
        stalled: stalled.as_deref(),
        spec_errors: &spec_warnings,
        pending_actions: !actions.is_empty(),
        current_update: current_update.into_iter().collect(),
    });
    let mut events = transition_events(&previous, &status);
    for pod in &current {
        if pod.class == PodClass::UpToDate
            && !pod.ready
            && pod
                .key
                .as_ref()
                .is_some_and(|k| previous_update.contains(domain_of(k).as_str()))
        {
            events.push(PlannedEvent {
                warning: false,
                reason: "Overridden",
                note: format!(
                    "pod {} was marked up-to-date before it became Ready; the rollout continues",
                    pod.describe(),
                ),
                pod: Some(pod.name.clone()),
            });
        }
        if cr.status.is_none() && !pod.controlled {
            events.push(PlannedEvent {
                warning: false,
                reason: "Adopted",
                note: format!(
                    "adopted pod {} as it is, without restarting it",
                    pod.describe(),
                ),
                pod: Some(pod.name.clone()),
            });
        }
    }
    Ok(Plan {
        template_hash,
        pods: observed,
        actions,
        summary,
        replacing,
        halted,
        spec_warnings,
        stalled,
        events,
        status,
        requeue_after,
    })
}

/// Events for state changes between the previous and the new status (so a steady state,
/// or a halt that persists, publishes nothing).
fn transition_events(previous: &CephOsdStatus, status: &CephOsdStatus) -> Vec<PlannedEvent> {
    let condition = |s: &CephOsdStatus, t: &str| {
        s.conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    };
    let mut events = Vec::new();
    let (before, after) = (condition(previous, "Stalled"), condition(status, "Stalled"));
    if let Some((state, _, message)) = &after {
        if state == "True" && before.as_ref().is_none_or(|b| b.0 != "True") {
            events.push(PlannedEvent {
                warning: true,
                reason: "Stalled",
                note: message.clone(),
                pod: None,
            });
        }
    }
    let (before, after) = (
        condition(previous, "Progressing"),
        condition(status, "Progressing"),
    );
    if let Some((_, reason, message)) = &after {
        let halted = matches!(reason.as_str(), "Halted" | "Paused");
        if halted
            && before
                .as_ref()
                .is_none_or(|b| (&b.1, &b.2) != (reason, message))
        {
            events.push(PlannedEvent {
                warning: false,
                reason: "Halted",
                note: message.clone(),
                pod: None,
            });
        }
    }
    events
}

fn delete(pod: &ObservedPod, reason: DeleteReason) -> Action {
    Action::Delete {
        name: pod.name.clone(),
        uid: pod.uid.clone(),
        key: pod.key.clone(),
        reason,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
