//! The order phase: every write of the plan in the order it applies. The gate's first writes
//! (the Ceph step recorded, `noout` set), the disruption budget (written before any pod goes),
//! the deletions that go at once, the creations, the step's deletions the gate lets go, the
//! marks, the gate's last writes, then the image pre-pull pods' writes. A pod this plan needs
//! that cannot be built stops every write.

use crate::crd::osd::OsdKey;
use crate::crd::CephStep;
use crate::labels::PodState;
use crate::plan::gate::{GateOutcome, GateSubject};
use crate::plan::observed::classify::{ObservedPod, PodClass, Workload};
use crate::plan::phases::decide::{Decided, Proposed};
use crate::plan::phases::pre_pull::PrePullOutcome;
use crate::plan::phases::seen::Seen;
use crate::plan::rules::budget::{label_patches, plan_budget, BudgetInput, BudgetPlan, Keeping};
use crate::plan::rules::deletion::Deletion;
use crate::plan::says::actions::Action;
use crate::plan::says::events::{EventReason, PlannedEvent};
use std::collections::HashSet;

/// The plan's writes in order, and what they start.
pub(in crate::plan) struct Ordered {
    pub(in crate::plan) actions: Vec<Action>,
    /// The OSDs whose pods the rollout step takes down in this plan, in order.
    pub(in crate::plan) replacing: Vec<OsdKey>,
    /// The update domains the step starts (those down already included).
    pub(in crate::plan) started: Vec<String>,
    /// Of those, the ones not down already: reserved in the budget before their pods go.
    pub(in crate::plan) starting: Vec<String>,
    /// `status.cephStep` after this plan.
    pub(in crate::plan) ceph_step: Option<CephStep>,
    /// The keys to ask Ceph about before the step's deletions can go.
    pub(in crate::plan) question: Option<Vec<GateSubject>>,
    /// Warnings for the pods marked out of date because their annotations disagree.
    pub(in crate::plan) tampered: Vec<PlannedEvent>,
    /// The disruption budget's status, condition and events (its writes are in `actions`).
    pub(in crate::plan) budget: BudgetPlan,
}

/// Orders the writes `proposed` by the decide phase as `gated` lets them go, with the
/// pre-pull pods' writes. `closed`: why Ceph's PGs keep the disruption budget closed, if
/// they do.
pub(in crate::plan) fn order(
    seen: &Seen<'_>,
    decided: &Decided<'_>,
    gated: &GateOutcome,
    proposed: Proposed,
    pre_pull: Option<&PrePullOutcome>,
    closed: Option<&str>,
) -> Ordered {
    let Proposed {
        at_once,
        creations,
        step: mut going,
    } = proposed;
    if let Some(allowed) = &gated.allowed_domains {
        going.keep_domains(allowed, |key| seen.domain_of(key));
    }
    if let Some(allowed) = &gated.allowed_keys {
        going.keep_keys(allowed);
    }
    let goes = gated.deletions_allowed && decided.unbuildable.is_none();
    let started = if goes { going.domains } else { Vec::new() };
    let unavailable = &decided.rollout.unavailable;
    let starting: Vec<String> = (started.iter())
        .filter(|d| !unavailable.contains(*d))
        .cloned()
        .collect();
    let mut budget = plan_budget(
        &BudgetInput {
            cr: seen.cr,
            domains: seen.domains(),
            keeping: &seen.keeping,
            unavailable,
            starting: &starting,
            pods: &seen.pods,
            waiting: &decided.waiting,
            closed,
        },
        seen.previous.budget.as_ref(),
    );
    if decided.unbuildable.is_some() {
        // No write at all: a replaced pod without a successor would leave its OSD down.
        return Ordered {
            actions: Vec::new(),
            replacing: Vec::new(),
            started,
            starting,
            ceph_step: seen.previous.ceph_step.clone(),
            question: None,
            tampered: Vec::new(),
            budget,
        };
    }
    // The `pod-state` marks come last and wait while pods are being created: they decide
    // nothing (classes do), and would hold up the next rollout step or compete with creations.
    let (marks, tampered) = if decided.creating {
        (Vec::new(), Vec::new())
    } else {
        let patches = state_patches(seen, &decided.current);
        let tampered = tampered_events(seen, &patches);
        (patches, tampered)
    };
    let labels = if !decided.creating && matches!(seen.keeping, Keeping::Managed { .. }) {
        label_patches(seen.domains(), &decided.current, |p| {
            seen.is_blocked(p.key.as_ref())
        })
    } else {
        Vec::new()
    };
    let (deletions, replacing) = if gated.deletions_allowed {
        (going.actions, going.replacing)
    } else {
        (Vec::new(), Vec::new())
    };
    let pre_pulls = (pre_pull.iter()).flat_map(|p| p.actions.iter().cloned());
    let mut actions: Vec<Action> = (gated.first.iter().cloned())
        .chain(std::mem::take(&mut budget.actions))
        .chain(at_once)
        .chain(creations)
        .chain(deletions)
        .chain(marks)
        .chain(labels)
        .chain(gated.last.iter().cloned())
        // Last: a pre-pull pod the API refuses holds up no other write.
        .chain(pre_pulls)
        .collect();
    if let Some(Deletion::AtOnce(_)) = seen.deletion {
        // Kubernetes removes the CephOSD's objects itself (a terminating namespace takes no
        // new one): only its Ceph step is ended.
        actions.retain(|a| matches!(a, Action::ClearNoout { .. } | Action::RecordCephStep));
    }
    Ordered {
        actions,
        replacing,
        started,
        starting,
        ceph_step: gated.step.clone(),
        question: gated.question.clone(),
        tampered,
        budget,
    }
}

/// `pod-state` where it differs from the class (adoption writes nothing; a blocked OSD's pod
/// stays exactly as it is).
fn state_patches(seen: &Seen<'_>, current: &[&ObservedPod]) -> Vec<Action> {
    current
        .iter()
        .filter(|p| p.workload == Workload::Pod && !seen.is_blocked(p.key.as_ref()))
        .filter_map(|pod| {
            let state = match pod.class {
                PodClass::OutOfDate => PodState::OutOfDate,
                PodClass::UpToDate | PodClass::Ready => PodState::UpToDate,
                _ => return None,
            };
            let key = pod.key.clone()?;
            (pod.state.as_deref() != Some(state.as_str())).then(|| Action::PatchState {
                name: pod.name.clone(),
                key,
                state,
            })
        })
        .collect()
}

/// A Warning for each pod marked out of date because its annotations disagree with what it
/// runs (once: when the mark is written).
fn tampered_events(seen: &Seen<'_>, patches: &[Action]) -> Vec<PlannedEvent> {
    let marked: HashSet<&str> = patches
        .iter()
        .filter_map(|a| match a {
            Action::PatchState { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    seen.pods
        .iter()
        .filter(|p| marked.contains(p.name.as_str()))
        .filter_map(|p| {
            let why = p.tampered.as_ref()?;
            Some(PlannedEvent {
                warning: true,
                reason: EventReason::Tampered,
                note: format!(
                    "pod {}: {why}; it is replaced in its update domain's turn",
                    p.name
                ),
                pod: Some(p.name.clone()),
            })
        })
        .collect()
}
