//! Which Kubernetes Event tells about which action: pure wording, published by the executor.

use crate::osd::OsdKey;
use crate::plan::{Action, CreateReason, DeleteReason, PlannedEvent};

/// The event for a successfully applied action, if it deserves one.
pub fn event_for(action: &Action) -> Option<PlannedEvent> {
    match action {
        Action::Create { key, pod, reason } => {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let (reason, note) = match reason {
                CreateReason::New => ("Created", format!("created pod {name} for OSD {key}")),
                CreateReason::Replacement => (
                    "Created",
                    format!("created replacement pod {name} for OSD {key}; waiting for it to become Ready"),
                ),
                CreateReason::Recreate => (
                    "Recreated",
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
                    "Replacing",
                    format!("deleting out-of-date pod {name}{osd}; its successor starts once it is gone"),
                ),
                other => ("Deleted", format!("deleted pod {name}{osd}: {}", describe(other))),
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
                    "Migrating",
                    format!(
                        "deleting ReplicaSet {name}{osd} (made by the Ansible operator) with its pod; \
                         the OSD's own pod starts once that pod is gone"
                    ),
                ),
                other => (
                    "Deleted",
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
        // pod-state bookkeeping is visible in status counts; an event each would be noise.
        Action::PatchState { .. } => None,
    }
}

/// Human wording of a delete reason (logs and events).
pub fn describe(reason: &DeleteReason) -> String {
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
