//! The mon and the mgr restarted on their data with a release of choice: an admin's upgrade
//! of them (`mon-restart --release R`, `mgr-restart --release R`).

use std::time::Duration;

use super::CephCluster;
use crate::ceph::release::Release;

impl CephCluster {
    /// Stops the mon and starts it again of `release` on its store; returns once it answers.
    pub async fn restart_mon(&self, release: Release) -> anyhow::Result<()> {
        let args = ["mon-restart", "--release", release.name()];
        self.run(&args, Duration::from_mins(4)).await.map(drop)
    }

    /// Stops the mgr (the mon told) and starts it again of `release`; returns once the mon
    /// says a mgr is available.
    pub async fn restart_mgr(&self, release: Release) -> anyhow::Result<()> {
        let args = ["mgr-restart", "--release", release.name()];
        self.run(&args, Duration::from_mins(4)).await.map(drop)
    }
}
