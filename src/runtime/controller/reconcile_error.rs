//! Why a reconcile failed, and the failure's category in the metrics.

use crate::plan::says::failure::Failure;
use crate::runtime::act::executor::ExecuteError;

#[derive(Debug, thiserror::Error)]
pub(super) enum ReconcileError {
    #[error("failed to list the pods or ReplicaSets of CephOSD {cr}: {source}")]
    List {
        cr: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to read CephOSD {cr} again before taking pods down: {source}")]
    Get {
        cr: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to {what} the finalizer of CephOSD {cr}: {source}")]
    Finalizer {
        cr: String,
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Execute(#[from] ExecuteError),
}

impl ReconcileError {
    pub(super) fn category(&self) -> Failure {
        match self {
            Self::List { .. } | Self::Get { .. } => Failure::List,
            Self::Finalizer { .. } => Failure::Patch,
            Self::Execute(e) => e.category(),
        }
    }
}
