//! Deletion is a rollout too, pure. The operator's finalizer keeps a deleted CephOSD until its
//! pods are gone and no Ceph step of it is open. Deleted with kubectl's default (background)
//! cascade, every key leaves the spec: its pods (those that name it as owner, the Ansible
//! operator's too) go one update domain at a time as removals do. With `--cascade=orphan` the
//! garbage collector first takes the pods' ownerReferences away: pods that no longer name this
//! CephOSD are not its to take down (one it missed, created while it worked, the operator
//! lets go of itself). With
//! `--cascade=foreground`, or its namespace deleted, Kubernetes deletes every pod at once:
//! the operator only ends its open step (clears its own `noout`) and says what happened.

use crate::ceph::{osd_list, OsdId};
use crate::crd::{CephOsd, CephOsdStatus, CephStep};
use crate::plan::gate::{GateCondition, GateOutcome};
use crate::plan::says::actions::Action;
use crate::plan::says::conditions::ConditionReason;
use crate::plan::says::events::{EventReason, PlannedEvent};
use k8s_openapi::jiff::SignedDuration;
use std::collections::BTreeMap;

/// The operator's finalizer on every CephOSD it reconciles.
pub(crate) const FINALIZER: &str = "ceph.elemental.net/osds";
/// The garbage collector's finalizers for `--cascade=orphan` and `--cascade=foreground`.
const ORPHAN: &str = "orphan";
const FOREGROUND: &str = "foregroundDeletion";

/// What an orphaned deletion leaves.
pub(crate) const ORPHANED: &str = "it was deleted with --cascade=orphan: its OSD pods keep running";

/// How a CephOSD is being deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deletion {
    /// The operator takes the pods it controls down, one update domain at a time.
    Rollout,
    /// `--cascade=orphan`: the garbage collector is still taking the pods' ownerReferences
    /// away; nothing is done until it is through.
    Orphaning,
    /// `--cascade=orphan`, the garbage collector through: it let go of the pods it saw; a pod
    /// of this CephOSD it missed (created while it worked) the operator lets go of too, so
    /// every OSD keeps running.
    Orphaned,
    /// Kubernetes deletes every pod at once (the reason said).
    AtOnce(&'static str),
}

/// What to do with the operator's finalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FinalizerWrite {
    Add,
    Remove,
}

fn finalizers(cr: &CephOsd) -> &[String] {
    cr.metadata.finalizers.as_deref().unwrap_or_default()
}

fn has(cr: &CephOsd, finalizer: &str) -> bool {
    finalizers(cr).iter().any(|f| f == finalizer)
}

/// Whether the operator's finalizer is on `cr`.
pub(crate) fn is_held(cr: &CephOsd) -> bool {
    has(cr, FINALIZER)
}

/// How `cr` is being deleted (None: it is not); `namespace_terminating`: its namespace is
/// being deleted.
pub(crate) fn deletion_of(cr: &CephOsd, namespace_terminating: bool) -> Option<Deletion> {
    cr.metadata.deletion_timestamp.as_ref()?;
    Some(if has(cr, ORPHAN) {
        Deletion::Orphaning
    } else if has(cr, FOREGROUND) {
        Deletion::AtOnce("it was deleted with --cascade=foreground")
    } else if namespace_terminating {
        Deletion::AtOnce("its namespace is being deleted")
    } else {
        Deletion::Rollout
    })
}

/// A deletion the metadata says is a rollout, checked against the pods. A live pod of this
/// CephOSD (its owner label) that nothing controls (`orphans_left`) was let go by the garbage
/// collector of `--cascade=orphan`, through before the operator looked: the deletion is that
/// one. At the operator's first look at the deleted CephOSD (`previous`, the last status,
/// still counts the spec's running OSDs) with none of its pods left (`pods_left`): the
/// operator's finalizer keeps a background cascade from taking them, so Kubernetes deleted
/// them all at once (the garbage collector of a foreground cascade can be through, its
/// finalizer gone, before the operator looks).
pub(crate) fn checked_against_pods(
    read: Option<Deletion>,
    previous: &CephOsdStatus,
    pods_left: bool,
    orphans_left: bool,
) -> Option<Deletion> {
    let first_look = previous.desired > 0 && previous.current > 0;
    match read {
        Some(Deletion::Rollout) if orphans_left => Some(Deletion::Orphaned),
        Some(Deletion::Rollout) if first_look && !pods_left => Some(Deletion::AtOnce(
            "its pods were all deleted before the operator saw it deleted, as \
             --cascade=foreground or a namespace's deletion does",
        )),
        other => other,
    }
}

/// The finalizer write due: added to a CephOSD that lacks it (one metadata write), removed
/// once a deleted one has no pod left (`pods_left`) and no Ceph step open (`step_open`).
pub(crate) fn finalizer_write(
    cr: &CephOsd,
    deletion: Option<Deletion>,
    pods_left: bool,
    step_open: bool,
) -> Option<FinalizerWrite> {
    match deletion {
        None => (!is_held(cr)).then_some(FinalizerWrite::Add),
        Some(Deletion::Orphaning) => None,
        Some(_) => (is_held(cr) && !pods_left && !step_open).then_some(FinalizerWrite::Remove),
    }
}

fn says(holds: bool, reason: ConditionReason, message: String) -> GateCondition {
    GateCondition {
        holds,
        reason,
        message,
    }
}

fn ids_of(ids: &[u32]) -> Vec<OsdId> {
    ids.iter().copied().map(OsdId).collect()
}

/// A rollout step (not a drain) open when the deletion began: its OSDs are leaving now. The
/// step ends with its own `noout` cleared; deleted as a rollout with pods of it left
/// (`pods_left`), its OSDs are marked out too (a pod of theirs still running is then drained
/// as every leaving key is; Ceph moves the data of one that is down). Orphaned (the pods
/// keep running, not ours) or deleted at once (they are gone), only the `noout` goes. Ended,
/// not rewritten: writes that fail keep the step recorded, so the next plan ends it again.
/// None: the gate's rules apply (no step, or a drain, which ends once its pods are gone).
pub(crate) fn open_step_at_deletion(
    deletion: Deletion,
    open: &CephStep,
    pods_left: bool,
) -> Option<GateOutcome> {
    if open.drain.is_some() || deletion == Deletion::Orphaning {
        return None;
    }
    let keys = open.keys.join(", ");
    let ids: Vec<u32> = open.osds.iter().map(|o| o.id).collect();
    let mut out = GateOutcome::new(says(true, ConditionReason::CephIdle, String::new()));
    out.requeue_after = Some(SignedDuration::from_secs(1));
    let mut note = format!("the CephOSD is being deleted while a step on {keys} was under way");
    if !open.noout.is_empty() {
        out.first.push(Action::ClearNoout {
            ids: ids_of(&open.noout),
        });
        note.push_str(&format!(
            "; noout on {} cleared",
            osd_list(&ids_of(&open.noout))
        ));
    }
    if deletion == Deletion::Rollout && pods_left && !ids.is_empty() {
        out.first.push(Action::MarkOut { ids: ids_of(&ids) });
        note.push_str(&format!(
            "; {} marked out: leaving, drained before a pod of theirs stops",
            osd_list(&ids_of(&ids))
        ));
    }
    note.push_str(": the step ends");
    out.condition.message.clone_from(&note);
    out.events.push(PlannedEvent {
        warning: false,
        reason: EventReason::Deleting,
        note,
        pod: None,
    });
    Some(out)
}

/// The Warning of a CephOSD whose pods Kubernetes deletes at once: which OSDs went down
/// together (`known`: the OSD ids of each key, as last known).
pub(crate) fn went_at_once(why: &str, known: &BTreeMap<String, Vec<u32>>) -> PlannedEvent {
    let ids: Vec<OsdId> = known.values().flatten().copied().map(OsdId).collect();
    let keys = known.keys().cloned().collect::<Vec<_>>().join(", ");
    let what = if known.is_empty() {
        "every OSD pod of it went down at once".to_owned()
    } else {
        format!("{} ({keys}) went down at once", osd_list(&ids))
    };
    PlannedEvent {
        warning: true,
        reason: EventReason::Deleting,
        note: format!(
            "{why}: Kubernetes deleted every pod of this CephOSD together, whatever the \
             operator does; {what}. `kubectl delete --cascade=orphan` keeps the OSDs running"
        ),
        pod: None,
    }
}
