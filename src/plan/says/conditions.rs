//! The vocabulary of a CephOSD's status conditions: their types and reasons.

use crate::plan::says::failure::Failure;

/// The type of a status condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ConditionType {
    /// Every desired OSD has a Ready, up-to-date pod.
    Ready,
    /// Pods are being created, replaced or removed (or why not).
    Progressing,
    /// A replacement is past its progress deadline.
    Stalled,
    /// The spec is ambiguous or cannot be built; what is affected is not acted on.
    InvalidSpec,
    /// OSDs still run under ReplicaSets of the Ansible operator.
    Migrating,
    /// The last reconcile's API call failed (gone after the next success).
    ReconcileFailed,
    /// Whether rollout steps ask Ceph, and what Ceph says.
    CephGate,
    /// Whether the operator keeps the disruption budget, and what it admits.
    DisruptionBudget,
    /// Whether the new template's images are on the nodes of the next update domains.
    PrePull,
    /// Whether every OSD of the spec's keys is `in` in Ceph, or which are out and why.
    OsdsIn,
    /// A finalize an admin asked for (`require_osd_release` raised), or why not yet.
    Finalized,
}

impl ConditionType {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "Ready",
            Self::Progressing => "Progressing",
            Self::Stalled => "Stalled",
            Self::InvalidSpec => "InvalidSpec",
            Self::Migrating => "Migrating",
            Self::ReconcileFailed => "ReconcileFailed",
            Self::CephGate => "CephGate",
            Self::DisruptionBudget => "DisruptionBudget",
            Self::PrePull => "PrePull",
            Self::OsdsIn => "OsdsIn",
            Self::Finalized => "Finalized",
        }
    }
}

/// Why a condition has its status (grouped by the condition that uses it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionReason {
    // Ready
    AllOsdsReady,
    OsdsNotReady,
    // Progressing (and Stalled)
    ProgressDeadlineExceeded,
    Paused,
    Complete,
    Halted,
    RollingUpdate,
    WaitingForNodes,
    /// No rollout step starts until the disruption budget has room for it.
    WaitingForDisruptionBudget,
    /// The rollout reached `spec.partition`: the last out-of-date domains stay.
    Partitioned,
    /// The canary's domains are replaced: the template waits for a promotion.
    CanaryWaiting,
    /// The rollout's Ceph step is ending (its new daemons booting, its PGs re-peering): the
    /// next step, or completion, follows when Ceph says it ended.
    CephStepEnding,
    /// Ceph is being asked whether the next update domain may stop.
    AskingCeph,
    /// OSDs the operator marked out are back in the spec: marked in once their daemon is up.
    MarkingIn,
    Reconciling,
    // Stalled
    WithinDeadline,
    /// A daemon of the current template crashed (Ceph's new crash report names it).
    OsdCrashed,
    // InvalidSpec
    SpecValid,
    InvalidStorage,
    ConflictingDevices,
    ForbiddenTemplateField,
    InvalidPodTemplate,
    /// An OSD's disk is listed by an older CephOSD.
    DiskClaimed,
    /// `spec.partition` or `spec.canary` cannot be read: nothing is replaced.
    InvalidRolloutControl,
    // Migrating
    NoReplicaSets,
    ReplicaSetEra,
    // ReconcileFailed
    Failed(Failure),
    // CephGate
    /// No step open and none to start.
    CephIdle,
    NotConfigured,
    Skipped,
    /// Ceph is being asked about the next step.
    Asking,
    StepInProgress,
    /// `noout` was held longer than allowed and cleared.
    NooutExpired,
    /// An open step's Ceph cluster step lock was found deleted or another's.
    StepLockLost,
    /// Ceph does not let the next step start: the first blocker's category.
    CephBlocked(&'static str),
    // DisruptionBudget
    /// The operator keeps the PodDisruptionBudget and it admits what it should.
    BudgetManaged,
    /// Kept, but not yet as planned: written, or the disruption controller has to catch up.
    BudgetPending,
    /// `spec.disruptionBudget: Off`.
    BudgetOff,
    /// A PodDisruptionBudget of someone else selects the OSD pods: the operator keeps none.
    ForeignBudget,
    // PrePull
    /// The images are on the nodes of the next update domains.
    Pulled,
    /// No update domain waits for the template's images.
    NothingToPull,
    /// A pre-pull pod has not pulled yet: its domain's step waits (up to the deadline).
    Pulling,
    /// A pull failed, or a preflight command exited non-zero: the rollout holds.
    PullFailed,
    /// A step went ahead without its images (past the deadline).
    PullDeadlineExceeded,
    // OsdsIn
    /// Every OSD of the spec's keys that Ceph knows is in.
    AllOsdsIn,
    /// Some are out: each named, with who marked it out.
    OsdsOut,
    // Finalized
    /// `require_osd_release` is the release asked for.
    ReleaseRequired,
    /// It is being raised.
    RaisingRelease,
    /// Not yet: why (`MonitorsOlder`, `OsdsOlder`, `NotARelease`, `CephUnanswered`).
    NotFinalized(&'static str),
}

impl ConditionReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AllOsdsReady => "AllOsdsReady",
            Self::OsdsNotReady => "OsdsNotReady",
            Self::ProgressDeadlineExceeded => "ProgressDeadlineExceeded",
            Self::Paused => "Paused",
            Self::Complete => "Complete",
            Self::Halted => "Halted",
            Self::RollingUpdate => "RollingUpdate",
            Self::WaitingForNodes => "WaitingForNodes",
            Self::WaitingForDisruptionBudget => "WaitingForDisruptionBudget",
            Self::Partitioned => "Partitioned",
            Self::CanaryWaiting => "CanaryWaiting",
            Self::CephStepEnding => "CephStepEnding",
            Self::AskingCeph => "AskingCeph",
            Self::MarkingIn => "MarkingIn",
            Self::InvalidRolloutControl => "InvalidRolloutControl",
            Self::Reconciling => "Reconciling",
            Self::WithinDeadline => "WithinDeadline",
            Self::OsdCrashed => "OsdCrashed",
            Self::SpecValid => "SpecValid",
            Self::InvalidStorage => "InvalidStorage",
            Self::ConflictingDevices => "ConflictingDevices",
            Self::ForbiddenTemplateField => "ForbiddenTemplateField",
            Self::InvalidPodTemplate => "InvalidPodTemplate",
            Self::DiskClaimed => "DiskClaimed",
            Self::NoReplicaSets => "NoReplicaSets",
            Self::ReplicaSetEra => "ReplicaSetEra",
            Self::Failed(failure) => failure.as_str(),
            Self::CephIdle => "CephIdle",
            Self::NotConfigured => "NotConfigured",
            Self::Skipped => "Skipped",
            Self::Asking => "Asking",
            Self::StepInProgress => "StepInProgress",
            Self::NooutExpired => "NooutExpired",
            Self::StepLockLost => "StepLockLost",
            Self::CephBlocked(category) => category,
            Self::BudgetManaged => "BudgetManaged",
            Self::BudgetPending => "BudgetPending",
            Self::BudgetOff => "BudgetOff",
            Self::ForeignBudget => "ForeignBudget",
            Self::Pulled => "Pulled",
            Self::NothingToPull => "NothingToPull",
            Self::Pulling => "Pulling",
            Self::PullFailed => "PullFailed",
            Self::PullDeadlineExceeded => "PullDeadlineExceeded",
            Self::AllOsdsIn => "AllOsdsIn",
            Self::OsdsOut => "OsdsOut",
            Self::ReleaseRequired => "ReleaseRequired",
            Self::RaisingRelease => "RaisingRelease",
            Self::NotFinalized(reason) => reason,
        }
    }
}

impl std::fmt::Display for ConditionReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a condition computed outside the status module says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StatedCondition {
    pub holds: bool,
    pub reason: ConditionReason,
    pub message: String,
}

/// One thing wrong with the spec, for the `InvalidSpec` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecProblem {
    /// The condition's reason when this is the first problem.
    pub reason: ConditionReason,
    pub message: String,
}
