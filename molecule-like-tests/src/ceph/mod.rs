//! The Ceph side: a real Ceph cluster of its own for a test, and Ceph's view read through its
//! admin key (OSD map, PG states, pools, CRUSH). The OSD daemons the pods run, and the
//! scenarios over them, are in `journeys`.
//!
//! - [`cluster`]: a real Ceph cluster (`molecule-like-tests/ceph`) and Ceph's view (its types
//!   re-exported here).
//! - [`release`]: the Ceph releases its daemons run (Pacific, Reef) and their versions.

pub mod cluster;
pub mod release;

pub(crate) use cluster::script_command;
pub use cluster::{
    script_path, CephCluster, OsdInfo, OsdMap, OsdStart, PgBrief, PgStat, PoolInfo, PoolSpec,
};
pub use release::Release;
