//! The writes a plan asks for, and why: the vocabulary between the planner, the executor and
//! the runtime's bookkeeping. Data only.

use crate::ceph::{OsdId, Release};
use crate::crd::osd::OsdKey;
use crate::labels::PodState;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

/// Why a pod is deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeleteReason {
    Invalid(String),
    Ended(String),
    /// Its OSD is no longer in the CR.
    Superfluous,
    /// Rolling update: out-of-date, its successor follows once it is gone.
    Replace,
}

/// Why a pod is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateReason {
    /// An OSD new to the CR (or the CR is new).
    New,
    /// The successor of a pod replaced by the rollout.
    Replacement,
    /// The OSD's pod vanished (deleted by hand, evicted, ended).
    Recreate,
}

/// One API write.
#[derive(Clone, Debug)]
pub enum Action {
    Delete {
        name: String,
        uid: Option<String>,
        key: Option<OsdKey>,
        reason: DeleteReason,
    },
    /// Deletes a ReplicaSet of the Ansible operator with foreground propagation (its pod goes
    /// with it; the ReplicaSet controller recreates nothing).
    DeleteReplicaSet {
        name: String,
        uid: Option<String>,
        key: Option<OsdKey>,
        reason: DeleteReason,
    },
    Create {
        key: OsdKey,
        pod: Box<Pod>,
        reason: CreateReason,
    },
    PatchState {
        name: String,
        key: OsdKey,
        state: PodState,
    },
    /// Writes the planned status (which holds the Ceph step being started) before anything
    /// else: a restarted or new leader finishes the step and clears exactly its `noout`.
    RecordCephStep,
    /// Sets `noout` on `ids`, confirmed by reading `osd dump` back: the opening of a step.
    /// `covered`: every OSD whose `noout` the step's question covered (its own, those asked
    /// about together with them, this CephOSD's ended step's). A flag the read-back shows on
    /// any other OSD is another step opened meanwhile: the `noout` just set is cleared again
    /// and the plan fails before a pod goes (the next question asks about both).
    SetNoout {
        ids: Vec<OsdId>,
        covered: Vec<OsdId>,
    },
    /// Clears `noout` on these OSDs, confirmed by reading `osd dump` back.
    ClearNoout { ids: Vec<OsdId> },
    /// Marks these OSDs out (a removal's drain: their data moves), confirmed by `osd dump`.
    MarkOut { ids: Vec<OsdId> },
    /// Marks these OSDs in again (their key is back in the spec), confirmed by `osd dump`.
    MarkIn { ids: Vec<OsdId> },
    /// Destroys OSD `id` for a disk replacement (`osd destroy`: its id, CRUSH place and weight
    /// stay), only while the OSD map is still at `epoch`, the one its `safe-to-destroy` passed
    /// at: any change since asks again.
    DestroyOsd { id: OsdId, epoch: u64 },
    /// Raises the cluster's `require_osd_release` (a finalize an admin asked for), confirmed
    /// by `osd dump`.
    RequireOsdRelease { release: Release },
    /// Takes this CephOSD's ownerReference (`owner_uid`) off a pod (the one with `uid`): the
    /// garbage collector of `--cascade=orphan` missed it, and it keeps running on its own.
    LetGo {
        name: String,
        uid: Option<String>,
        owner_uid: String,
    },
    /// Sets the label naming a pod's update domain (the disruption budget selects by it).
    LabelDomain { name: String, value: String },
    /// Creates the CephOSD's PodDisruptionBudget (`resource_version: None`), or writes its
    /// spec; with the version it was read at, when the write reserves update domains for the
    /// rollout: an eviction admitted since then fails the write, and no pod is taken down.
    WriteBudget {
        budget: Box<PodDisruptionBudget>,
        exists: bool,
        resource_version: Option<String>,
    },
    /// Creates a pod that pulls the new template's images onto `node` ahead of its step.
    CreatePrePull { node: String, pod: Box<Pod> },
    /// Deletes a pre-pull pod (its step started, the template changed, the rollout ended).
    DeletePrePull { name: String, uid: Option<String> },
    /// Deletes the CephOSD's PodDisruptionBudget.
    DeleteBudget { name: String, uid: Option<String> },
}
