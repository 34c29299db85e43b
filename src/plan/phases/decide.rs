//! The decide phase: what the plan would do before the gate and the order (the deletions
//! that go at once, the creations, the proposed rollout step), and whether every pod it needs
//! can be built.

pub(in crate::plan) mod creations;
pub(in crate::plan) mod proposal;

use crate::crd::osd::{OsdKey, SuffixSource};
use crate::plan::observed::classify::{ObservedPod, PodClass};
use crate::plan::observed::replica_sets::ReplicaSetClass;
use crate::plan::phases::decide::creations::creations;
use crate::plan::phases::decide::proposal::{delete, rollout, Rollout, StepDeletions};
use crate::plan::phases::seen::{Removal, Seen, Unbuildable};
use crate::plan::rules::budget::{drains_waiting, start_blocked};
use crate::plan::rules::rollout::Missing;
use crate::plan::says::actions::{Action, DeleteReason};
use crate::plan::says::conditions::SpecProblem;
use crate::plan::topology::HostBuckets;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// What the decide phase found, read by the later phases.
pub(in crate::plan) struct Decided<'s> {
    /// The live pods of desired OSDs, then the era ReplicaSets standing for theirs.
    pub(in crate::plan) current: Vec<&'s ObservedPod>,
    /// The update domains the previous status listed as being replaced.
    pub(in crate::plan) previous_update: BTreeSet<&'s str>,
    /// Desired OSDs that no pod serves.
    pub(in crate::plan) missing: Vec<Missing>,
    /// Pods are being created, or wait to be: the marks wait.
    pub(in crate::plan) creating: bool,
    /// More OSDs lack a pod than one plan creates: the next reconcile follows at once.
    pub(in crate::plan) deferred: bool,
    /// Cordoned hosts where OSD pods of ours still run, with how many: their drains wait.
    pub(in crate::plan) waiting: BTreeMap<String, usize>,
    pub(in crate::plan) rollout: Rollout,
    /// What cannot be read of `partition` and the canary.
    pub(in crate::plan) limit_problems: Vec<SpecProblem>,
    /// Why a pod this plan needs (a missing OSD's, or the successor of a pod the step takes
    /// down) cannot be built: the plan then makes no write at all.
    pub(in crate::plan) unbuildable: Option<Unbuildable>,
}

/// The writes the decide phase proposes, in their phases' terms.
pub(in crate::plan) struct Proposed {
    /// What must go at once.
    pub(in crate::plan) at_once: Vec<Action>,
    /// The pods of missing OSDs.
    pub(in crate::plan) creations: Vec<Action>,
    /// The rollout step's deletions, for the gate to let go or hold.
    pub(in crate::plan) step: StepDeletions,
}

/// Decides what `seen` calls for: the deletions that go at once, the creations (pod names
/// from `suffixes`), and the rollout step within `maxUnavailable`, `partition`, the canary
/// and the disruption budget.
pub(in crate::plan) fn decide<'s>(
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
    // A disk replacement destroying its id or preparing its new disk holds every step too.
    let replacing = seen.replacement_hold.as_deref();
    limits.start_blocked = (membership_halt.as_deref())
        .or(replacing)
        .or(budget_blocks.as_deref());
    let (mut rollout, step) = rollout(seen, &current, &removals, &created.missing, &limits);
    rollout.waits_for_budget &= membership_halt.is_none() && replacing.is_none();
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
