//! Part of the decide phase: the pods of missing OSDs, created only where no pod holds their
//! disk.

use crate::crd::desired::DesiredOsd;
use crate::crd::osd::{DeviceId, SuffixSource};
use crate::plan::observed::classify::{ObservedPod, PodClass};
use crate::plan::observed::replica_sets::{ObservedReplicaSet, ReplicaSetClass};
use crate::plan::phases::seen::{Removal, Seen, Unbuildable};
use crate::plan::rules::rollout::Missing;
use crate::plan::says::actions::{Action, CreateReason};
use std::collections::{BTreeSet, HashSet};

/// At most this many pods are created by one plan (one reconcile).
pub const MAX_CREATIONS_PER_PLAN: usize = 1000;

/// The creation step's outcome.
pub(in crate::plan) struct Creations {
    pub(in crate::plan) actions: Vec<Action>,
    /// Desired OSDs without a live pod (nor a Ready pod of another controller, nor a pod
    /// waiting for its turn to go, serving them).
    pub(in crate::plan) missing: Vec<Missing>,
    /// Why a pod could not be built, if one could not.
    pub(in crate::plan) unbuildable: Option<Unbuildable>,
    /// More OSDs lack a pod than one plan creates: the next reconcile follows at once.
    pub(in crate::plan) deferred: bool,
}

/// Pods for missing OSDs, created only once no pod holds their disk at all (never two per
/// device), never while the spec is ambiguous about them or an older CephOSD claims their
/// disk, at most `MAX_CREATIONS_PER_PLAN` at once.
pub(in crate::plan) fn creations(
    seen: &Seen<'_>,
    removals: &[Removal<'_>],
    suffixes: &mut dyn SuffixSource,
) -> Creations {
    let mut out = Creations {
        actions: Vec::new(),
        missing: Vec::new(),
        unbuildable: None,
        deferred: false,
    };
    let lacking = lacking(seen);
    if lacking.is_empty() {
        return out;
    }
    let replica_set_devices: Vec<DeviceId> = seen
        .replica_sets
        .iter()
        .filter_map(ObservedReplicaSet::device)
        .collect();
    let occupied: HashSet<&DeviceId> = seen
        .pods
        .iter()
        .flat_map(ObservedPod::holds)
        .chain(&replica_set_devices)
        .chain(seen.held_elsewhere.keys())
        .collect();
    let served = served(seen, removals);
    // Each OSD lacking a live pod, in rollout order, goes down this ladder: it is missing
    // unless a pod waiting for its turn or a Ready pod of another controller serves it; it
    // gets no pod while any pod holds its disk or the spec is ambiguous about it; past
    // MAX_CREATIONS_PER_PLAN it waits for the next plan; after a pod that could not be built
    // none is built; else its pod is created.
    let mut wanted = 0;
    for osd in lacking {
        let blocked = seen.is_blocked(Some(&osd.key));
        if !served.contains(&osd.device) {
            out.missing.push(Missing {
                key: osd.key.clone(),
                why: why_missing(seen, osd, blocked, &occupied),
            });
        }
        if occupied.contains(&osd.device) || blocked || seen.cordoned.contains(&osd.key.host) {
            continue;
        }
        // A bounded batch: the next reconcile, moments later, creates the rest, and sees a
        // deleted CephOSD, an edited spec or a shutdown in between.
        wanted += 1;
        if wanted > MAX_CREATIONS_PER_PLAN {
            out.deferred = true;
            continue;
        }
        if out.unbuildable.is_some() {
            continue;
        }
        let name = format!("{}{}", osd.key.name_prefix(), suffixes.next_suffix());
        match seen.build(osd, &name) {
            Ok(pod) => out.actions.push(Action::Create {
                key: osd.key.clone(),
                pod: Box::new(pod),
                reason: create_reason(seen, osd),
            }),
            Err(error) => out.unbuildable = Some(error),
        }
    }
    out
}

/// The desired OSDs no live pod (of ours or of the ReplicaSet era) runs, in rollout order.
fn lacking<'s>(seen: &Seen<'s>) -> Vec<&'s DesiredOsd> {
    let mut live = vec![false; seen.desired.osds.len()];
    for pod in seen.pods.iter().chain(&seen.era).filter(|p| p.is_live()) {
        if let Some(flag) = pod.osd.and_then(|i| live.get_mut(i)) {
            *flag = true;
        }
    }
    (seen.desired.osds.values())
        .filter(|o| live.get(o.index) == Some(&false))
        .collect()
}

/// The disks an OSD is served on without a pod of ours: a Ready pod of another controller
/// keeps its OSD available (though not ours); a ReplicaSet's pod only while that ReplicaSet is
/// there and not being deleted: otherwise the garbage collector is about to take the pod down
/// (it may even remove a ReplicaSet before its pods). A pod waiting for its turn to go serves
/// the OSD on its disk too.
fn served<'s>(seen: &'s Seen<'_>, removals: &[Removal<'s>]) -> HashSet<&'s DeviceId> {
    let standing: BTreeSet<&str> = seen
        .replica_sets
        .iter()
        .filter(|rs| rs.class != ReplicaSetClass::Terminating)
        .map(|rs| rs.name.as_str())
        .collect();
    let mut served: HashSet<&DeviceId> = seen
        .pods
        .iter()
        .filter(|p| match &p.class {
            PodClass::Foreign(c) => {
                p.ready && (c.kind != "ReplicaSet" || standing.contains(c.name.as_str()))
            }
            _ => false,
        })
        .filter_map(ObservedPod::device)
        .collect();
    served.extend(
        removals
            .iter()
            .filter_map(|(_, _, osd)| osd.map(|o| &o.device)),
    );
    served
}

/// Why `osd`, which no pod serves, has no pod yet, when that needs words: the first that
/// applies of an older CephOSD listing its disk, a spec ambiguous about it, a pod of another
/// CephOSD holding its disk, and a pod of ours other than its own holding its disk.
fn why_missing(
    seen: &Seen<'_>,
    osd: &DesiredOsd,
    blocked: bool,
    occupied: &HashSet<&DeviceId>,
) -> Option<String> {
    if let Some(holder) = seen.claimed.get(&osd.key) {
        Some(format!("CephOSD {holder}, which is older, lists its disk"))
    } else if blocked {
        Some("the spec is ambiguous about it (see the InvalidSpec condition)".to_owned())
    } else if let Some(by) = seen.held_elsewhere.get(&osd.device) {
        Some(format!("its disk is held by {by}"))
    } else if seen.cordoned.contains(&osd.key.host) {
        Some(format!(
            "node {} is cordoned; its pod is created once the node is uncordoned",
            osd.key.host
        ))
    } else if occupied.contains(&osd.device) {
        // One of ours that is not this OSD's live pod (a terminating predecessor, or a
        // ReplicaSet's pod the garbage collector has yet to reach, is the normal pace of a
        // replacement and needs no words).
        (seen.pods.iter())
            .filter(|p| !matches!(p.class, PodClass::Terminating | PodClass::Foreign(_)))
            .filter(|p| p.osd != Some(osd.index))
            .find(|p| p.holds().any(|d| *d == osd.device))
            .map(|p| format!("pod {} still holds its disk", p.describe()))
    } else {
        None
    }
}

/// Why `osd`'s pod is created: the first that applies of its update domain being replaced
/// (the successor of a pod the rollout took down), an unchanged spec since the last status
/// (its pod vanished), and a new OSD or CephOSD.
fn create_reason(seen: &Seen<'_>, osd: &DesiredOsd) -> CreateReason {
    let same_generation = seen.previous.observed_generation.is_some()
        && seen.previous.observed_generation == seen.cr.metadata.generation;
    let domain = seen.domain_of(&osd.key);
    if seen.previous.current_update.contains(&domain) {
        CreateReason::Replacement
    } else if same_generation {
        CreateReason::Recreate
    } else {
        CreateReason::New
    }
}
