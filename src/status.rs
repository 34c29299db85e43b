//! The CephOSD status as data: counts, phase and conditions, computed from a plan. Pure.
//!
//! `lastTransitionTime` is carried over from the previous status while a condition's status
//! stays the same, so an unchanged cluster yields an identical status (and no write).

use crate::crd::{CephOsdStatus, Phase};
use crate::hash::TemplateHash;
use crate::plan::Summary;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

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
    /// Problems in the spec (conflicting duplicate OSDs).
    pub spec_errors: &'a [String],
    /// Whether this reconcile still had writes to make.
    pub pending_actions: bool,
    pub current_update: Vec<String>,
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
    let invalid = if input.spec_errors.is_empty() {
        ("False", "SpecValid", "the spec is consistent".to_owned())
    } else {
        ("True", "ConflictingDevices", input.spec_errors.join("; "))
    };
    let phase = if !input.spec_errors.is_empty() {
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
        phase: Some(phase),
        current_update: input.current_update.clone(),
        conditions,
    }
}

/// The status for a spec the operator cannot act on at all (e.g. an unrenderable template):
/// counts stay as last seen, `InvalidSpec` says why.
pub fn error_status(
    previous: &CephOsdStatus,
    generation: Option<i64>,
    now: Timestamp,
    message: &str,
) -> CephOsdStatus {
    let mut status = previous.clone();
    status.observed_generation = generation;
    status.phase = Some(Phase::Error);
    let input_previous = previous.clone();
    let mut conditions: Vec<Condition> = previous
        .conditions
        .iter()
        .filter(|c| c.type_ != "InvalidSpec")
        .cloned()
        .collect();
    conditions.push(Condition {
        type_: "InvalidSpec".into(),
        status: "True".into(),
        reason: "InvalidPodTemplate".into(),
        message: message.to_owned(),
        observed_generation: generation,
        last_transition_time: transition_time(&input_previous, "InvalidSpec", "True", now),
    });
    status.conditions = conditions;
    status
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
