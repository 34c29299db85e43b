//! The Kubernetes side: clients of the local control plane and what a test creates, runs and
//! reads on it.
//!
//! - [`client`]: clients from a kubeconfig, and the cluster admin's one;
//! - [`manifests`]: CephOSD manifests, the reference sample, the fake kubelet's
//!   [`Knobs`](manifests::Knobs), host names of a scenario's own;
//! - [`pods`]: reading and describing pods;
//! - [`nodes`]: the fake Nodes (managed by KWOK) that the CephOSDs' hosts name;
//! - [`rbac`]: deploy/'s RBAC objects, applied where a test needs them;
//! - [`operator`]: the operator under test as a child process.

pub mod client;
pub mod manifests;
pub mod nodes;
pub mod operator;
pub mod pods;
pub mod rbac;
