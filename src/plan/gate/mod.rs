//! The Ceph gate's rules, pure: whether the rollout step the planner chose may take its pods
//! down now, given what the runtime learnt of Ceph (`CephView`). A step starts only on Ceph's
//! `Proceed` for exactly its OSD keys: the step is recorded in the status first, then `noout`
//! set on its OSDs, then its pods deleted. While a step is open nothing more is taken down;
//! it ends when Ceph reports it done and its replacements are Ready, and `noout` is cleared.
//! Creations of missing pods and deletions of duplicate, invalid or ended pods are never gated.
//!
//! Every verdict on Ceph's answers lives here: the runtime only asks Ceph and hands back what
//! it answered. `verdict` reads a look and an `ok-to-stop` answer as Proceed / Wait / Halt,
//! `asking` says which update domains are asked about together and when `ok-to-stop` must
//! confirm a precheck, `conversation` strings them into the questions the runtime asks next,
//! `step_end` and `drain_end` say when an open step or drain is over, `crashes` when a new
//! daemon's crash halts the rollout,
//! `drain` holds the rules of removals, `stated_ids` reads an admin's `osd-ids` annotation,
//! `io` the gate's input and outcome as data.

mod asking;
pub(crate) mod conversation;
pub(crate) mod crashes;
pub(crate) mod drain;
mod drain_end;
mod io;
pub(crate) mod placement;
pub(crate) mod release;
mod stated_ids;
mod step_end;
mod verdict;

use asking::is_part_of_a_domain;
pub(crate) use asking::step_sets;
pub use drain_end::{
    asks_safe_to_destroy, confirmed, judge_drain, DrainProgress, DRAIN_CONFIRM_GAP,
};
#[cfg(test)]
pub(crate) use io::RefusedWhole;
pub(crate) use io::{
    CephInput, CephView, GateAnswer, GateCondition, GateInput, GateOff, GateOutcome, GateSubject,
    DEFAULT_MAX_NOOUT, QUICK_LOOKS, SLOW_LOOKS,
};
pub(crate) use stated_ids::read_stated_ids;
pub(crate) use step_end::not_booted;
pub use step_end::{StepProgress, StepWatch, DEFAULT_PG_STATS_LAG};
pub use verdict::{confirm, precheck, Blocker, GateDecision, Severity};

use crate::ceph::{osd_list, OsdId};
use crate::crd::osd::OsdKey;
use crate::crd::CephStep;
use crate::plan::says::actions::Action;
use crate::plan::says::conditions::ConditionReason;
use crate::plan::says::events::{EventReason, PlannedEvent};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;
use std::collections::{BTreeMap, BTreeSet};

/// Look again this soon while Ceph says wait.
const WAIT_REQUEUE: SignedDuration = SignedDuration::from_secs(2);
/// A step none of whose pods went down for this long is given up (its deletions failed or
/// never ran) and asked about again: an old answer never takes pods down.
const UNTOUCHED_STEP_LIMIT: SignedDuration = SignedDuration::from_secs(30);

fn says(holds: bool, reason: ConditionReason, message: impl Into<String>) -> GateCondition {
    GateCondition {
        holds,
        reason,
        message: message.into(),
    }
}

fn ids_of(ids: &[u32]) -> Vec<OsdId> {
    ids.iter().copied().map(OsdId).collect()
}

fn list(ids: &[u32]) -> String {
    osd_list(&ids_of(ids))
}

const IDLE: &str = "Ceph is asked before each rollout step";

/// The gate's rules, in order: off; a step open (and, when it ends, the next one asked about
/// in the same plan); a proposal; nothing to gate.
pub(crate) fn gate(input: &GateInput<'_>) -> GateOutcome {
    let off = match &input.view.input {
        CephInput::Off { why } => Some(*why),
        _ if input.skipped => Some(GateOff::Skipped),
        _ => None,
    };
    if let Some(why) = off {
        return gate_off(why, input.open);
    }
    if let Some(open) = input.open {
        let mut ended = match &open.drain {
            Some(drain) => drain::drain_open(input, open, drain),
            None => step_open(input, open),
        };
        say_lock_lost(input, open, &mut ended);
        if ended.step.is_some() || input.proposed.is_empty() {
            return ended;
        }
        return next_step(input, open, ended);
    }
    if input.proposed.is_empty() {
        return GateOutcome::new(says(true, ConditionReason::CephIdle, IDLE));
    }
    proposal(input)
}

/// The step `ended` and the rollout has more: the next step is asked about at once (the
/// ended step's `noout` is not asked about with it: `asked_together`). When it starts, the
/// ended step's `noout` is cleared after its deletions, in an osdmap epoch of its own (the
/// mon commits each command in a proposal of its own, up to a second: not on the way to the
/// next stop; an OSD of both steps keeps its flag), and its record keeps those ids until it
/// ends (a new leader then clears those a look still shows flagged); without a next step
/// the ended one's `noout` is cleared alone, first.
fn next_step(input: &GateInput<'_>, ended: &CephStep, closing: GateOutcome) -> GateOutcome {
    let mut next = proposal(input);
    let setting = next.first.iter().find_map(|a| match a {
        Action::SetNoout { ids, .. } => Some(ids.clone()),
        _ => None,
    });
    match (setting, &mut next.step) {
        (Some(setting), Some(step)) if !ended.noout.is_empty() => {
            // An OSD of both steps (a step given up and asked again) keeps its noout.
            let taken_over: Vec<OsdId> = still_flagged(input.view, &ended.noout)
                .into_iter()
                .filter(|id| !setting.contains(id))
                .collect();
            if !taken_over.is_empty() {
                next.last.push(Action::ClearNoout { ids: taken_over });
            }
            step.noout.extend(&ended.noout);
            step.noout.sort_unstable();
            step.noout.dedup();
        }
        _ => next.first = [closing.first, next.first].concat(),
    }
    next.events = [closing.events, next.events].concat();
    next
}

/// Off: as without Ceph. A step left open is cleared when the CephOSD opts out (the operator
/// can still reach Ceph) and kept, said, when the operator has no Ceph to clear its `noout`.
fn gate_off(why: GateOff, open: Option<&CephStep>) -> GateOutcome {
    let (reason, message) = match why {
        GateOff::NotConfigured => (
            ConditionReason::NotConfigured,
            "the operator has no Ceph configured (--ceph-conf): rollout steps do not ask Ceph",
        ),
        GateOff::Skipped => (
            ConditionReason::Skipped,
            "spec.cephGate is Skipped: rollout steps of this CephOSD do not ask Ceph",
        ),
    };
    let mut out = GateOutcome::new(says(false, reason, message));
    out.deletions_allowed = true;
    match (why, open) {
        (GateOff::Skipped, Some(open)) if !open.noout.is_empty() => {
            out.first.push(Action::ClearNoout {
                ids: ids_of(&open.noout),
            });
        }
        (GateOff::NotConfigured, Some(open)) => {
            out.step = Some(open.clone());
            if !open.noout.is_empty() {
                out.condition.message = format!(
                    "{message}; noout is still set on {} by a step under way: clear it with \
                     `ceph osd rm-noout` once those OSDs are up",
                    list(&open.noout)
                );
            }
        }
        _ => {}
    }
    out
}

/// A step is open: nothing more goes down. It ends when Ceph says done and its replacements
/// are Ready; `noout` is cleared past `max_noout`; a step none of whose pods went down is
/// given up after a while.
fn step_open(input: &GateInput<'_>, open: &CephStep) -> GateOutcome {
    let keys = open.keys.join(", ");
    let mut out = GateOutcome::new(says(
        true,
        ConditionReason::StepInProgress,
        format!("a step is under way on {keys}"),
    ));
    out.requeue_after = Some(input.view.look_every);
    out.step = Some(open.clone());
    let held = input.now.duration_since(open.started.0);
    let done = input.view.step == Some(StepProgress::Done);
    if done && input.settled || input.untouched && held >= UNTOUCHED_STEP_LIMIT {
        let flagged = still_flagged(input.view, &open.noout);
        if !flagged.is_empty() {
            out.first.push(Action::ClearNoout { ids: flagged });
        }
        out.step = None;
        out.requeue_after = None;
        let ended = if done {
            format!("the step on {keys} is done")
        } else {
            format!(
                "no pod of the step on {keys} went down within {}s: it was given up",
                UNTOUCHED_STEP_LIMIT.as_secs()
            )
        };
        out.condition = says(true, ConditionReason::CephIdle, format!("{ended}; {IDLE}"));
        return out;
    }
    let state = match &input.view.step {
        _ if done => "Ceph is done, its replacements are not Ready yet".to_owned(),
        Some(progress) => describe_progress(progress),
        None => "Ceph was not looked at yet".to_owned(),
    };
    out.halted = Some(format!("the step on {keys} has not ended: {state}"));
    out.condition.message = format!("a step is under way on {keys}: {state}");
    if let Some(redone) = replaced_within_the_step(input, open) {
        out.deletions_allowed = true;
        out.condition.message.push_str(&format!(
            "; its pods are replaced on the new template ({}): none of its OSDs came back",
            redone.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
        out.allowed_keys = Some(redone);
    }
    // Ceph away, or an OSD down besides the step's: the step cannot end by itself.
    if let Some(StepProgress::Recovering { blockers }) = &input.view.step {
        let category = blockers.first().map(Blocker::category);
        if let Some(category @ ("CephUnavailable" | "CephOsdDown")) = category {
            out.condition.holds = false;
            out.condition.reason = ConditionReason::CephBlocked(category);
        }
    }
    if held >= input.view.max_noout {
        noout_past_its_limit(&mut out, input, open, held, &state);
    }
    out
}

/// The open step's own keys proposed again (the template changed while the step was open)
/// while none of the step's OSDs booted: an image whose OSD cannot start, fixed. Their pods
/// run no OSD, so replacing them takes nothing more down; the step's answer and its `noout`
/// cover them. Once any OSD of the step is up, a new template waits for the step to end.
fn replaced_within_the_step(input: &GateInput<'_>, open: &CephStep) -> Option<BTreeSet<String>> {
    let Some(StepProgress::Booting { pending }) = &input.view.step else {
        return None;
    };
    let none_booted = (open.osds.iter()).all(|o| pending.contains(&OsdId(o.id)));
    let keys: BTreeSet<String> = input.proposed.iter().map(|s| s.key.to_string()).collect();
    let own = !keys.is_empty() && keys.iter().all(|k| open.keys.contains(k));
    (none_booted && !open.osds.is_empty() && own).then_some(keys)
}

/// An open step held longer than `max_noout`: its `noout` is cleared so Ceph re-replicates
/// (said once in a Warning), and the condition says so until the step ends.
fn noout_past_its_limit(
    out: &mut GateOutcome,
    input: &GateInput<'_>,
    open: &CephStep,
    held: SignedDuration,
    state: &str,
) {
    let keys = open.keys.join(", ");
    if !open.noout.is_empty() {
        out.first.push(Action::ClearNoout {
            ids: ids_of(&open.noout),
        });
        let note = format!(
            "noout on {} was held {}s, longer than the {}s allowed: cleared so Ceph \
             re-replicates; the rollout stays halted until the step ends",
            list(&open.noout),
            held.as_secs(),
            input.view.max_noout.as_secs()
        );
        out.events.push(PlannedEvent {
            warning: true,
            reason: EventReason::NooutExpired,
            note: note.clone(),
            pod: None,
        });
        if let Some(step) = &mut out.step {
            step.noout.clear();
        }
        out.condition = says(false, ConditionReason::NooutExpired, note);
    } else if !open.osds.is_empty() {
        // Cleared by the limit before (a step's OSDs always get noout): still said.
        let ids: Vec<u32> = open.osds.iter().map(|o| o.id).collect();
        out.condition = says(
            false,
            ConditionReason::NooutExpired,
            format!(
                "noout on {} was cleared after the {}s allowed; the rollout stays halted until \
                 the step on {keys} ends: {state}",
                list(&ids),
                input.view.max_noout.as_secs()
            ),
        );
    }
}

/// The open step's lock was found deleted or another's: said in a Warning event and, while
/// the step stays open, the condition. The step goes on: its OSDs stay guarded by their
/// `noout`, which every other step's question on this Ceph cluster covers
/// (`asked_together`), and the runtime takes the lock back once it is free.
fn say_lock_lost(input: &GateInput<'_>, open: &CephStep, out: &mut GateOutcome) {
    let Some(lost) = &input.view.lock_lost else {
        return;
    };
    let keys = open.keys.join(", ");
    let guard = if open.noout.is_empty() {
        "it carries no noout of its own: other steps are kept from it by Ceph's own view of \
         its OSDs"
            .to_owned()
    } else {
        format!(
            "its OSDs stay guarded by their noout ({}): every other step on this Ceph cluster \
             is asked about together with them",
            list(&open.noout)
        )
    };
    let note = format!(
        "the step on {keys} lost the Ceph cluster's step lock: {lost}; {guard}; the lock is \
         taken back when free"
    );
    out.events.push(PlannedEvent {
        warning: true,
        reason: EventReason::StepLockLost,
        note: note.clone(),
        pod: None,
    });
    if out.step.is_some() {
        out.condition = says(false, ConditionReason::StepLockLost, note);
    }
}

/// Of `ids` (a step's `noout`), those to clear: all of them, but those the last look showed
/// without the flag (cleared already: at the hand-over to the next step, or by an admin).
fn still_flagged(view: &CephView, ids: &[u32]) -> Vec<OsdId> {
    ids_of(ids)
        .into_iter()
        .filter(|id| view.noout_now.as_ref().is_none_or(|now| now.contains(id)))
        .collect()
}

/// What Ceph still lacks for the step to end.
fn describe_progress(progress: &StepProgress) -> String {
    match progress {
        StepProgress::Booting { pending } => {
            format!("the new daemon of {} is not up yet", osd_list(pending))
        }
        StepProgress::Recovering { blockers } => blockers
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
        StepProgress::Confirming {
            clean_looks,
            wait_at_least,
        } => format!(
            "every PG active+clean in {clean_looks} look(s), confirming for at least {} ms more",
            wait_at_least.as_millis()
        ),
        StepProgress::Done => "nothing".to_owned(),
        StepProgress::Draining(drain) => drain.describe().to_owned(),
    }
}

/// A proposal's outcome, with a Warning event for each unreadable `osd-ids` annotation Ceph's
/// answer met.
fn proposal(input: &GateInput<'_>) -> GateOutcome {
    let mut out = proposal_outcome(input);
    if let CephInput::Answered(answer) = &input.view.input {
        out.events.extend(
            answer
                .unreadable_statements
                .iter()
                .map(|(pod, value)| PlannedEvent {
                    warning: true,
                    reason: EventReason::CephGate,
                    note: format!(
                    "pod {pod}: its {} annotation {value:?} is not a list of OSD ids (\"3,7\"): \
                     ignored",
                    crate::labels::OSD_IDS
                ),
                    pod: Some(pod.clone()),
                }),
        );
    }
    out
}

/// No step open and the rollout chose deletions: they go only on Ceph's `Proceed` for
/// exactly their keys, or for the keys of their first update domains (Ceph refused the
/// whole set: the runtime asked about fewer domains). Leaving keys are drained first, in a
/// step of their own (`drain`).
fn proposal_outcome(input: &GateInput<'_>) -> GateOutcome {
    let (proposed, draining) = drain::next_subjects(input.proposed);
    let proposed = proposed.as_slice();
    let verb = if draining { "be drained" } else { "stop" };
    if let Some(crash) = input.crashed.filter(|_| !draining) {
        // Nothing is asked: no further update domain stops.
        let message = crash.to_string();
        let mut out = GateOutcome::new(says(
            false,
            ConditionReason::CephBlocked("OsdCrashed"),
            message.clone(),
        ));
        out.halted = Some(message);
        out.requeue_after = Some(crashes::CRASH_LOOKS);
        return out;
    }
    let answer = match &input.view.input {
        CephInput::Answered(answer) => Some(answer),
        _ => None,
    };
    let answered = answer.and_then(|answer| {
        let keys: BTreeSet<&OsdKey> = answer.keys.keys().collect();
        step_sets(proposed)
            .into_iter()
            .find(|prefix| prefix.iter().map(|s| &s.key).collect::<BTreeSet<_>>() == keys)
    });
    let subjects = answered.as_deref().unwrap_or(proposed);
    let asked: BTreeSet<&OsdKey> = subjects.iter().map(|s| &s.key).collect();
    let keys_text = (asked.iter().map(ToString::to_string))
        .collect::<Vec<_>>()
        .join(", ");
    let Some(answer) = answer.filter(|_| answered.is_some()) else {
        let asking = format!("asking Ceph whether {keys_text} may {verb}");
        let mut out = GateOutcome::new(says(true, ConditionReason::Asking, asking.clone()));
        out.question = Some(proposed.to_vec());
        out.halted = Some(asking);
        out.requeue_after = Some(input.view.look_every);
        return out;
    };
    match &answer.decision {
        GateDecision::Proceed { ids } if draining => {
            drain::drain_started(input, answer, subjects, ids)
        }
        GateDecision::Proceed { ids } => {
            let step = Answered {
                subjects,
                proposed,
                asked: &asked,
                keys_text: &keys_text,
            };
            proceed(input, answer, &step, ids)
        }
        GateDecision::Wait { blockers } | GateDecision::Halt { blockers } => {
            refused(answer, blockers, &keys_text, verb)
        }
    }
}

/// The step Ceph answered for: the subjects asked about (all proposed, or the first update
/// domains of them), their keys, and those keys in words.
struct Answered<'s> {
    subjects: &'s [GateSubject],
    proposed: &'s [GateSubject],
    asked: &'s BTreeSet<&'s OsdKey>,
    keys_text: &'s str,
}

/// Ceph's `Proceed` on `step`: its deletions go, trimmed to the part of a failure domain or to
/// the domains Ceph allows, and the step opens on the OSD ids it stops.
fn proceed(
    input: &GateInput<'_>,
    answer: &GateAnswer,
    step: &Answered<'_>,
    ids: &BTreeSet<OsdId>,
) -> GateOutcome {
    let mut said = format!(
        "Ceph says {} may stop ({}{})",
        step.keys_text,
        answer.decision,
        asked_with_note(answer)
    );
    let mut out = GateOutcome::new(says(true, ConditionReason::StepInProgress, ""));
    out.deletions_allowed = true;
    if is_part_of_a_domain(step.subjects, step.proposed) {
        // Ceph refused the whole failure domain: the step is the part it allows.
        out.allowed_keys = Some(step.asked.iter().map(ToString::to_string).collect());
        if let Some(refused) = &answer.refused_whole {
            said = format!(
                "Ceph does not let all of {} stop at once ({}); the step is the part it \
                 allows: {said}",
                refused.domain, refused.decision
            );
            // The condition says it only until the step's next look: an event keeps it.
            out.events.push(PlannedEvent {
                warning: false,
                reason: EventReason::CephGate,
                note: said.clone(),
                pod: None,
            });
        }
    } else if step.subjects.len() < input.proposed.len() {
        out.allowed_domains = Some(step.subjects.iter().map(|s| s.domain.clone()).collect());
    }
    out.condition.message = said;
    if ids.is_empty() {
        return out;
    }
    let keys = step.asked.iter().map(ToString::to_string).collect();
    open_step(&mut out, input, answer, ids, keys);
    out.requeue_after = Some(input.view.look_every);
    out
}

/// Ceph's `Wait` or `Halt`: nothing goes; a wait is asked again soon.
fn refused(answer: &GateAnswer, blockers: &[Blocker], keys_text: &str, verb: &str) -> GateOutcome {
    let reason = blockers
        .first()
        .map_or("CephUnavailable", Blocker::category);
    let message = match blockers.first() {
        // Another CephOSD's step: waiting for the cluster, not refused by Ceph.
        Some(
            b @ (Blocker::ClusterBusy { .. }
            | Blocker::ClusterLockFailed { .. }
            | Blocker::LockPlaceDiffers { .. }),
        ) => {
            format!("{keys_text} waits for the Ceph cluster: {b}")
        }
        _ => format!(
            "Ceph does not let {keys_text} {verb}: {}{}",
            answer.decision,
            asked_with_note(answer)
        ),
    };
    let mut out = GateOutcome::new(says(
        false,
        ConditionReason::CephBlocked(reason),
        message.clone(),
    ));
    out.halted = Some(message);
    if matches!(answer.decision, GateDecision::Wait { .. }) {
        out.requeue_after = Some(WAIT_REQUEUE);
    }
    out
}

/// `; asked together with osd.3, which carries noout: …` when the question covered OSDs
/// outside the step (`asked_together`).
fn asked_with_note(answer: &GateAnswer) -> String {
    if answer.asked_with.is_empty() {
        return String::new();
    }
    let ids: Vec<OsdId> = answer.asked_with.iter().copied().collect();
    let carry = if ids.len() == 1 { "carries" } else { "carry" };
    format!(
        "; asked together with {}, which {carry} noout: another step on this Ceph cluster, \
         or an admin's",
        osd_list(&ids)
    )
}

/// The step Ceph let go: recorded first, then `noout` on its OSDs that had none (an OSD whose
/// `noout` someone else set keeps it, said in an event), then its pods go.
fn open_step(
    out: &mut GateOutcome,
    input: &GateInput<'_>,
    answer: &GateAnswer,
    ids: &BTreeSet<OsdId>,
    keys: Vec<String>,
) {
    let (noout, admins) = own_noout(ids, &answer.noout_before, input.open);
    out.step = Some(CephStep {
        keys,
        osds: answer.step_osds(ids),
        noout,
        started: Time(input.now),
        drain: None,
        domains: std::collections::BTreeMap::new(),
    });
    out.first = vec![Action::RecordCephStep];
    if let Some(step) = out.step.as_ref().filter(|s| !s.noout.is_empty()) {
        let own_ended = input.open.map_or(&[][..], |o| &o.noout[..]);
        let covered: BTreeSet<OsdId> = (ids.iter().chain(&answer.asked_with).copied())
            .chain(ids_of(own_ended))
            .collect();
        out.first.push(Action::SetNoout {
            ids: ids_of(&step.noout),
            covered: covered.into_iter().collect(),
        });
    }
    if !admins.is_empty() {
        out.events.push(PlannedEvent {
            warning: false,
            reason: EventReason::Noout,
            note: format!(
                "noout on {} was set before this step, not by the operator: it stays \
                 set when the step ends",
                list(&admins)
            ),
            pod: None,
        });
    }
}

/// Of the ids a step stops, those whose `noout` the step sets (or keeps from the step before
/// it, which set it), and those whose `noout` someone else set before: only the first are
/// cleared when the step ends.
fn own_noout(
    ids: &BTreeSet<OsdId>,
    set_before: &BTreeSet<OsdId>,
    open: Option<&CephStep>,
) -> (Vec<u32>, Vec<u32>) {
    let ours_before = open.map_or(&[][..], |o| &o.noout[..]);
    ids.iter()
        .map(|id| id.0)
        .partition(|id| !set_before.contains(&OsdId(*id)) || ours_before.contains(id))
}

/// `previous` with what was learnt (each key's ids replaced by the newly learnt ones), kept
/// only for `keep` (the keys the operator still runs or lists).
pub(crate) fn osd_ids(
    previous: &BTreeMap<String, Vec<u32>>,
    learned: &BTreeMap<OsdKey, BTreeSet<OsdId>>,
    keep: &BTreeSet<String>,
) -> BTreeMap<String, Vec<u32>> {
    let mut ids = previous.clone();
    for (key, learnt) in learned {
        ids.insert(key.to_string(), learnt.iter().map(|id| id.0).collect());
    }
    ids.retain(|key, ids| keep.contains(key) && !ids.is_empty());
    ids
}

#[cfg(test)]
mod tests;
