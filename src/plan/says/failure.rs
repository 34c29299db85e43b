//! What kind of API call failed: the reason of the `ReconcileFailed` condition and of its
//! Warning event, and the `category` label of the error metric.

/// The kind of a failed API call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Failure {
    /// Listing the CephOSD's pods or ReplicaSets.
    List,
    Create,
    /// Deleting a pod or a ReplicaSet.
    Delete,
    /// Patching a pod's `pod-state`.
    Patch,
    /// Writing the CephOSD's status.
    Status,
    /// Setting or clearing `noout` failed, or Ceph could not be asked.
    Ceph,
    /// `osd dump` does not show the `noout` just set or cleared.
    NooutNotConfirmed,
    /// A step's `noout` read back beside another's its question did not cover: another
    /// step opened on the Ceph cluster meanwhile.
    StepsCrossed,
    /// Writing or deleting the CephOSD's PodDisruptionBudget (a reservation that lost to an
    /// eviction included).
    Budget,
}

impl Failure {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::List => "ListFailed",
            Self::Create => "CreateFailed",
            Self::Delete => "DeleteFailed",
            Self::Patch => "PatchFailed",
            Self::Status => "StatusFailed",
            Self::Ceph => "CephFailed",
            Self::NooutNotConfirmed => "NooutNotConfirmed",
            Self::StepsCrossed => "StepsCrossed",
            Self::Budget => "DisruptionBudgetFailed",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
