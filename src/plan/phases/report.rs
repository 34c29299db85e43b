//! The report phase: what the plan says of itself: the summary, the status the CephOSD
//! should show, the events, and when to look again.

pub(crate) mod progress;
pub(crate) mod status;

use crate::ceph::{osd_list, OsdId};
use crate::crd::FailureDomainsStatus;
use crate::crd::{CephOsdStatus, RolloutProgress};
use crate::plan::gate::{osd_ids, CephInput, CephView, GateOutcome, StepProgress};
use crate::plan::observed::classify::{ObservedPod, PodClass, Workload};
use crate::plan::phases::budget::Budgeted;
use crate::plan::phases::decide::Decided;
use crate::plan::phases::order::Ordered;
use crate::plan::phases::pre_pull::PrePullOutcome;
use crate::plan::phases::report::progress::{next_progress, ProgressInput};
use crate::plan::phases::report::status::{compute_status, Stall, StatusInput, Summary};
use crate::plan::phases::seen::Seen;
use crate::plan::rules::deletion::{finalizer_write, went_at_once, Deletion, FinalizerWrite};
use crate::plan::rules::finalize::auto_finalize_due;
use crate::plan::rules::out_osds::OutOutcome;
use crate::plan::rules::releases::{osd_releases_read, releases_status, ReleasesRead};
use crate::plan::rules::replacement::ReplaceOutcome;
use crate::plan::rules::rollout::{deadlines, Deadlines, Hold};
use crate::plan::says::conditions::{ConditionReason, ConditionType, SpecProblem, StatedCondition};
use crate::plan::says::events::{
    foreign_pod_events, transition_events, unschedulable_events, EventReason, PlannedEvent,
};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// What the plan says of itself.
pub(in crate::plan) struct Report {
    pub(in crate::plan) summary: Summary,
    /// Why no rollout step started although pods wait for one, if so.
    pub(in crate::plan) halted: Option<String>,
    pub(in crate::plan) spec_problems: Vec<SpecProblem>,
    /// Why the rollout is stalled (a new daemon's crash, a replacement past its progress
    /// deadline), described.
    pub(in crate::plan) stalled: Option<String>,
    pub(in crate::plan) events: Vec<PlannedEvent>,
    pub(in crate::plan) status: CephOsdStatus,
    pub(in crate::plan) status_changed: bool,
    pub(in crate::plan) requeue_after: Option<SignedDuration>,
    /// Seconds each update domain that finished in this plan took.
    pub(in crate::plan) finished_domain_seconds: Vec<i64>,
    pub(in crate::plan) finalizer: Option<FinalizerWrite>,
}

/// Why the rollout does not move, if it does not: the gate's reason, the rollout's own, or
/// the hold it stops at (said only when nothing else holds it).
struct Halt {
    halted: Option<String>,
    by_budget: bool,
    held_by: Option<Hold>,
}

/// The outcomes of the phases before the report.
pub(in crate::plan) struct Phases<'p> {
    pub(in crate::plan) decided: &'p Decided<'p>,
    pub(in crate::plan) pre_pull: Option<&'p PrePullOutcome>,
    pub(in crate::plan) gated: &'p GateOutcome,
    pub(in crate::plan) budgeted: &'p Budgeted,
    pub(in crate::plan) ordered: &'p Ordered,
}

/// Reports the plan the `phases` made of what `seen` showed at `now`: when to look again, the
/// rollout's progress, the status, the finalizer's write and the events.
pub(in crate::plan) fn report(
    seen: &Seen<'_>,
    phases: &Phases<'_>,
    said: &CephSaid<'_>,
    now: Timestamp,
) -> Report {
    let mut watch = watch(seen, phases.decided, now);
    watch.stalled = watch
        .stalled
        .map(|stalled| with_cephs_word(stalled, said.view));
    // A new daemon's crash is said before a deadline: it is the likelier cause.
    let stall = match (&phases.gated.crashed, &watch.stalled) {
        (Some(crash), _) => Some((ConditionReason::OsdCrashed, crash.to_string())),
        (None, Some(stalled)) => Some((ConditionReason::ProgressDeadlineExceeded, stalled.clone())),
        (None, None) => None,
    };
    let requeue_after = requeue_after(seen, phases, said, &watch, now);
    let current_update = current_update(phases);
    let (rollout, finished_domain_seconds) = progress(seen, phases.decided, &current_update, now);
    let halt = halt(seen, phases.decided, phases.gated);
    let foreign_pods = seen.foreign_pods();
    let unschedulable_pods = unschedulable_pods(&phases.decided.current);
    let summary = summarize(seen, &phases.decided.current, foreign_pods.len());
    let spec_problems = spec_problems(seen, phases.decided);
    let marking_in = match (&said.out.marking_in, &said.replaced.under_way) {
        (Some(a), Some(b)) => Some(format!("{b}; {a}")),
        (a, b) => b.clone().or_else(|| a.clone()),
    };
    let mut status = compute_status(&StatusInput {
        previous: &seen.previous,
        generation: seen.cr.metadata.generation,
        now,
        template_hash: seen.template_hash,
        summary: &summary,
        paused: seen.spec.is_paused(),
        halted: halt.halted.as_deref(),
        halted_by_budget: halt.by_budget,
        held_by: halt.held_by,
        stalled: stall.as_ref().map(|(reason, message)| Stall {
            reason: *reason,
            message,
        }),
        spec_problems: &spec_problems,
        pending_actions: !phases.ordered.actions.is_empty() || phases.decided.unbuildable.is_some(),
        current_update: current_update.into_iter().collect(),
        foreign_pods: foreign_pods.iter().map(|(p, _)| p.name.clone()).collect(),
        unschedulable: unschedulable(seen, phases.decided, &unschedulable_pods),
        ceph_gate: &phases.gated.condition,
        disruption_budget: phases.budgeted.plan.condition.as_ref(),
        pre_pull: phases.pre_pull.and_then(|p| p.condition.as_ref()),
        budget: phases.budgeted.plan.status.clone(),
        osd_ids: known_osd_ids(seen, said.view),
        ceph_step: phases.ordered.ceph_step.clone(),
        osds_in: said.out.condition.as_ref(),
        finalized: said.finalized,
        marking_in: marking_in.as_deref(),
    });
    complete_status(&mut status, seen, phases.decided, said);
    status.rollout = rollout;
    status.releases = releases_status(&ReleasesRead {
        previous: seen.previous.releases.as_ref(),
        template_hash: seen.template_hash.as_str(),
        image: phases.pre_pull.and_then(|p| p.image_release),
        osds: osd_releases_read(said.view),
        osd_map: said.view.osds.as_ref(),
        own: (status.osd_ids.values().flatten().copied())
            .map(OsdId)
            .collect(),
        now,
    });
    let finalizer = finalizer_write(
        seen.cr,
        seen.deletion,
        !seen.pods.is_empty(),
        status.ceph_step.is_some(),
    );
    let mut events = transition_events(&seen.previous, &status);
    events.extend(went_at_once_event(seen, &status));
    events.extend(foreign_pod_events(&seen.previous, &foreign_pods));
    events.extend(unschedulable_events(&seen.previous, &unschedulable_pods));
    events.extend(phase_events(seen, phases));
    events.extend(said.replaced.events.iter().cloned());
    events.extend(unreadable_requests(&said.replaced.unreadable));
    Report {
        status_changed: seen.cr.status.as_ref() != Some(&status),
        summary,
        halted: halt.halted,
        spec_problems,
        stalled: stall.map(|(_, message)| message),
        events,
        status,
        requeue_after,
        finished_domain_seconds,
        finalizer,
    }
}

/// When to look again: the soonest of the deadlines watched, a deferred decision, the gate,
/// a budget Ceph keeps closed (it reopens on no Kubernetes event), the pre-pull, CRUSH moves
/// and out OSDs.
fn requeue_after(
    seen: &Seen<'_>,
    phases: &Phases<'_>,
    said: &CephSaid<'_>,
    watch: &Deadlines,
    now: Timestamp,
) -> Option<SignedDuration> {
    let watched = if phases.decided.deferred {
        Some(SignedDuration::from_secs(1))
    } else {
        watch.requeue_after
    };
    [
        phases.gated.requeue_after,
        phases.budgeted.plan.reopens_after,
        phases.pre_pull.and_then(|p| p.requeue_after),
        crush_looks(seen, phases.decided, said.view),
        said.out.requeue_after,
        said.replaced.requeue_after,
        finalize_falls_due(seen, now),
    ]
    .into_iter()
    .fold(watched, earliest)
}

/// How long until an automatic finalize falls due (nothing else reconciles at that moment).
fn finalize_falls_due(seen: &Seen<'_>, now: Timestamp) -> Option<SignedDuration> {
    let due = auto_finalize_due(seen.cr)?;
    (due > now).then(|| due.duration_since(now))
}

/// Domains still down from the update under way, plus those this step starts.
fn current_update(phases: &Phases<'_>) -> BTreeSet<String> {
    let decided = phases.decided;
    let mut current: BTreeSet<String> = (decided.rollout.unavailable.iter())
        .filter(|d| decided.previous_update.contains(d.as_str()))
        .cloned()
        .collect();
    current.extend(phases.budgeted.started.iter().cloned());
    current
}

/// The rollout's measured progress after this plan, and the seconds each update domain that
/// finished in it took.
fn progress(
    seen: &Seen<'_>,
    decided: &Decided<'_>,
    current_update: &BTreeSet<String>,
    now: Timestamp,
) -> (Option<RolloutProgress>, Vec<i64>) {
    let rollout = &decided.rollout;
    next_progress(
        seen.previous.rollout.as_ref(),
        &ProgressInput {
            template_hash: seen.template_hash.as_str(),
            now,
            paused: seen.spec.is_paused(),
            under_way: &current_update.iter().cloned().collect::<Vec<_>>(),
            waiting: (rollout.out_of_date.iter())
                .filter(|d| !current_update.contains(*d))
                .count(),
            held: rollout.held.len(),
        },
    )
}

/// What the status shows beyond the computed conditions and counts: the out OSDs, the
/// failure domains, the domains expected to be updated, and for a CephOSD deleted at once the
/// OSD ids that went down with it.
fn complete_status(
    status: &mut CephOsdStatus,
    seen: &Seen<'_>,
    decided: &Decided<'_>,
    said: &CephSaid<'_>,
) {
    osds_out(status, seen, said);
    status.replacements.clone_from(&said.replaced.records);
    status.failure_domains = seen.buckets.as_ref().map(FailureDomainsStatus::from);
    status.expected_updated_domains = i64::try_from(
        seen.domain_count()
            .saturating_sub(decided.rollout.held.len()),
    )
    .ok();
    if matches!(seen.deletion, Some(Deletion::AtOnce(_))) {
        // Kept to say which OSDs went down at once.
        status.osd_ids.clone_from(&seen.previous.osd_ids);
    }
}

/// A Warning for each entry of the `replace` annotation that cannot be read.
fn unreadable_requests(entries: &[String]) -> Vec<PlannedEvent> {
    (entries.iter())
        .map(|entry| PlannedEvent {
            warning: true,
            reason: EventReason::DiskReplacement,
            note: format!(
                "the annotation {} has an entry that is not read: {entry}",
                crate::labels::REPLACE
            ),
            pod: None,
        })
        .collect()
}

/// A deletion at once, said from the first plan that sees it (the garbage collector may be
/// through before the next): the same words each time, one Event series.
fn went_at_once_event(seen: &Seen<'_>, status: &CephOsdStatus) -> Option<PlannedEvent> {
    match seen.deletion {
        Some(Deletion::AtOnce(why)) => Some(went_at_once(why, &status.osd_ids)),
        _ => None,
    }
}

/// The events of single pods and those the phases planned.
fn phase_events(seen: &Seen<'_>, phases: &Phases<'_>) -> Vec<PlannedEvent> {
    let decided = phases.decided;
    pod_events(seen, &decided.current, &decided.previous_update)
        .into_iter()
        .chain(phases.ordered.tampered.iter().cloned())
        .chain(phases.gated.events.iter().cloned())
        .chain(phases.budgeted.plan.events.iter().cloned())
        .collect()
}

/// The deadlines of the current pods, and of the terminating ones a missing OSD waits for.
fn watch(seen: &Seen<'_>, decided: &Decided<'_>, now: Timestamp) -> Deadlines {
    let blocking_terminations = seen.pods.iter().filter(|p| {
        p.class == PodClass::Terminating
            && p.key
                .as_ref()
                .is_some_and(|k| decided.missing.iter().any(|m| m.key == *k))
    });
    deadlines(
        seen.spec,
        decided.current.iter().copied().chain(blocking_terminations),
        now,
    )
}

/// A stall (`stalled`) with what Ceph says of the open step's OSDs, when their new daemons
/// have not booted: the rollout stays halted on that step, its `noout` on.
fn with_cephs_word(stalled: String, view: &CephView) -> String {
    match &view.step {
        Some(StepProgress::Booting { pending }) if !pending.is_empty() => format!(
            "{stalled}; Ceph: {} of the open step has not booted a new daemon (down in the \
             OSD map): no other update domain stops, and noout stays on the step's OSDs",
            osd_list(pending)
        ),
        _ => stalled,
    }
}

fn halt(seen: &Seen<'_>, decided: &Decided<'_>, gated: &GateOutcome) -> Halt {
    let rollout = &decided.rollout;
    let by_budget =
        gated.halted.is_none() && rollout.waits_for_budget && decided.unbuildable.is_none();
    let held_by = rollout.halted_by.filter(|_| gated.halted.is_none());
    let halted = (gated.halted.clone())
        .or_else(|| rollout.halted.clone())
        .or_else(|| held_by.map(|hold| seen.hold_message(hold, &rollout.held)));
    Halt {
        halted,
        by_budget,
        held_by,
    }
}

/// What is wrong with the spec: a pod that cannot be built first, then the spec's own
/// problems, the disks older CephOSDs claim, and the rollout controls that cannot be read.
fn spec_problems(seen: &Seen<'_>, decided: &Decided<'_>) -> Vec<SpecProblem> {
    let unbuildable = decided.unbuildable.as_ref().map(|error| SpecProblem {
        reason: ConditionReason::InvalidPodTemplate,
        message: error.to_string(),
    });
    unbuildable
        .into_iter()
        .chain(seen.spec_problems.iter().cloned())
        .chain(seen.claimed_problems())
        .chain(decided.limit_problems.iter().cloned())
        .collect()
}

/// Each OSD waiting for its node, in words: pods the scheduler cannot place, then missing
/// OSDs on cordoned nodes.
fn unschedulable(
    seen: &Seen<'_>,
    decided: &Decided<'_>,
    pods: &[(&ObservedPod, String)],
) -> Vec<String> {
    let cordoned = (decided.missing.iter())
        .filter(|m| seen.cordoned.contains(&m.key.host))
        .map(|m| {
            format!(
                "{} waits for node {}: it is cordoned; the pod is created once it is uncordoned",
                m.key, m.key.host
            )
        });
    pods.iter()
        .map(|(_, w)| w.clone())
        .chain(cordoned)
        .collect()
}

/// What Ceph said: its view, and of it the OSDs that are out.
#[derive(Clone, Copy)]
pub(in crate::plan) struct CephSaid<'a> {
    pub(in crate::plan) view: &'a CephView,
    pub(in crate::plan) out: &'a OutOutcome,
    /// The `Finalized` condition, when the CephOSD asks for a finalize.
    pub(in crate::plan) finalized: Option<&'a StatedCondition>,
    /// The disk replacements after this plan.
    pub(in crate::plan) replaced: &'a ReplaceOutcome,
}

/// The out OSDs in `status`; without Ceph's OSD map (the gate on) the `OsdsIn` the last
/// reconcile said stands.
fn osds_out(status: &mut CephOsdStatus, seen: &Seen<'_>, said: &CephSaid<'_>) {
    status.osds_out.clone_from(&said.out.records);
    if said.out.condition.is_none() && !matches!(said.view.input, CephInput::Off { .. }) {
        let kept =
            (seen.previous.conditions.iter()).find(|c| c.type_ == ConditionType::OsdsIn.as_str());
        status.conditions.extend(kept.cloned());
    }
}

/// The OSD ids of each key as the status keeps them: those recorded, updated with what Ceph
/// told, for the keys still listed or run.
fn known_osd_ids(seen: &Seen<'_>, ceph: &CephView) -> BTreeMap<String, Vec<u32>> {
    let mut learned = match &ceph.input {
        CephInput::Answered(answer) => answer.learned.clone(),
        _ => BTreeMap::new(),
    };
    for (key, ids) in ceph.learned_ids.iter().flatten() {
        learned.entry(key.clone()).or_insert_with(|| ids.clone());
    }
    // A key withheld for its disk's replacement keeps its id.
    let kept: BTreeSet<String> = (seen.desired.osds.keys())
        .chain(seen.pods.iter().filter_map(|p| p.key.as_ref()))
        .map(ToString::to_string)
        .chain(seen.replacing.iter().cloned())
        .collect();
    osd_ids(&seen.previous.osd_ids, &learned, &kept)
}

/// Failure domains move in Ceph's CRUSH map on no Kubernetes event: while the rollout of a
/// CephOSD of `updateDomain: Topology` waits, Ceph is looked at again on the gate's cadence.
fn crush_looks(seen: &Seen<'_>, decided: &Decided<'_>, ceph: &CephView) -> Option<SignedDuration> {
    let gated = !matches!(ceph.input, CephInput::Off { .. });
    let waits = !decided.rollout.out_of_date.is_empty() && !seen.spec.is_paused();
    (seen.buckets.is_some() && gated && waits).then_some(ceph.look_every)
}

/// The sooner of two optional delays.
fn earliest(a: Option<SignedDuration>, b: Option<SignedDuration>) -> Option<SignedDuration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Our OSD pods the scheduler cannot place (a host without its Node, a cordoned node, ...),
/// with `host:data waits for node host: <why>`.
fn unschedulable_pods<'p>(current: &[&'p ObservedPod]) -> Vec<(&'p ObservedPod, String)> {
    current
        .iter()
        .filter_map(|p| {
            let key = p.key.as_ref()?;
            let why = p.unschedulable.as_ref()?;
            Some((*p, format!("{key} waits for node {}: {why}", key.host)))
        })
        .collect()
}

fn summarize(seen: &Seen<'_>, current: &[&ObservedPod], foreign: usize) -> Summary {
    let count = |class: PodClass| current.iter().filter(|p| p.class == class).count();
    let superfluous = seen
        .pods
        .iter()
        .filter(|p| p.is_live() && p.osd.is_none())
        .count()
        + seen.era_superfluous.len();
    Summary {
        desired: seen.desired.osds.len(),
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
        invalid: seen
            .pods
            .iter()
            .filter(|p| matches!(p.class, PodClass::Invalid(_) | PodClass::Ended(_)))
            .count(),
        terminating: seen
            .pods
            .iter()
            .filter(|p| p.class == PodClass::Terminating)
            .count(),
        foreign,
        migrating: seen.era.len(),
        superfluous,
    }
}

/// Events about single pods: a replacement an admin marked up-to-date before it was Ready,
/// and pods adopted from the reference operator (on the first reconcile).
fn pod_events(
    seen: &Seen<'_>,
    current: &[&ObservedPod],
    previous_update: &BTreeSet<&str>,
) -> Vec<PlannedEvent> {
    let mut events = Vec::new();
    for pod in current {
        let in_update = !previous_update.is_empty()
            && pod
                .key
                .as_ref()
                .is_some_and(|k| previous_update.contains(seen.domain_of(k).as_str()));
        if pod.class == PodClass::UpToDate && !pod.ready && in_update {
            events.push(PlannedEvent {
                warning: false,
                reason: EventReason::Overridden,
                note: format!(
                    "pod {} was marked up-to-date before it became Ready; the rollout continues",
                    pod.describe(),
                ),
                pod: Some(pod.name.clone()),
            });
        }
        if seen.cr.status.is_none() && !pod.controlled() && pod.workload == Workload::Pod {
            events.push(PlannedEvent {
                warning: false,
                reason: EventReason::Adopted,
                note: format!(
                    "adopted pod {} as it is, without restarting it",
                    pod.describe(),
                ),
                pod: Some(pod.name.clone()),
            });
        }
    }
    events
}
