//! The Kubernetes side: what a scenario creates, runs and reads on the local control plane.
//!
//! - [`scenario`]: the lifecycle of one scenario (create, converge, verify, destroy) in a
//!   namespace of its own, and the steps the scenarios share;
//! - [`manifests`]: CephOSD manifests, the reference sample, the fake kubelet's
//!   [`Knobs`](manifests::Knobs), host names of a scenario's own;
//! - [`pods`]: reading and describing pods;
//! - [`nodes`]: the fake Nodes (managed by KWOK) that the CephOSDs' hosts name;
//! - [`rbac`]: deploy/'s RBAC objects, applied where a test needs them;
//! - [`operator`]: the operator under test as a child process;
//! - [`plugin`]: `kubectl ceph-osd` run in a scenario's namespace.

pub mod manifests;
pub mod nodes;
pub mod operator;
pub mod plugin;
pub mod pods;
pub mod rbac;
pub mod scenario;
