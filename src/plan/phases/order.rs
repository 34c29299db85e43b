//! The order phase: every write of the plan in the order it applies. The gate's first writes
//! (the Ceph step recorded, `noout` set), the disruption budget (written before any pod goes),
//! the deletions that go at once, the creations, the step's deletions the gate lets go, the
//! marks, the gate's last writes, then the image pre-pull pods' writes. A pod this plan needs
//! that cannot be built stops every write; a CephOSD deleted at once only ends its Ceph step,
//! one orphaned also lets go of the pods it still controls.

use crate::crd::osd::OsdKey;
use crate::crd::CephStep;
use crate::labels::PodState;
use crate::plan::gate::{GateOutcome, GateSubject};
use crate::plan::observed::classify::{ObservedPod, PodClass, Workload};
use crate::plan::phases::decide::{Decided, Proposed};
use crate::plan::phases::pre_pull::PrePullOutcome;
use crate::plan::phases::seen::Seen;
use crate::plan::rules::budget::{label_patches, Keeping};
use crate::plan::rules::deletion::Deletion;
use crate::plan::says::actions::Action;
use crate::plan::says::events::{EventReason, PlannedEvent};
use kube::ResourceExt;
use std::collections::HashSet;

/// The plan's writes in order.
pub(in crate::plan) struct Ordered {
    pub(in crate::plan) actions: Vec<Action>,
    /// The OSDs whose pods the rollout step takes down in this plan, in order.
    pub(in crate::plan) replacing: Vec<OsdKey>,
    /// `status.cephStep` after this plan.
    pub(in crate::plan) ceph_step: Option<CephStep>,
    /// The keys to ask Ceph about before the step's deletions can go.
    pub(in crate::plan) question: Option<Vec<GateSubject>>,
    /// Warnings for the pods marked out of date because their annotations disagree.
    pub(in crate::plan) tampered: Vec<PlannedEvent>,
}

/// Orders the writes `proposed` by the decide phase (its step trimmed by the budget phase) as
/// `gated` lets them go, with the budget's writes and the pre-pull pods' writes.
pub(in crate::plan) fn order(
    seen: &Seen<'_>,
    decided: &Decided<'_>,
    gated: &GateOutcome,
    proposed: Proposed,
    budget_writes: Vec<Action>,
    pre_pull: Option<&PrePullOutcome>,
) -> Ordered {
    if decided.unbuildable.is_some() {
        // No write at all: a replaced pod without a successor would leave its OSD down.
        return Ordered {
            actions: Vec::new(),
            replacing: Vec::new(),
            ceph_step: seen.previous.ceph_step.clone(),
            question: None,
            tampered: Vec::new(),
        };
    }
    let Proposed {
        at_once,
        creations,
        step,
    } = proposed;
    let (marks, tampered) = marks(seen, decided);
    let (deletions, replacing) = if gated.deletions_allowed {
        (step.actions, step.replacing)
    } else {
        (Vec::new(), Vec::new())
    };
    let pre_pulls = (pre_pull.iter()).flat_map(|p| p.actions.iter().cloned());
    let actions: Vec<Action> = (gated.first.iter().cloned())
        .chain(budget_writes)
        .chain(at_once)
        .chain(creations)
        .chain(deletions)
        .chain(marks)
        .chain(gated.last.iter().cloned())
        // Last: a pre-pull pod the API refuses holds up no other write.
        .chain(pre_pulls)
        .collect();
    Ordered {
        actions: kept_while_deleted(seen, actions),
        replacing,
        ceph_step: gated.step.clone(),
        question: gated.question.clone(),
        tampered,
    }
}

/// The `pod-state` marks and update-domain labels, with a Warning for each pod marked out of
/// date because its annotations disagree. They come last and wait while pods are being
/// created: they decide nothing (classes do), and would hold up the next rollout step or
/// compete with creations.
fn marks(seen: &Seen<'_>, decided: &Decided<'_>) -> (Vec<Action>, Vec<PlannedEvent>) {
    if decided.creating {
        return (Vec::new(), Vec::new());
    }
    let mut marks = state_patches(seen, &decided.current);
    let tampered = tampered_events(seen, &marks);
    if matches!(seen.keeping, Keeping::Managed { .. }) {
        marks.extend(label_patches(seen.domains(), &decided.current, |p| {
            seen.is_blocked(p.key.as_ref())
        }));
    }
    (marks, tampered)
}

/// Of `actions`, those a CephOSD deleted at once or orphaned still writes: only its Ceph
/// step is ended. Deleted at once, Kubernetes removes its objects itself (a terminating
/// namespace takes no new one); orphaned, every pod that still names it is let go of.
fn kept_while_deleted(seen: &Seen<'_>, mut actions: Vec<Action>) -> Vec<Action> {
    if let Some(Deletion::AtOnce(_) | Deletion::Orphaned) = seen.deletion {
        actions.retain(|a| matches!(a, Action::ClearNoout { .. } | Action::RecordCephStep));
    }
    if let (Some(Deletion::Orphaned), Some(owner_uid)) = (seen.deletion, seen.cr.uid()) {
        actions.extend(
            (seen.pods.iter())
                .filter(|p| p.deleted.is_none() && p.workload == Workload::Pod)
                .map(|p| Action::LetGo {
                    name: p.name.clone(),
                    uid: p.uid.clone(),
                    owner_uid: owner_uid.clone(),
                }),
        );
    }
    actions
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
