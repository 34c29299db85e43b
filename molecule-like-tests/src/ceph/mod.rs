//! The Ceph side: a real Ceph cluster of the scenario and the OSD daemons its pods run.
//!
//! - [`cluster`]: a real Ceph cluster (`molecule-like-tests/ceph`) and Ceph's view read
//!   through the admin key (its types re-exported here);
//! - [`bridge`]: runs a real `ceph-osd` for each OSD pod KWOK runs, stops it when the pod is
//!   deleted;
//! - [`gated`]: a scenario with the Ceph gate on over real OSD daemons, and its status recorded;
//!   what the gated journeys look up and check alike (`gated_checks.rs`);
//! - [`steps`]: a rollout's steps as Ceph and the bridge saw them;
//! - [`racks`]: 12 OSDs on 12 hosts in 4 CRUSH racks, and a rollout on it checked by failure
//!   domain.

pub mod bridge;
pub mod cluster;
pub mod gated;
mod gated_checks;
pub mod racks;
pub mod steps;

pub(crate) use cluster::script_command;
pub use cluster::{
    script_path, CephCluster, OsdInfo, OsdMap, OsdStart, PgBrief, PgStat, PoolInfo, PoolSpec,
};
