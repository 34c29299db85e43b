//! The CephOSD status as data: counts, phase and conditions, computed from a plan. Pure.
//!
//! `lastTransitionTime` is carried over from the previous status while a condition's status
//! stays the same, so an unchanged cluster yields an identical status (and no write).

use crate::crd::{CephOsdStatus, Phase};
use crate::hash::TemplateHash;
use crate::plan::Summary;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// One thing wrong with the spec, for the `InvalidSpec` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecProblem {
    /// The condition's reason when this is the first problem.
    pub reason: &'static str,
    pub message: String,
}

/// Everything the status is computed from.
pub struct StatusInput<'a> {
    pub previous: &'a CephOsdStatus,
    pub generation: Option<i64>,
    pub now: Timestamp,
    pub template_hash: &'a TemplateHash,
    pub summary: &'a Summary,
    pub paused: bool,
    /// Why out-of-date pods are not being replaced right now.
    pub halted: Option<&'a str>,
    /// A replacement past its progress deadline.
    pub stalled: Option<&'a str>,
    /// Problems in the spec, the most severe first.
    pub spec_problems: &'a [SpecProblem],
    /// Whether this reconcile still had writes to make.
    pub pending_actions: bool,
    pub current_update: Vec<String>,
    /// Pods with the owner label that another controller controls, by name.
    pub foreign_pods: Vec<String>,
    /// `host:data waits for node host: <scheduler message>`, per OSD whose pod is unscheduled.
    pub unschedulable: Vec<String>,
}

pub fn compute_status(input: &StatusInput<'_>) -> CephOsdStatus {
    let s = input.summary;
    let all_ready = s.ready == s.desired && s.updated == s.desired && s.current == s.desired;
    let converged = all_ready && s.out_of_date == 0 && s.invalid == 0 && !input.pending_actions;
    let ready = if all_ready {
        (
            "True",
            "AllOsdsReady",
            format!("{} of {} OSD pods Ready", s.ready, s.desired),
        )
    } else {
        (
            "False",
            "OsdsNotReady",
            format!(
                "{} of {} OSD pods Ready, {} up to date, {} out of date",
                s.ready, s.desired, s.updated, s.out_of_date
            ),
        )
    };
    let progressing = if let Some(stalled) = input.stalled {
        ("False", "ProgressDeadlineExceeded", stalled.to_owned())
    } else if input.paused && s.out_of_date > 0 {
        (
            "False",
            "Paused",
            "the rollout is paused (spec.paused)".to_owned(),
        )
    } else if converged {
        (
            "False",
            "Complete",
            "every OSD runs the current template and is Ready".to_owned(),
        )
    } else if s.out_of_date > 0 || !input.current_update.is_empty() {
        match input.halted {
            // Waiting for our own replacement is the normal pace of a rollout.
            Some(why) if input.current_update.is_empty() => ("False", "Halted", why.to_owned()),
            _ => (
                "True",
                "RollingUpdate",
                format!(
                    "{} OSD pods out of date; replacing {}",
                    s.out_of_date,
                    input.current_update.join(", ")
                ),
            ),
        }
    } else if let Some(first) = input.unschedulable.first() {
        ("True", "WaitingForNodes", format!("OSD {first}"))
    } else {
        (
            "True",
            "Reconciling",
            "creating, recreating or removing OSD pods".to_owned(),
        )
    };
    let stalled = match input.stalled {
        Some(message) => ("True", "ProgressDeadlineExceeded", message.to_owned()),
        None => (
            "False",
            "WithinDeadline",
            "no replacement is past its progress deadline".to_owned(),
        ),
    };
    let invalid = match input.spec_problems.first() {
        None => ("False", "SpecValid", "the spec is consistent".to_owned()),
        Some(first) => (
            "True",
            first.reason,
            input
                .spec_problems
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        ),
    };
    let migrating = if s.migrating == 0 {
        (
            "False",
            "NoReplicaSets",
            "no OSD runs under a ReplicaSet of the Ansible operator".to_owned(),
        )
    } else {
        (
            "True",
            "ReplicaSetEra",
            format!(
                "{} OSDs still run under ReplicaSets of the Ansible operator; the rollout \
                 replaces them one update domain at a time",
                s.migrating
            ),
        )
    };
    let phase = if !input.spec_problems.is_empty() {
        Phase::Error
    } else if input.stalled.is_some() {
        Phase::Stalled
    } else if input.paused {
        Phase::Paused
    } else if converged {
        Phase::Ready
    } else {
        Phase::Progressing
    };
    let conditions = [
        ("Ready", ready),
        ("Progressing", progressing),
        ("Stalled", stalled),
        ("InvalidSpec", invalid),
        ("Migrating", migrating),
    ]
    .into_iter()
    .map(|(type_, (status, reason, message))| condition(input, type_, status, reason, message))
    .collect();
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
        foreign_pods: input.foreign_pods.clone(),
        unschedulable: input.unschedulable.clone(),
        phase: Some(phase),
        current_update: input.current_update.clone(),
        conditions,
    }
}

/// `planned` (what the reconcile computed) with a `ReconcileFailed` condition: a write the
/// plan needed failed (`reason` is the failure's category). The next successful reconcile's
/// status has no such condition. None when `previous` already says exactly that.
pub fn failed_status(
    planned: &CephOsdStatus,
    previous: &CephOsdStatus,
    now: Timestamp,
    reason: &str,
    message: &str,
) -> Option<CephOsdStatus> {
    let mut status = planned.clone();
    let generation = planned.observed_generation;
    set_condition(
        &mut status,
        previous,
        generation,
        now,
        ("ReconcileFailed", reason, message),
    );
    (&status != previous).then_some(status)
}

/// Replaces the condition of type `type_` in `status` by a True one.
fn set_condition(
    status: &mut CephOsdStatus,
    previous: &CephOsdStatus,
    generation: Option<i64>,
    now: Timestamp,
    (type_, reason, message): (&str, &str, &str),
) {
    status.conditions.retain(|c| c.type_ != type_);
    status.conditions.push(Condition {
        type_: type_.into(),
        status: "True".into(),
        reason: reason.into(),
        message: message.to_owned(),
        observed_generation: generation,
        last_transition_time: transition_time(previous, type_, "True", now),
    });
}

fn condition(
    input: &StatusInput<'_>,
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        observed_generation: input.generation,
        last_transition_time: transition_time(input.previous, type_, status, input.now),
    }
}

fn transition_time(previous: &CephOsdStatus, type_: &str, status: &str, now: Timestamp) -> Time {
    previous
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map_or(Time(now), |c| c.last_transition_time.clone())
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).expect("time")
    }

    #[test]
    fn a_failure_is_a_condition_that_keeps_its_transition_time() {
        let planned = CephOsdStatus {
            observed_generation: Some(3),
            ..CephOsdStatus::default()
        };
        let first = failed_status(
            &planned,
            &CephOsdStatus::default(),
            at(10),
            "CreateFailed",
            "quota",
        )
        .expect("a new condition");
        let failed = first
            .conditions
            .iter()
            .find(|c| c.type_ == "ReconcileFailed")
            .expect("condition");
        assert_eq!(
            (
                failed.status.as_str(),
                failed.reason.as_str(),
                failed.message.as_str()
            ),
            ("True", "CreateFailed", "quota")
        );
        assert_eq!(failed.observed_generation, Some(3));
        // Failing again later: the same status, so nothing is written.
        assert_eq!(
            failed_status(&planned, &first, at(20), "CreateFailed", "quota"),
            None
        );
        // Another failure is.
        let other = failed_status(&planned, &first, at(30), "DeleteFailed", "webhook")
            .expect("a changed condition");
        let failed = other
            .conditions
            .iter()
            .find(|c| c.type_ == "ReconcileFailed")
            .expect("condition");
        assert_eq!(failed.reason, "DeleteFailed");
        // Still True since 10: the transition time stays.
        assert_eq!(failed.last_transition_time, Time(at(10)));
    }
}
