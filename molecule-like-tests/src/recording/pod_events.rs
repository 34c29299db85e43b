//! What a pod watch records: each event, its kind and the pod as it was then.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

/// What a watch event said about a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
}

/// One recorded watch event.
#[derive(Clone, Debug)]
pub struct PodEvent {
    /// Position in the recording (0, 1, 2, …).
    pub seq: usize,
    /// Time since the recorder started.
    pub at: Duration,
    pub kind: EventKind,
    pub pod: Pod,
}
