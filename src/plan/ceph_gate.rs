//! The Ceph gate's rules, pure: whether the rollout step the planner chose may take its pods
//! down now, given what the runtime learnt of Ceph (`CephView`). A step starts only on Ceph's
//! `Proceed` for exactly its OSD keys: the step is recorded in the status first, then `noout`
//! set on its OSDs, then its pods deleted. While a step is open nothing more is taken down;
//! it ends when Ceph reports it done and its replacements are Ready, and `noout` is cleared.
//! Creations of missing pods and deletions of duplicate, invalid or ended pods are never gated.

use crate::ceph::{osd_list, Blocker, GateDecision, OsdId, StepProgress};
use crate::crd::osd::OsdKey;
use crate::crd::{CephStep, StepOsd};
use crate::plan::actions::Action;
use crate::plan::conditions::ConditionReason;
use crate::plan::events::{EventReason, PlannedEvent};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// Default of `CephView::max_noout`: past it `noout` is cleared so Ceph re-replicates.
pub(crate) const DEFAULT_MAX_NOOUT: SignedDuration = SignedDuration::from_secs(30 * 60);

/// Default of `CephView::look_every`: when each question starts a `ceph` process.
pub(crate) const SLOW_LOOKS: SignedDuration = SignedDuration::from_secs(1);
/// `CephView::look_every` over a long-lived connection (a look costs a few milliseconds).
pub(crate) const QUICK_LOOKS: SignedDuration = SignedDuration::from_millis(250);
/// Look again this soon while Ceph says wait.
const WAIT_REQUEUE: SignedDuration = SignedDuration::from_secs(2);
/// A step none of whose pods went down for this long is given up (its deletions failed or
/// never ran) and asked about again: an old answer never takes pods down.
const UNTOUCHED_STEP_LIMIT: SignedDuration = SignedDuration::from_secs(30);

/// Why the gate is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateOff {
    /// The operator has no Ceph configured (`--ceph-conf`).
    NotConfigured,
    /// The CephOSD opts out (`spec.cephGate: Skipped`).
    Skipped,
}

/// What the runtime learnt of Ceph for this plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CephInput {
    Off {
        why: GateOff,
    },
    /// The gate is on; Ceph was not asked in this reconcile.
    NotAsked,
    /// Ceph's answer for the keys the planner proposed.
    Answered(GateAnswer),
}

/// The gate's answer for one proposal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateAnswer {
    /// The keys asked about, each with the ids it was mapped to (empty: unknown).
    pub keys: BTreeMap<OsdKey, BTreeSet<OsdId>>,
    pub decision: GateDecision,
    /// `up_from` of each id before the stop.
    pub up_from: BTreeMap<OsdId, u64>,
    /// Ids learnt from up daemons' metadata, for every key the operator runs.
    pub learned: BTreeMap<OsdKey, BTreeSet<OsdId>>,
}

/// The planner's view of Ceph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CephView {
    pub input: CephInput,
    /// Where the open step stands (`status.cephStep`), when Ceph was looked at.
    pub step: Option<StepProgress>,
    /// How long `noout` may be held.
    pub max_noout: SignedDuration,
    /// Look at Ceph again this soon while a step is open or a question waits (Ceph's changes
    /// trigger no watch).
    pub look_every: SignedDuration,
    /// Why Ceph's PGs are not all clean (or Ceph could not tell), when it was looked at for
    /// the disruption budget: the budget admits no drain then.
    pub pgs_unclean: Option<String>,
}

impl Default for CephView {
    fn default() -> Self {
        Self {
            input: CephInput::Off {
                why: GateOff::NotConfigured,
            },
            step: None,
            max_noout: DEFAULT_MAX_NOOUT,
            look_every: SLOW_LOOKS,
            pgs_unclean: None,
        }
    }
}

/// A key whose pods the rollout would take down, its pod (if one runs) and its update domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateSubject {
    pub key: OsdKey,
    pub pod: Option<String>,
    pub domain: String,
}

/// The subjects of the first `n` update domains of `proposed` (in the order they come), for
/// each `n` from all of them down to one: the sets Ceph may be asked about, largest first.
pub(crate) fn domain_prefixes(proposed: &[GateSubject]) -> Vec<Vec<GateSubject>> {
    let mut domains: Vec<&str> = Vec::new();
    for s in proposed {
        if !domains.contains(&s.domain.as_str()) {
            domains.push(&s.domain);
        }
    }
    (1..=domains.len())
        .rev()
        .map(|n| {
            let within = &domains[..n];
            proposed
                .iter()
                .filter(|s| within.contains(&s.domain.as_str()))
                .cloned()
                .collect()
        })
        .collect()
}

/// The `CephGate` condition.
pub(crate) type GateCondition = crate::plan::conditions::StatedCondition;

/// What the gate is given.
pub(crate) struct GateInput<'a> {
    pub view: &'a CephView,
    /// `spec.cephGate: Skipped`.
    pub skipped: bool,
    /// The open step (`status.cephStep`).
    pub open: Option<&'a CephStep>,
    /// The keys of the deletions the rollout chose, in order.
    pub proposed: &'a [GateSubject],
    /// The open step's keys all have their replacements Ready (and soaked), or are gone.
    pub settled: bool,
    /// None of the open step's pods was taken down.
    pub untouched: bool,
    pub now: Timestamp,
}

/// What the gate makes of the plan.
#[derive(Debug)]
pub(crate) struct GateOutcome {
    /// Actions before all others.
    pub first: Vec<Action>,
    /// Actions after all others: the `noout` of a step that ended, cleared once the next
    /// step's pods are on their way down (it holds nothing up).
    pub last: Vec<Action>,
    /// Whether the rollout's deletions go ahead (after `first`).
    pub deletions_allowed: bool,
    /// Only these update domains' deletions go ahead (Ceph allowed the first of several
    /// domains proposed together); None: all of them.
    pub allowed_domains: Option<BTreeSet<String>>,
    /// `status.cephStep` after this plan.
    pub step: Option<CephStep>,
    /// Keys to ask Ceph about before planning again.
    pub question: Option<Vec<GateSubject>>,
    /// Why the rollout does not move, if the gate holds it.
    pub halted: Option<String>,
    pub condition: GateCondition,
    pub events: Vec<PlannedEvent>,
    pub requeue_after: Option<SignedDuration>,
}

impl GateOutcome {
    fn new(condition: GateCondition) -> Self {
        Self {
            first: Vec::new(),
            last: Vec::new(),
            deletions_allowed: false,
            allowed_domains: None,
            step: None,
            question: None,
            halted: None,
            condition,
            events: Vec::new(),
            requeue_after: None,
        }
    }
}

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
        let ended = step_open(input, open);
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

/// The step `ended` and the rollout has more: the next step is asked about at once. When it
/// starts, the ended step's `noout` is cleared after its deletions (the mon commits each
/// change in a proposal, up to a second: not on the way to the next stop), and its record
/// keeps those ids until it ends (a new leader then clears them again: clearing is
/// idempotent); without a next step the ended one's `noout` is cleared alone, first.
fn next_step(input: &GateInput<'_>, ended: &CephStep, closing: GateOutcome) -> GateOutcome {
    let mut next = proposal(input);
    let setting = next.first.iter().find_map(|a| match a {
        Action::SetNoout { ids } => Some(ids.clone()),
        _ => None,
    });
    match (setting, &mut next.step) {
        (Some(setting), Some(step)) if !ended.noout.is_empty() => {
            // An OSD of both steps (a step given up and asked again) keeps its noout.
            let taken_over: Vec<OsdId> = ids_of(&ended.noout)
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
        if !open.noout.is_empty() {
            out.first.push(Action::ClearNoout {
                ids: ids_of(&open.noout),
            });
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
    // Ceph away, or an OSD down besides the step's: the step cannot end by itself.
    if let Some(StepProgress::Recovering { blockers }) = &input.view.step {
        let category = blockers.first().map(Blocker::category);
        if let Some(category @ ("CephUnavailable" | "CephOsdDown")) = category {
            out.condition.holds = false;
            out.condition.reason = ConditionReason::CephBlocked(category);
        }
    }
    if !open.noout.is_empty() && held >= input.view.max_noout {
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
    } else if open.noout.is_empty() && !open.osds.is_empty() && held >= input.view.max_noout {
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
    out
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
    }
}

/// No step open and the rollout chose deletions: they go only on Ceph's `Proceed` for
/// exactly their keys, or for the keys of their first update domains (Ceph refused the
/// whole set: the runtime asked about fewer domains).
fn proposal(input: &GateInput<'_>) -> GateOutcome {
    let answered = match &input.view.input {
        CephInput::Answered(answer) => {
            let keys: BTreeSet<&OsdKey> = answer.keys.keys().collect();
            domain_prefixes(input.proposed)
                .into_iter()
                .find(|prefix| prefix.iter().map(|s| &s.key).collect::<BTreeSet<_>>() == keys)
        }
        _ => None,
    };
    let subjects = answered.as_deref().unwrap_or(input.proposed);
    let asked: BTreeSet<&OsdKey> = subjects.iter().map(|s| &s.key).collect();
    let keys_text = || {
        asked
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let answer = match &input.view.input {
        CephInput::Answered(answer) if answered.is_some() => answer,
        _ => {
            let mut out = GateOutcome::new(says(
                true,
                ConditionReason::Asking,
                format!("asking Ceph whether {} may stop", keys_text()),
            ));
            out.question = Some(input.proposed.to_vec());
            out.halted = Some(format!("asking Ceph whether {} may stop", keys_text()));
            out.requeue_after = Some(input.view.look_every);
            return out;
        }
    };
    match &answer.decision {
        GateDecision::Proceed { ids } => {
            let mut out = GateOutcome::new(says(
                true,
                ConditionReason::StepInProgress,
                format!("Ceph says {} may stop ({})", keys_text(), answer.decision),
            ));
            out.deletions_allowed = true;
            if subjects.len() < input.proposed.len() {
                out.allowed_domains = Some(subjects.iter().map(|s| s.domain.clone()).collect());
            }
            if ids.is_empty() {
                return out;
            }
            let noout: Vec<u32> = ids.iter().map(|id| id.0).collect();
            out.step = Some(CephStep {
                keys: asked.iter().map(ToString::to_string).collect(),
                osds: ids
                    .iter()
                    .map(|id| StepOsd {
                        id: id.0,
                        up_from: answer.up_from.get(id).copied().unwrap_or(0),
                    })
                    .collect(),
                noout,
                started: Time(input.now),
            });
            out.first = vec![
                Action::RecordCephStep,
                Action::SetNoout {
                    ids: ids.iter().copied().collect(),
                },
            ];
            out.requeue_after = Some(input.view.look_every);
            out
        }
        GateDecision::Wait { blockers } | GateDecision::Halt { blockers } => {
            let reason = blockers
                .first()
                .map_or("CephUnavailable", Blocker::category);
            let message = match blockers.first() {
                // Another CephOSD's step: waiting for the cluster, not refused by Ceph.
                Some(b @ (Blocker::ClusterBusy { .. } | Blocker::ClusterLockFailed { .. })) => {
                    format!("{} waits for the Ceph cluster: {b}", keys_text())
                }
                _ => format!(
                    "Ceph does not let {} stop: {}",
                    keys_text(),
                    answer.decision
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
    }
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
#[path = "ceph_gate_tests.rs"]
mod tests;
