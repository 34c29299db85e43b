//! A removal as Ceph expects it, pure: the OSDs of keys that left the spec are drained before
//! their pods stop. The step is recorded first, then its OSDs marked out (`osd out`); their
//! pods stop only once Ceph says no PG needs them and every PG is clean; no `noout` on an OSD
//! that is leaving. The step ends when their pods are gone: the OSDs stay down and out in
//! Ceph (purging them is an admin's act). A key back in the spec before its pod stopped leaves
//! the step, its OSDs marked in again (only those the operator marked out). A drain is a step
//! like a rollout's: one at a time, counted by `maxUnavailable` and the disruption budget.

use super::drain_end::DrainProgress;
use super::io::{GateAnswer, GateInput, GateOutcome, GateSubject};
use super::step_end::StepProgress;
use crate::ceph::{osd_list, OsdId};
use crate::crd::{CephStep, StepDrain};
use crate::plan::says::actions::Action;
use crate::plan::says::conditions::{ConditionReason, StatedCondition};
use crate::plan::says::events::{EventReason, PlannedEvent};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;
use std::collections::{BTreeMap, BTreeSet};

/// Look at an open drain at most this often: data moves for seconds to hours.
const DRAIN_LOOKS: SignedDuration = SignedDuration::from_secs(2);

const IDLE: &str = "Ceph is asked before each rollout step";

/// The subjects the next step is about, and whether it is a drain: when the first update
/// domain proposed has a leaving key, the leaving keys of the first domains that have one (a
/// removal drains before it stops, and no stop goes with it); else the keys of the first
/// domains without one.
pub(crate) fn next_subjects(proposed: &[GateSubject]) -> (Vec<GateSubject>, bool) {
    let mut domains: Vec<(&str, bool)> = Vec::new();
    for s in proposed {
        match domains.iter_mut().find(|(d, _)| *d == s.domain) {
            Some((_, leaving)) => *leaving |= s.leaving,
            None => domains.push((&s.domain, s.leaving)),
        }
    }
    let draining = domains.first().is_some_and(|(_, leaving)| *leaving);
    let taken: BTreeSet<&str> = domains
        .iter()
        .take_while(|(_, leaving)| *leaving == draining)
        .map(|(d, _)| *d)
        .collect();
    let subjects = proposed
        .iter()
        .filter(|s| taken.contains(s.domain.as_str()) && (s.leaving || !draining))
        .cloned()
        .collect();
    (subjects, draining)
}

fn says(holds: bool, reason: ConditionReason, message: String) -> StatedCondition {
    StatedCondition {
        holds,
        reason,
        message,
    }
}

fn ids_text(ids: impl IntoIterator<Item = u32>) -> String {
    osd_list(&ids.into_iter().map(OsdId).collect::<Vec<_>>())
}

/// Ceph let the drain of `subjects` (exactly their `ids`) start: the step is recorded, then
/// the ids still in are marked out; no pod goes yet. Without ids there is nothing to drain:
/// their pods go (and only theirs).
pub(crate) fn drain_started(
    input: &GateInput<'_>,
    answer: &GateAnswer,
    subjects: &[GateSubject],
    ids: &BTreeSet<OsdId>,
) -> GateOutcome {
    let keys: BTreeSet<String> = subjects.iter().map(|s| s.key.to_string()).collect();
    if ids.is_empty() {
        let message = format!(
            "nothing to drain for {}",
            keys.iter().cloned().collect::<Vec<_>>().join(", ")
        );
        let mut out = GateOutcome::new(says(true, ConditionReason::StepInProgress, message));
        out.deletions_allowed = true;
        out.allowed_keys = Some(keys);
        return out;
    }
    let by_key: BTreeMap<String, Vec<u32>> = (answer.keys.iter())
        .filter(|(key, _)| keys.contains(&key.to_string()))
        .map(|(key, ids)| (key.to_string(), ids.iter().map(|id| id.0).collect()))
        .collect();
    let to_mark: Vec<OsdId> = ids
        .iter()
        .filter(|id| !answer.out.contains(id))
        .copied()
        .collect();
    let keys_text = keys.iter().cloned().collect::<Vec<_>>().join(", ");
    let message = format!(
        "draining {} ({keys_text}), which left the spec, before their pods stop: marked out, \
         Ceph moves their data",
        osd_list(ids)
    );
    let mut out = GateOutcome::new(says(true, ConditionReason::StepInProgress, message.clone()));
    out.halted = Some(message);
    out.step = Some(CephStep {
        keys: keys.into_iter().collect(),
        osds: answer.step_osds(ids),
        noout: Vec::new(),
        started: Time(input.now),
        drain: Some(StepDrain {
            ids: by_key,
            marked_out: to_mark.iter().map(|id| id.0).collect(),
        }),
        domains: std::collections::BTreeMap::new(),
    });
    out.first.push(Action::RecordCephStep);
    if !to_mark.is_empty() {
        out.first.push(Action::MarkOut { ids: to_mark });
    }
    out.requeue_after = Some(input.view.look_every);
    out
}

/// A drain is open: keys back in the spec leave it (marked in again); it ends once its pods
/// are gone; its pods go once Ceph says its OSDs are safe to destroy; until then it says why.
pub(crate) fn drain_open(input: &GateInput<'_>, open: &CephStep, drain: &StepDrain) -> GateOutcome {
    let mut out = GateOutcome::new(says(true, ConditionReason::StepInProgress, String::new()));
    let mut step = open.clone();
    let returned: Vec<&String> = (open.keys.iter())
        .filter(|k| input.returned.contains(*k))
        .collect();
    if !returned.is_empty() {
        give_up_returned(&mut out, &mut step, input, &returned, drain);
    }
    let keys = step.keys.join(", ");
    let ids = ids_text(step.osds.iter().map(|o| o.id));
    if step.keys.is_empty() {
        out.condition = says(
            true,
            ConditionReason::CephIdle,
            format!("the drain was given up: its OSDs are back in the spec; {IDLE}"),
        );
        return out;
    }
    // Settled (no pod left) counts for the step as recorded: one that lost keys ends later.
    if input.settled && returned.is_empty() {
        out.condition = says(
            true,
            ConditionReason::CephIdle,
            format!("the drain of {keys} is done; {IDLE}"),
        );
        let replaced = (step.keys.iter()).all(|k| input.replacing.contains(k));
        let note = if replaced {
            format!(
                "{ids} ({keys}) drained and stopped for a disk replacement: destroyed next, \
                 keeping the id, its CRUSH place and weight (never purged)"
            )
        } else {
            format!(
                "{ids} ({keys}) drained and stopped: they stay down and out in Ceph; \
                 `ceph osd purge <id> --yes-i-really-mean-it` removes each (the operator never \
                 purges)"
            )
        };
        out.events.push(PlannedEvent {
            warning: false,
            reason: EventReason::Drain,
            note,
            pod: None,
        });
        return out;
    }
    out.step = Some(step.clone());
    out.requeue_after = Some(input.view.look_every.max(DRAIN_LOOKS));
    let progress = match &input.view.step {
        Some(StepProgress::Draining(progress)) => Some(progress),
        _ => None,
    };
    if progress == Some(&DrainProgress::Safe) {
        out.deletions_allowed = true;
        out.allowed_keys = Some(step.keys.iter().cloned().collect());
        out.condition.message = format!(
            "{ids} ({keys}) drained: {}; their pods stop",
            DrainProgress::Safe.describe()
        );
        return out;
    }
    let state = progress.map_or("Ceph was not looked at yet", DrainProgress::describe);
    // The rollout's halt stays the same while Ceph's numbers change (each new halt message is
    // an Event); the condition carries the numbers.
    out.halted = Some(format!(
        "draining {ids} ({keys}) before their pods stop (see the CephGate condition)"
    ));
    out.condition.message = format!("draining {ids} ({keys}) before their pods stop: {state}");
    match progress {
        Some(DrainProgress::Stuck { .. }) => {
            out.condition.holds = false;
            out.condition.reason = ConditionReason::CephBlocked("CephDrainBlocked");
        }
        Some(DrainProgress::NoAnswer { .. }) => {
            out.condition.holds = false;
            out.condition.reason = ConditionReason::CephBlocked("CephUnavailable");
        }
        _ => {}
    }
    out
}

/// Keys `returned` to the spec leave the drain `step`: their OSDs marked out by it are marked
/// in again, said in an Event.
fn give_up_returned(
    out: &mut GateOutcome,
    step: &mut CephStep,
    input: &GateInput<'_>,
    returned: &[&String],
    drain: &StepDrain,
) {
    let back: BTreeSet<u32> = (returned.iter())
        .filter_map(|k| drain.ids.get(*k))
        .flatten()
        .copied()
        .collect();
    let mark_in: Vec<OsdId> = (drain.marked_out.iter())
        .filter(|id| back.contains(id))
        .map(|&id| OsdId(id))
        .collect();
    let keys = returned.iter().map(|k| k.as_str()).collect::<Vec<_>>();
    let mut note = format!(
        "{} back in the spec before its pod stopped: its drain is given up",
        keys.join(", ")
    );
    if !mark_in.is_empty() {
        note.push_str(&format!("; {} marked in again", osd_list(&mark_in)));
        out.first.push(Action::MarkIn { ids: mark_in });
    }
    out.events.push(PlannedEvent {
        warning: false,
        reason: EventReason::Drain,
        note,
        pod: None,
    });
    step.keys.retain(|k| !input.returned.contains(k));
    step.osds.retain(|o| !back.contains(&o.id));
    if let Some(drain) = &mut step.drain {
        drain.ids.retain(|k, _| !input.returned.contains(k));
        drain.marked_out.retain(|id| !back.contains(id));
    }
}

#[cfg(test)]
mod tests;
