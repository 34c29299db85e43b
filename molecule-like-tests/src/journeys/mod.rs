//! What ties the other parts together: a scenario (Kubernetes, its pod recorder, the
//! operator), the bridge of pods to real OSD daemons, the gated scenario over Ceph, a journey's
//! milestones, and the fixtures several test binaries share.
//!
//! - [`scenario`]: the lifecycle of one scenario (create, converge, verify, destroy) in a
//!   namespace of its own, with its pod recorder, and the steps the scenarios share;
//! - [`plugin`]: `kubectl ceph-osd` run in a scenario's namespace;
//! - [`cluster`]: a scenario's own Ceph cluster ([`CephCluster::for_scenario`](crate::ceph::CephCluster::for_scenario));
//! - [`bridge`]: runs a real `ceph-osd` for each OSD pod KWOK runs, stops it when the pod is
//!   deleted, boots read from Ceph's recorded view;
//! - [`gated`]: a scenario with the Ceph gate on over real OSD daemons, and its status recorded;
//!   what the gated journeys look up and check alike (`gated_checks.rs`);
//! - [`steps`]: a rollout's steps as Ceph and the bridge saw them;
//! - [`racks`]: 12 OSDs on 12 hosts in 4 CRUSH racks, and a rollout on it checked by failure
//!   domain;
//! - [`milestones`]: a journey's named moments, reported as one aligned table;
//! - [`two_cephosds`]: four hosts and two CephOSDs in one namespace, each holding its own
//!   Ceph lock (the lock tests' fixture).

pub mod bridge;
pub mod cluster;
pub mod gated;
mod gated_checks;
pub mod milestones;
pub mod plugin;
pub mod racks;
pub mod scenario;
pub mod steps;
pub mod two_cephosds;
