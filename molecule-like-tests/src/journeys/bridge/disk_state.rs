//! Where a failed disk stands in the bridge (`disks` moves it on).

/// A disk that failed, until its next pod has prepared an id on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum DiskState {
    /// To fail once its daemon neither starts nor stops.
    Failing,
    /// Its daemon being killed and its data wiped.
    Wiping,
    /// Wiped: its next pod prepares an id.
    Blank,
    /// The prepare step of pod (uid) runs.
    Preparing(String),
}
