//! The decide phase: what the plan would do before the gate and the order (the deletions
//! that go at once, the creations, the proposed rollout step), and whether every pod it needs
//! can be built.

use crate::crd::osd::{OsdKey, SuffixSource};
use crate::plan::actions::{Action, DeleteReason};
use crate::plan::budget::{drains_waiting, start_blocked};
use crate::plan::classify::{ObservedPod, PodClass};
use crate::plan::conditions::SpecProblem;
use crate::plan::creations::creations;
use crate::plan::proposal::{delete, rollout, Rollout, StepDeletions};
use crate::plan::replica_sets::ReplicaSetClass;
use crate::plan::rollout::Missing;
use crate::plan::seen::{Removal, Seen, Unbuildable};
use crate::plan::topology::HostBuckets;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// What the decide phase found, read by the later phases.
pub(super) struct Decided<'s> {
    /// The live pods of desired OSDs, then the era ReplicaSets standing for theirs.
    pub(super) current: Vec<&'s ObservedPod>,
    /// The update domains the previous status listed as being replaced.
    pub(super) previous_update: BTreeSet<&'s str>,
    /// Desired OSDs that no pod serves.
    pub(super) missing: Vec<Missing>,
    /// Pods are being created, or wait to be: the marks wait.
    pub(super) creating: bool,
    /// More OSDs lack a pod than one plan creates: the next reconcile follows at once.
    pub(super) deferred: bool,
    /// Cordoned hosts where OSD pods of ours still run, with how many: their drains wait.
    pub(super) waiting: BTreeMap<String, usize>,
    pub(super) rollout: Rollout,
    /// What cannot be read of `partition` and the canary.
    pub(super) limit_problems: Vec<SpecProblem>,
    /// Why a pod this plan needs (a missing OSD's, or the successor of a pod the step takes
    /// down) cannot be built: the plan then makes no write at all.
    pub(super) unbuildable: Option<Unbuildable>,
}

/// The writes the decide phase proposes, in their phases' terms.
pub(super) struct Proposed {
    /// What must go at once.
    pub(super) at_once: Vec<Action>,
    /// The pods of missing OSDs.
    pub(super) creations: Vec<Action>,
    /// The rollout step's deletions, for the gate to let go or hold.
    pub(super) step: StepDeletions,
}

/// Decides what `seen` calls for: the deletions that go at once, the creations (pod names
/// from `suffixes`), and the rollout step within `maxUnavailable`, `partition`, the canary
/// and the disruption budget.
pub(super) fn decide<'s>(
    seen: &'s Seen<'_>,
    suffixes: &mut dyn SuffixSource,
) -> (Decided<'s>, Proposed) {
    let current = seen.current();
    let removals = seen.removals();
    let at_once = deletions(seen, &removals);
    let created = creations(seen, &removals, suffixes);
    let waiting = drains_waiting(seen.cordoned, &seen.pods);
    let budget_blocks = start_blocked(&seen.keeping, &seen.cr_name, &waiting);
    let previous_update = seen.previous_update();
    let (mut limits, limit_problems) = seen.limits(&previous_update);
    // Failure domains that cannot be told hold every step, before the budget does.
    let membership_halt = seen.buckets.as_ref().and_then(HostBuckets::halt);
    limits.start_blocked = membership_halt.as_deref().or(budget_blocks.as_deref());
    let (mut rollout, step) = rollout(seen, &current, &removals, &created.missing, &limits);
    rollout.waits_for_budget &= membership_halt.is_none();
    // A pod is replaced only once its successor can be built.
    let unbuildable = created
        .unbuildable
        .or_else(|| successors_unbuildable(seen, &step.replacing));
    let decided = Decided {
        creating: !created.actions.is_empty() || created.deferred,
        deferred: created.deferred,
        missing: created.missing,
        current,
        previous_update,
        waiting,
        rollout,
        limit_problems,
        unbuildable,
    };
    let proposed = Proposed {
        at_once,
        creations: created.actions,
        step,
    };
    (decided, proposed)
}

/// What must go at once: duplicates on a disk another pod keeps, pods that ended, invalid
/// pods that hold no desired disk left unkept; and invalid ReplicaSets.
fn deletions(seen: &Seen<'_>, removals: &[Removal<'_>]) -> Vec<Action> {
    let in_turn: HashSet<&str> = removals.iter().map(|(p, _, _)| p.name.as_str()).collect();
    let pods = seen.pods.iter().filter_map(|pod| {
        let reason = match &pod.class {
            PodClass::Invalid(_) if in_turn.contains(pod.name.as_str()) => return None,
            PodClass::Invalid(why) => DeleteReason::Invalid(why.clone()),
            PodClass::Ended(phase) => DeleteReason::Ended(phase.clone()),
            _ => return None,
        };
        Some(delete(pod, reason))
    });
    let replica_sets = seen.replica_sets.iter().filter_map(|rs| {
        let ReplicaSetClass::Invalid(why) = &rs.class else {
            return None;
        };
        Some(Action::DeleteReplicaSet {
            name: rs.name.clone(),
            uid: rs.uid.clone(),
            key: rs.key.clone(),
            reason: DeleteReason::Invalid(why.clone()),
        })
    });
    pods.chain(replica_sets).collect()
}

/// Why the successor of a pod about to be replaced could not be built, if so.
fn successors_unbuildable(seen: &Seen<'_>, replacing: &[OsdKey]) -> Option<Unbuildable> {
    replacing
        .iter()
        .filter_map(|key| seen.desired.osds.get(key))
        .find_map(|osd| seen.build(osd, &osd.key.name_prefix()).err())
}
