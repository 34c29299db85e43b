//! The CephOSD status as data: counts, phase and conditions, computed from a plan. Pure.
//!
//! `lastTransitionTime` is carried over from the previous status while a condition's status
//! stays the same, so an unchanged cluster yields an identical status (and no write).

use crate::crd::{BudgetStatus, CephOsdStatus, CephStep, Phase};
use crate::hash::TemplateHash;
use crate::plan::gate::GateCondition;
use crate::plan::rules::rollout::Hold;
use crate::plan::says::conditions::{
    ConditionReason as Reason, ConditionType, SpecProblem, StatedCondition,
};
use crate::plan::says::failure::Failure;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::BTreeMap;

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
    /// Pods with the owner label that another controller controls (left alone).
    pub foreign: usize,
    /// Desired OSDs still run by a ReplicaSet of the Ansible operator.
    pub migrating: usize,
    /// Pods (and era ReplicaSets) of OSDs no longer in the spec, waiting for their turn.
    pub superfluous: usize,
}

/// A stalled rollout: why (`ProgressDeadlineExceeded`, `OsdCrashed`), in words.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stall<'a> {
    pub reason: Reason,
    pub message: &'a str,
}

/// Everything the status is computed from.
pub(crate) struct StatusInput<'a> {
    pub previous: &'a CephOsdStatus,
    pub generation: Option<i64>,
    pub now: Timestamp,
    pub template_hash: &'a TemplateHash,
    pub summary: &'a Summary,
    pub paused: bool,
    /// Why out-of-date pods are not being replaced right now.
    pub halted: Option<&'a str>,
    /// Whether `halted` is the disruption budget's reason.
    pub halted_by_budget: bool,
    /// The hold `halted` reports, when the rollout is at its cut.
    pub held_by: Option<Hold>,
    /// Why the rollout is stalled: a replacement past its progress deadline, or a new
    /// daemon's crash.
    pub stalled: Option<Stall<'a>>,
    /// Problems in the spec, the most severe first.
    pub spec_problems: &'a [SpecProblem],
    /// Whether this reconcile still had writes to make.
    pub pending_actions: bool,
    pub current_update: Vec<String>,
    /// Pods with the owner label that another controller controls, by name.
    pub foreign_pods: Vec<String>,
    /// `host:data waits for node host: <scheduler message>`, per OSD whose pod is unscheduled.
    pub unschedulable: Vec<String>,
    /// The `CephGate` condition.
    pub ceph_gate: &'a GateCondition,
    pub osd_ids: BTreeMap<String, Vec<u32>>,
    pub ceph_step: Option<CephStep>,
    /// The `DisruptionBudget` condition, when budgets are watched.
    pub disruption_budget: Option<&'a StatedCondition>,
    /// The `PrePull` condition, with `spec.prePull`.
    pub pre_pull: Option<&'a StatedCondition>,
    pub budget: Option<BudgetStatus>,
    /// The `OsdsIn` condition, when Ceph's OSD map was read.
    pub osds_in: Option<&'a StatedCondition>,
    /// The `Finalized` condition, when a finalize is asked for.
    pub finalized: Option<&'a StatedCondition>,
    /// OSDs the operator marks in (or will once their daemon is up): not converged yet.
    pub marking_in: Option<&'a str>,
}

/// The status: the counts, the phase and one condition each of `Ready`, `Progressing`,
/// `Stalled`, `InvalidSpec` and `Migrating`.
pub(crate) fn compute_status(input: &StatusInput<'_>) -> CephOsdStatus {
    let s = input.summary;
    let converged = all_ready(s)
        && s.out_of_date == 0
        && s.superfluous == 0
        && s.invalid == 0
        && !input.pending_actions
        && input.marking_in.is_none()
        && !step_followed(input);
    let conditions = conditions(input, converged);
    CephOsdStatus {
        observed_generation: input.generation,
        template_hash: Some(input.template_hash.to_string()),
        desired: count(s.desired),
        current: count(s.current),
        ready: count(s.ready),
        updated: count(s.updated),
        out_of_date: count(s.out_of_date),
        unready: count(s.unready),
        invalid: count(s.invalid),
        foreign: count(s.foreign),
        migrating: count(s.migrating),
        superfluous: count(s.superfluous),
        foreign_pods: input.foreign_pods.clone(),
        unschedulable: input.unschedulable.clone(),
        phase: Some(phase(input, converged)),
        current_update: input.current_update.clone(),
        conditions,
        osd_ids: input.osd_ids.clone(),
        ceph_step: input.ceph_step.clone(),
        failure_domains: None,
        budget: input.budget.clone(),
        osds_out: Vec::new(),
        expected_updated_domains: None,
        rollout: None,
        releases: None,
        replacements: Vec::new(),
    }
}

/// The status conditions, in the order the status lists them: those always there, then those
/// of the disruption budget, the pre-pull and the out OSDs when they apply.
fn conditions(input: &StatusInput<'_>, converged: bool) -> Vec<Condition> {
    let s = input.summary;
    let stated = |c: &StatedCondition| Says {
        holds: c.holds,
        reason: c.reason,
        message: c.message.clone(),
    };
    let gate = Says {
        holds: input.ceph_gate.holds,
        reason: input.ceph_gate.reason,
        message: input.ceph_gate.message.clone(),
    };
    [
        (ConditionType::Ready, ready(s)),
        (ConditionType::Progressing, progressing(input, converged)),
        (ConditionType::Stalled, stalled(input.stalled)),
        (
            ConditionType::InvalidSpec,
            invalid_spec(input.spec_problems),
        ),
        (ConditionType::Migrating, migrating(s)),
        (ConditionType::CephGate, gate),
    ]
    .into_iter()
    .chain((input.disruption_budget).map(|c| (ConditionType::DisruptionBudget, stated(c))))
    .chain((input.pre_pull).map(|c| (ConditionType::PrePull, stated(c))))
    .chain((input.osds_in).map(|c| (ConditionType::OsdsIn, stated(c))))
    .chain((input.finalized).map(|c| (ConditionType::Finalized, stated(c))))
    .map(|(type_, says)| condition(input, type_, says))
    .collect()
}

/// What one condition says: whether it holds, why, and in words.
struct Says {
    holds: bool,
    reason: Reason,
    message: String,
}

impl Says {
    fn yes(reason: Reason, message: impl Into<String>) -> Self {
        Self {
            holds: true,
            reason,
            message: message.into(),
        }
    }

    fn no(reason: Reason, message: impl Into<String>) -> Self {
        Self {
            holds: false,
            reason,
            message: message.into(),
        }
    }
}

/// A condition's `status`.
const fn status_of(holds: bool) -> &'static str {
    if holds {
        "True"
    } else {
        "False"
    }
}

/// Every desired OSD has a live, up-to-date, Ready pod.
fn all_ready(s: &Summary) -> bool {
    s.ready == s.desired && s.updated == s.desired && s.current == s.desired
}

fn ready(s: &Summary) -> Says {
    if all_ready(s) {
        Says::yes(
            Reason::AllOsdsReady,
            format!("{} of {} OSD pods Ready", s.ready, s.desired),
        )
    } else {
        Says::no(
            Reason::OsdsNotReady,
            format!(
                "{} of {} OSD pods Ready, {} up to date, {} out of date",
                s.ready, s.desired, s.updated, s.out_of_date
            ),
        )
    }
}

/// A Ceph step is open and the gate follows it (Ceph is configured and not skipped): the
/// rollout is not complete until Ceph says the step ended and its `noout` is cleared.
fn step_followed(input: &StatusInput<'_>) -> bool {
    input.ceph_step.is_some()
        && !matches!(
            input.ceph_gate.reason,
            Reason::NotConfigured | Reason::Skipped
        )
}

/// The gate moving the rollout on as it should: Ceph asked about the next step, or the last
/// step ending (its new daemons booting, its PGs re-peering). Progress, not a halt.
fn gate_progress(input: &StatusInput<'_>) -> Option<Reason> {
    match input.ceph_gate.reason {
        _ if !input.ceph_gate.holds => None,
        Reason::Asking => Some(Reason::AskingCeph),
        Reason::StepInProgress if step_followed(input) => Some(Reason::CephStepEnding),
        _ => None,
    }
}

/// Whether pods are being created, replaced or removed, or why not; the first that applies
/// of: stalled, paused with pods waiting, converged, a rollout (or why it is halted), the last
/// Ceph step ending, pods waiting for their nodes, anything else under way.
fn progressing(input: &StatusInput<'_>, converged: bool) -> Says {
    let s = input.summary;
    let waiting = s.out_of_date + s.superfluous;
    if let Some(stall) = input.stalled {
        Says::no(stall.reason, stall.message)
    } else if input.paused && waiting > 0 {
        Says::no(Reason::Paused, "the rollout is paused (spec.paused)")
    } else if converged {
        let mut says = "every OSD runs the current template and is Ready".to_owned();
        if let Some(out) = input.osds_in.filter(|c| !c.holds) {
            says.push_str(&format!("; but {} (OsdsIn)", out.message));
        }
        Says::no(Reason::Complete, says)
    } else if waiting > 0 || !input.current_update.is_empty() {
        match input.halted {
            // Waiting for our own replacement is the normal pace of a rollout.
            Some(why) if input.current_update.is_empty() => {
                if let Some(reason) = gate_progress(input) {
                    return Says::yes(reason, format!("{}; {why}", waiting_text(s)));
                }
                let reason = match input.held_by {
                    Some(Hold::Partition) => Reason::Partitioned,
                    Some(Hold::Canary) => Reason::CanaryWaiting,
                    None if input.halted_by_budget => Reason::WaitingForDisruptionBudget,
                    None => Reason::Halted,
                };
                Says::no(reason, why)
            }
            _ => Says::yes(
                Reason::RollingUpdate,
                format!(
                    "{}; replacing {}",
                    waiting_text(s),
                    input.current_update.join(", ")
                ),
            ),
        }
    } else if step_followed(input) {
        let step = input
            .ceph_step
            .as_ref()
            .map_or_else(String::new, |step| step.keys.join(", "));
        let says = format!(
            "the last Ceph step (on {step}) has not ended: {}",
            input.ceph_gate.message
        );
        if input.ceph_gate.holds {
            Says::yes(Reason::CephStepEnding, says)
        } else {
            Says::no(Reason::Halted, says)
        }
    } else if let Some(first) = input.unschedulable.first() {
        Says::yes(Reason::WaitingForNodes, format!("OSD {first}"))
    } else if let Some(marking_in) = input.marking_in {
        Says::yes(Reason::MarkingIn, marking_in)
    } else {
        Says::yes(
            Reason::Reconciling,
            "creating, recreating or removing OSD pods",
        )
    }
}

fn stalled(stalled: Option<Stall<'_>>) -> Says {
    match stalled {
        Some(stall) => Says::yes(stall.reason, stall.message),
        None => Says::no(
            Reason::WithinDeadline,
            "no replacement is past its progress deadline",
        ),
    }
}

/// Every problem of the spec, the first one's reason naming the condition.
fn invalid_spec(problems: &[SpecProblem]) -> Says {
    match problems.first() {
        None => Says::no(Reason::SpecValid, "the spec is consistent"),
        Some(first) => Says::yes(
            first.reason,
            problems
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

fn migrating(s: &Summary) -> Says {
    if s.migrating == 0 {
        Says::no(
            Reason::NoReplicaSets,
            "no OSD runs under a ReplicaSet of the Ansible operator",
        )
    } else {
        Says::yes(
            Reason::ReplicaSetEra,
            format!(
                "{} OSDs still run under ReplicaSets of the Ansible operator; the rollout \
                 replaces them one update domain at a time",
                s.migrating
            ),
        )
    }
}

/// The first that applies of: an invalid spec, a stall, a pause, converged, progressing.
fn phase(input: &StatusInput<'_>, converged: bool) -> Phase {
    if !input.spec_problems.is_empty() {
        Phase::Error
    } else if input.stalled.is_some() {
        Phase::Stalled
    } else if input.paused {
        Phase::Paused
    } else if converged {
        Phase::Ready
    } else {
        Phase::Progressing
    }
}

/// `3 OSD pods out of date`, then `, 2 of OSDs no longer in the spec` when there are such.
fn waiting_text(s: &Summary) -> String {
    let mut text = format!("{} OSD pods out of date", s.out_of_date);
    if s.superfluous > 0 {
        text.push_str(&format!(
            ", {} of OSDs no longer in the spec",
            s.superfluous
        ));
    }
    text
}

/// `planned` (what the reconcile computed) with a `ReconcileFailed` condition: an API call
/// the reconcile needed failed. The next successful reconcile's status has no such condition.
/// Failing for longer than `deadline` (the progress deadline) also makes the CephOSD
/// `Stalled`. None when `previous` already says exactly that.
pub(crate) fn failed_status(
    planned: &CephOsdStatus,
    previous: &CephOsdStatus,
    now: Timestamp,
    failure: Failure,
    message: &str,
    deadline: SignedDuration,
) -> Option<CephOsdStatus> {
    let mut status = planned.clone();
    // A step the plan ended is not over while the plan's writes failed (its noout may still be
    // set): its record stays, so the next plan ends it again.
    if status.ceph_step.is_none() {
        status.ceph_step.clone_from(&previous.ceph_step);
    }
    let type_ = ConditionType::ReconcileFailed.as_str();
    let since = transition_time(previous, type_, status_of(true), now);
    status.conditions.retain(|c| c.type_ != type_);
    status.conditions.push(Condition {
        type_: type_.to_owned(),
        status: status_of(true).to_owned(),
        reason: Reason::Failed(failure).as_str().to_owned(),
        message: message.to_owned(),
        observed_generation: planned.observed_generation,
        last_transition_time: since.clone(),
    });
    if now.duration_since(since.0) >= deadline {
        let stalled = ConditionType::Stalled.as_str();
        status.conditions.retain(|c| c.type_ != stalled);
        status.conditions.push(Condition {
            type_: stalled.to_owned(),
            status: status_of(true).to_owned(),
            reason: Reason::ProgressDeadlineExceeded.as_str().to_owned(),
            // A fixed start, not a growing count: the message stays true without a write.
            message: format!(
                "the writes this CephOSD needs have failed since {} (progress deadline {}s): \
                 {message}",
                since.0,
                deadline.as_secs()
            ),
            observed_generation: planned.observed_generation,
            last_transition_time: transition_time(previous, stalled, status_of(true), now),
        });
        if status.phase != Some(Phase::Error) {
            status.phase = Some(Phase::Stalled);
        }
    }
    (&status != previous).then_some(status)
}

fn condition(input: &StatusInput<'_>, type_: ConditionType, says: Says) -> Condition {
    let status = status_of(says.holds);
    Condition {
        type_: type_.as_str().to_owned(),
        status: status.to_owned(),
        reason: says.reason.as_str().to_owned(),
        message: says.message,
        observed_generation: input.generation,
        last_transition_time: transition_time(input.previous, type_.as_str(), status, input.now),
    }
}

fn transition_time(previous: &CephOsdStatus, type_: &str, status: &str, now: Timestamp) -> Time {
    previous
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map_or(Time(now), |c| c.last_transition_time.clone())
}

/// `n` as the status counts it.
pub(crate) fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
