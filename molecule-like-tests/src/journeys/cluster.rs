//! A scenario's own Ceph cluster: [`CephCluster::for_scenario`] brings one up beside the
//! scenario's log.

use crate::ceph::CephCluster;
use crate::journeys::scenario::Scenario;
use crate::paths::output_dir;

impl CephCluster {
    /// A cluster in `<the scenario's log dir>/ceph`: `osds` OSDs in CRUSH hosts `host-0..`
    /// with the test pool, or with `osds == 0` the mon and the mgr only (the OSDs come from
    /// [`Self::osd_create`], the pool from [`Self::pool_create`]).
    pub async fn for_scenario(s: &Scenario, osds: usize) -> anyhow::Result<Self> {
        let dir = s
            .log_path
            .parent()
            .map_or_else(|| output_dir().join("ceph"), |d| d.join("ceph"));
        Self::up(dir, osds).await
    }
}
