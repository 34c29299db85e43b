//! The Kubernetes Events a CephOSD gets: their reasons, the Event of each applied action, and
//! the Events of status transitions. Pure wording; the executor publishes them.

use crate::crd::osd::OsdKey;
use crate::crd::CephOsdStatus;
use crate::plan::observed::classify::ObservedPod;
use crate::plan::says::actions::{Action, CreateReason, DeleteReason};
use crate::plan::says::conditions::{ConditionReason, ConditionType};
use crate::plan::says::failure::Failure;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// An Event to publish on the CephOSD, computed as data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub warning: bool,
    pub reason: EventReason,
    pub note: String,
    /// The pod the event is about (its `related` object), if one.
    pub pod: Option<String>,
}

/// The reason of an Event on a CephOSD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventReason {
    /// A pod was created for an OSD (new, or a replacement).
    Created,
    /// A vanished OSD pod was created again.
    Recreated,
    /// An out-of-date pod is deleted by the rollout.
    Replacing,
    /// A pod or ReplicaSet was deleted (invalid, ended, superfluous).
    Deleted,
    /// A ReplicaSet of the Ansible operator is deleted by the rollout.
    Migrating,
    InvalidSpec,
    Stalled,
    /// The rollout waits (paused, or an OSD is missing or not Ready).
    Halted,
    /// A replacement marked up-to-date by an admin before it was Ready.
    Overridden,
    /// A pod of the reference operator was taken over as it is.
    Adopted,
    /// A pod with the owner label that another controller controls.
    ForeignPod,
    Unschedulable,
    /// A pod's annotations disagree with the OSD it runs: marked out of date.
    Tampered,
    /// Ceph does not let the next rollout step start (or the reason changed).
    CephGate,
    /// `noout` was held longer than allowed and cleared.
    NooutExpired,
    /// A `noout` was set or cleared.
    Noout,
    /// An open step's Ceph cluster step lock was found deleted or another's.
    StepLockLost,
    /// A removal's drain: OSDs marked out, drained and stopped, or marked in again.
    Drain,
    /// The CephOSD is being deleted: its pods go as a rollout's, or went at once.
    Deleting,
    /// A cordoned node's OSD pods may be evicted: the disruption budget has room.
    DrainAdmitted,
    /// A cordoned node's OSD pods wait: the disruption budget is used up.
    DrainHeld,
    /// The operator's PodDisruptionBudget was created, or removed (turned off, or another
    /// PodDisruptionBudget selects the OSD pods).
    DisruptionBudget,
    /// A pre-pull failed (the rollout holds), or a step went ahead without its images.
    PrePull,
    /// OSDs of the spec's keys are out in Ceph and the operator did not mark them out.
    OsdsOut,
    /// A finalize an admin asked for: `require_osd_release` raised, or why not yet.
    Finalize,
    /// A disk replacement keeping the OSD id: asked for, refused, or a phase reached.
    DiskReplacement,
    /// An API call failed.
    Failed(Failure),
}

impl EventReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Created => "Created",
            Self::Recreated => "Recreated",
            Self::Replacing => "Replacing",
            Self::Deleted => "Deleted",
            Self::Migrating => "Migrating",
            Self::InvalidSpec => "InvalidSpec",
            Self::Stalled => "Stalled",
            Self::Halted => "Halted",
            Self::DrainAdmitted => "DrainAdmitted",
            Self::DrainHeld => "DrainHeld",
            Self::DisruptionBudget => "DisruptionBudget",
            Self::OsdsOut => "OsdsOut",
            Self::PrePull => "PrePull",
            Self::Overridden => "Overridden",
            Self::Adopted => "Adopted",
            Self::ForeignPod => "ForeignPod",
            Self::Unschedulable => "Unschedulable",
            Self::Tampered => "Tampered",
            Self::CephGate => "CephGate",
            Self::NooutExpired => "NooutExpired",
            Self::Noout => "Noout",
            Self::StepLockLost => "StepLockLost",
            Self::Drain => "Drain",
            Self::Deleting => "Deleting",
            Self::Finalize => "Finalize",
            Self::DiskReplacement => "DiskReplacement",
            Self::Failed(failure) => failure.as_str(),
        }
    }
}

impl std::fmt::Display for EventReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The event for a successfully applied action, if it deserves one.
#[expect(
    clippy::too_many_lines,
    reason = "one arm per action: each says what it did in its own words"
)]
pub(crate) fn event_for(action: &Action) -> Option<PlannedEvent> {
    match action {
        Action::Create { key, pod, reason } => {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let (reason, note) = match reason {
                CreateReason::New => (EventReason::Created, format!("created pod {name} for OSD {key}")),
                CreateReason::Replacement => (
                    EventReason::Created,
                    format!("created replacement pod {name} for OSD {key}; waiting for it to become Ready"),
                ),
                CreateReason::Recreate => (
                    EventReason::Recreated,
                    format!("recreated pod {name} for OSD {key}: its previous pod was gone"),
                ),
            };
            Some(PlannedEvent {
                warning: false,
                reason,
                note,
                pod: Some(name.to_owned()),
            })
        }
        Action::Delete {
            name, key, reason, ..
        } => {
            let osd = of_osd(key.as_ref());
            let (event_reason, note) = match reason {
                DeleteReason::Replace => (
                    EventReason::Replacing,
                    format!("deleting out-of-date pod {name}{osd}; its successor starts once it is gone"),
                ),
                other => (EventReason::Deleted, format!("deleted pod {name}{osd}: {}", describe(other))),
            };
            Some(PlannedEvent {
                warning: matches!(reason, DeleteReason::Invalid(_) | DeleteReason::Ended(_)),
                reason: event_reason,
                note,
                pod: Some(name.clone()),
            })
        }
        Action::DeleteReplicaSet {
            name, key, reason, ..
        } => {
            let osd = of_osd(key.as_ref());
            let (event_reason, note) = match reason {
                DeleteReason::Replace => (
                    EventReason::Migrating,
                    format!(
                        "deleting ReplicaSet {name}{osd} (made by the Ansible operator) with its pod; \
                         the OSD's own pod starts once that pod is gone"
                    ),
                ),
                other => (
                    EventReason::Deleted,
                    format!("deleted ReplicaSet {name}{osd}: {}", describe(other)),
                ),
            };
            Some(PlannedEvent {
                warning: matches!(reason, DeleteReason::Invalid(_)),
                reason: event_reason,
                note,
                pod: None,
            })
        }
        // pod-state bookkeeping is visible in status counts; an event each would be noise;
        // the step's record is the status itself.
        // A reservation or a count is told by the status's budget.
        Action::PatchState { .. }
        | Action::RecordCephStep
        | Action::LabelDomain { .. }
        | Action::CreatePrePull { .. }
        | Action::DeletePrePull { .. }
        | Action::WriteBudget { exists: true, .. } => None,
        Action::WriteBudget { budget, .. } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::DisruptionBudget,
            note: format!(
                "created PodDisruptionBudget {}: node drains and the rollout share maxUnavailable",
                budget.metadata.name.as_deref().unwrap_or_default()
            ),
            pod: None,
        }),
        Action::DeleteBudget { name, .. } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::DisruptionBudget,
            note: format!(
                "deleted PodDisruptionBudget {name} (see the DisruptionBudget condition)"
            ),
            pod: None,
        }),
        Action::SetNoout { ids, .. } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::Noout,
            note: format!(
                "set noout on {} for the rollout step",
                crate::ceph::osd_list(ids)
            ),
            pod: None,
        }),
        Action::ClearNoout { ids } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::Noout,
            note: format!("cleared noout on {}", crate::ceph::osd_list(ids)),
            pod: None,
        }),
        Action::MarkOut { ids } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::Drain,
            note: format!(
                "marked {} out: left the spec, its data moves to other OSDs before its pod \
                 stops",
                crate::ceph::osd_list(ids)
            ),
            pod: None,
        }),
        Action::MarkIn { ids } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::Drain,
            note: format!(
                "marked {} in again: back in the spec, the operator had marked them out",
                crate::ceph::osd_list(ids)
            ),
            pod: None,
        }),
        Action::DestroyOsd { id, epoch } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::DiskReplacement,
            note: format!(
                "destroyed osd.{} for its new disk (safe to destroy at OSD map epoch {epoch}): \
                 its id, CRUSH place and weight stay",
                id.0
            ),
            pod: None,
        }),
        Action::RequireOsdRelease { release } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::Finalize,
            note: format!(
                "raised require_osd_release to {release}: every OSD and monitor runs it; an \
                 older release never boots again"
            ),
            pod: None,
        }),
        Action::LetGo { name, .. } => Some(PlannedEvent {
            warning: false,
            reason: EventReason::Deleting,
            note: format!(
                "let go of pod {name}, made while the garbage collector orphaned the others \
                 (--cascade=orphan): its OSD keeps running without this CephOSD"
            ),
            pod: Some(name.clone()),
        }),
    }
}

/// The most Events of one reason that the writes of one reconcile get one by one.
pub(crate) const EVENTS_PER_REASON: usize = 16;

/// The events of one reconcile's applied writes, where a reason with more than
/// `EVENTS_PER_REASON` of them gets one Event that tells them all: creating a thousand OSDs
/// posts a few Events, not a thousand next to the thousand pods.
pub(crate) fn fold_mass_events(events: Vec<PlannedEvent>) -> Vec<PlannedEvent> {
    let mut groups: Vec<Vec<PlannedEvent>> = Vec::new();
    for event in events {
        match groups
            .iter_mut()
            .find(|g| (g[0].reason, g[0].warning) == (event.reason, event.warning))
        {
            Some(group) => group.push(event),
            None => groups.push(vec![event]),
        }
    }
    groups
        .into_iter()
        .flat_map(|mut group| {
            if group.len() <= EVENTS_PER_REASON {
                return group;
            }
            let (count, last) = (group.len(), group.pop().map(|e| e.note).unwrap_or_default());
            let first = group.swap_remove(0);
            vec![PlannedEvent {
                note: format!(
                    "{count} alike in one reconcile, from the first: {}; to the last: {last}",
                    first.note
                ),
                pod: None,
                ..first
            }]
        })
        .collect()
}

/// One Warning per OSD whose pod newly cannot be scheduled (the status lists those already
/// told).
pub(crate) fn unschedulable_events(
    previous: &CephOsdStatus,
    unschedulable: &[(&ObservedPod, String)],
) -> Vec<PlannedEvent> {
    unschedulable
        .iter()
        .filter(|(_, waiting)| !previous.unschedulable.contains(waiting))
        .map(|(pod, waiting)| PlannedEvent {
            warning: true,
            reason: EventReason::Unschedulable,
            note: format!("OSD {waiting}"),
            pod: Some(pod.name.clone()),
        })
        .collect()
}

/// One Warning per pod of another controller, when it is first seen (the status lists those
/// already told).
pub(crate) fn foreign_pod_events(
    previous: &CephOsdStatus,
    foreign: &[(&ObservedPod, String)],
) -> Vec<PlannedEvent> {
    foreign
        .iter()
        .filter(|(p, _)| !previous.foreign_pods.contains(&p.name))
        .map(|(p, controller)| PlannedEvent {
            warning: true,
            reason: EventReason::ForeignPod,
            note: format!(
                "pod {} carries this CephOSD's owner label but is controlled by {controller}: \
                     left alone, and no pod is created for its disk while it exists",
                p.describe()
            ),
            pod: Some(p.name.clone()),
        })
        .collect()
}

/// Events for state changes between the previous and the new status (so a steady state,
/// or a halt that persists, publishes nothing).
pub(crate) fn transition_events(
    previous: &CephOsdStatus,
    status: &CephOsdStatus,
) -> Vec<PlannedEvent> {
    let mut events = Vec::new();
    // InvalidSpec: when it turns True, or says something new while True.
    if let Some(now) = true_in(status, ConditionType::InvalidSpec) {
        let before = true_in(previous, ConditionType::InvalidSpec);
        if before.is_none_or(|b| b.message != now.message) {
            events.push(event(true, EventReason::InvalidSpec, &now.message));
        }
    }
    // Stalled: when it turns True.
    if let Some(now) = true_in(status, ConditionType::Stalled) {
        if true_in(previous, ConditionType::Stalled).is_none() {
            events.push(event(true, EventReason::Stalled, &now.message));
        }
    }
    // The Ceph gate: when Ceph newly blocks the next step, or for another reason.
    if let Some(now) = condition(status, ConditionType::CephGate)
        .filter(|c| c.status == "False" && !GATE_OFF_REASONS.contains(&c.reason.as_str()))
    {
        let before = condition(previous, ConditionType::CephGate);
        if before.is_none_or(|b| (&b.status, &b.reason) != (&now.status, &now.reason)) {
            events.push(event(true, EventReason::CephGate, &now.message));
        }
    }
    // A finalize refused: when its reason or words are new.
    if let Some(now) = condition(status, ConditionType::Finalized)
        .filter(|c| c.status == "False" && c.reason != ConditionReason::RaisingRelease.as_str())
    {
        let before = condition(previous, ConditionType::Finalized);
        if before.is_none_or(|b| (&b.reason, &b.message) != (&now.reason, &now.message)) {
            events.push(event(true, EventReason::Finalize, &now.message));
        }
    }
    // A halted or paused rollout: when the halt or its cause is new.
    let halts = [
        ConditionReason::Halted,
        ConditionReason::Paused,
        ConditionReason::Partitioned,
        ConditionReason::CanaryWaiting,
    ]
    .map(ConditionReason::as_str);
    if let Some(now) =
        condition(status, ConditionType::Progressing).filter(|c| halts.contains(&c.reason.as_str()))
    {
        let before = condition(previous, ConditionType::Progressing);
        if before.is_none_or(|b| (&b.reason, &b.message) != (&now.reason, &now.message)) {
            events.push(event(false, EventReason::Halted, &now.message));
        }
    }
    // A failed pre-pull or a step past its pull deadline: when new or said otherwise.
    let pre_pull_warnings = [
        ConditionReason::PullFailed,
        ConditionReason::PullDeadlineExceeded,
    ]
    .map(ConditionReason::as_str);
    if let Some(now) = condition(status, ConditionType::PrePull)
        .filter(|c| pre_pull_warnings.contains(&c.reason.as_str()))
    {
        let before = condition(previous, ConditionType::PrePull);
        if before.is_none_or(|b| (&b.reason, &b.message) != (&now.reason, &now.message)) {
            events.push(event(true, EventReason::PrePull, &now.message));
        }
    }
    // OSDs out that the operator did not mark out: when said anew.
    if let Some(now) = condition(status, ConditionType::OsdsIn)
        .filter(|c| c.status == "False" && c.message.contains(OTHERS_OUT))
    {
        let before = condition(previous, ConditionType::OsdsIn);
        if before.is_none_or(|b| b.message != now.message) {
            events.push(event(true, EventReason::OsdsOut, &now.message));
        }
    }
    events
}

/// How the `OsdsIn` condition names OSDs someone else marked out.
pub(crate) const OTHERS_OUT: &str = "not marked out by the operator";

/// `CephGate` reasons that say the gate is off, not that Ceph blocks.
const GATE_OFF_REASONS: [&str; 4] = [
    ConditionReason::NotConfigured.as_str(),
    ConditionReason::Skipped.as_str(),
    // Announced by their own events.
    ConditionReason::NooutExpired.as_str(),
    ConditionReason::StepLockLost.as_str(),
];

fn condition(status: &CephOsdStatus, type_: ConditionType) -> Option<&Condition> {
    status.conditions.iter().find(|c| c.type_ == type_.as_str())
}

fn true_in(status: &CephOsdStatus, type_: ConditionType) -> Option<&Condition> {
    condition(status, type_).filter(|c| c.status == "True")
}

/// An event about the CephOSD as a whole.
fn event(warning: bool, reason: EventReason, note: &str) -> PlannedEvent {
    PlannedEvent {
        warning,
        reason,
        note: note.to_owned(),
        pod: None,
    }
}

/// The `Stalled` event when `failed` (a status with a failed write) is stalled and `planned`
/// (the status the planner computed, whose events are published already) is not.
pub(crate) fn newly_stalled(
    planned: &CephOsdStatus,
    failed: &CephOsdStatus,
) -> Option<PlannedEvent> {
    let now = true_in(failed, ConditionType::Stalled)?;
    true_in(planned, ConditionType::Stalled)
        .is_none()
        .then(|| event(true, EventReason::Stalled, &now.message))
}

/// Human wording of a delete reason (logs and events).
pub(crate) fn describe(reason: &DeleteReason) -> String {
    match reason {
        DeleteReason::Invalid(why) => format!("invalid: {why}"),
        DeleteReason::Ended(phase) => format!("pod ended in phase {phase}"),
        DeleteReason::Superfluous => "its OSD is no longer in the CephOSD".to_owned(),
        DeleteReason::Replace => "rolling update: out of date".to_owned(),
    }
}

/// ` of OSD host:data`, or nothing for an object that names no OSD.
fn of_osd(key: Option<&OsdKey>) -> String {
    key.map(|k| format!(" of OSD {k}")).unwrap_or_default()
}

#[cfg(test)]
mod tests;
