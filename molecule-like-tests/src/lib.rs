//! The molecule-like test harness: fixtures and checks for the end-to-end tests, which run
//! against the local Kubernetes started by `molecule-like-tests/control-plane` (kube-apiserver,
//! kube-controller-manager, kube-scheduler, KWOK; see `molecule-like-tests/README.md`).
//!
//! Its parts, in order; each uses only those before it (checked by `tests/layers/`), and
//! nothing inside uses this root:
//! - [`paths`]: the workspace, the build output, the binaries, the control plane's state dir
//!   and kubeconfigs;
//! - [`kubernetes`]: the Kubernetes side: clients, CephOSD manifests, pods, Nodes, RBAC, the
//!   operator under test;
//! - [`ceph`]: the Ceph side: a real Ceph cluster and Ceph's view read through its admin key;
//! - [`recording`]: recorders of the pod watch and of Ceph's view, and the invariants checked
//!   on what they recorded;
//! - [`journeys`]: what ties the parts together: a scenario's lifecycle, the bridge that runs
//!   a real `ceph-osd` for each OSD pod, the gated scenario, a journey's milestones, fixtures
//!   several test binaries share.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

pub mod ceph;
pub mod journeys;
pub mod kubernetes;
pub mod paths;
pub mod recording;
