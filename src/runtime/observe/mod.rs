//! What a reconcile observes: the pod and CephOSD watches as decoded, the objects a CephOSD
//! owns (from the caches once they show every write of ours), the disk claims of every
//! CephOSD, what the other CephOSDs hold, and the disruption budget's inputs.

pub(crate) mod budget_inputs;
pub(crate) mod claims_registry;
pub(crate) mod node_labels;
pub(crate) mod other_cephosds;
pub(crate) mod owned_objects;
pub(crate) mod watched_cephosd;
pub(crate) mod watched_pod;
