//! What kind of API call failed: the reason of the `ReconcileFailed` condition and of its
//! Warning event, and the `category` label of the error metric.

/// The kind of a failed API call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Failure {
    /// Listing the CephOSD's pods or ReplicaSets.
    ListFailed,
    CreateFailed,
    /// Deleting a pod or a ReplicaSet.
    DeleteFailed,
    /// Patching a pod's `pod-state`.
    PatchFailed,
    /// Writing the CephOSD's status.
    StatusFailed,
}

impl Failure {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ListFailed => "ListFailed",
            Self::CreateFailed => "CreateFailed",
            Self::DeleteFailed => "DeleteFailed",
            Self::PatchFailed => "PatchFailed",
            Self::StatusFailed => "StatusFailed",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
