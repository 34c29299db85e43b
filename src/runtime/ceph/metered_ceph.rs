//! The Ceph client the operator runs: every command counted and timed in the metrics
//! (`ceph_osd_operator_ceph_commands_total`, `…_ceph_command_seconds_total`), by command.

use crate::ceph::{
    CephClient, CephError, ClusterStatus, CrashReport, CrushRule, CrushTree, DaemonReleases,
    OkToStop, OsdDump, OsdId, OsdMetadata, OsdUsage, PgBrief, PgStates, PoolRule, Release,
    SafeToDestroy,
};
use crate::runtime::serve::metrics::Metrics;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

pub(crate) struct MeteredCeph {
    pub inner: Arc<dyn CephClient>,
    pub metrics: Arc<Metrics>,
}

impl MeteredCeph {
    fn timed<'a, T: Send + 'a>(
        &'a self,
        command: &'static str,
        call: impl Future<Output = T> + Send + 'a,
    ) -> BoxFuture<'a, T> {
        async move {
            let started = Instant::now();
            let out = call.await;
            self.metrics.ceph_command(command, started.elapsed());
            out
        }
        .boxed()
    }
}

impl CephClient for MeteredCeph {
    fn status(&self) -> BoxFuture<'_, Result<ClusterStatus, CephError>> {
        self.timed("status", self.inner.status())
    }

    fn pg_states(&self) -> BoxFuture<'_, Result<PgStates, CephError>> {
        self.timed("pg stat", self.inner.pg_states())
    }

    fn pgs_on_osd(&self, id: OsdId) -> BoxFuture<'_, Result<Vec<PgBrief>, CephError>> {
        self.timed("pg ls-by-osd", self.inner.pgs_on_osd(id))
    }

    fn osd_dump(&self) -> BoxFuture<'_, Result<OsdDump, CephError>> {
        self.timed("osd dump", self.inner.osd_dump())
    }

    fn osd_metadata(&self) -> BoxFuture<'_, Result<BTreeMap<OsdId, OsdMetadata>, CephError>> {
        self.timed("osd metadata", self.inner.osd_metadata())
    }

    fn versions(&self) -> BoxFuture<'_, Result<DaemonReleases, CephError>> {
        self.timed("versions", self.inner.versions())
    }

    fn require_osd_release(&self, release: Release) -> BoxFuture<'_, Result<(), CephError>> {
        self.timed(
            "osd require-osd-release",
            self.inner.require_osd_release(release),
        )
    }

    fn ok_to_stop<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<OkToStop, CephError>> {
        self.timed("osd ok-to-stop", self.inner.ok_to_stop(ids))
    }

    fn add_noout<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.timed("osd add-noout", self.inner.add_noout(ids))
    }

    fn rm_noout<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.timed("osd rm-noout", self.inner.rm_noout(ids))
    }

    fn osd_out<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.timed("osd out", self.inner.osd_out(ids))
    }

    fn osd_in<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.timed("osd in", self.inner.osd_in(ids))
    }

    fn osd_df(&self) -> BoxFuture<'_, Result<BTreeMap<OsdId, OsdUsage>, CephError>> {
        self.timed("osd df", self.inner.osd_df())
    }

    fn recovery_rate(&self) -> BoxFuture<'_, Result<u64, CephError>> {
        self.timed("status", self.inner.recovery_rate())
    }

    fn osd_destroy(&self, id: OsdId) -> BoxFuture<'_, Result<(), CephError>> {
        self.timed("osd destroy", self.inner.osd_destroy(id))
    }

    fn safe_to_destroy<'a>(
        &'a self,
        ids: &'a [OsdId],
    ) -> BoxFuture<'a, Result<SafeToDestroy, CephError>> {
        self.timed("osd safe-to-destroy", self.inner.safe_to_destroy(ids))
    }

    fn new_crashes(&self) -> BoxFuture<'_, Result<Vec<CrashReport>, CephError>> {
        self.timed("crash ls-new", self.inner.new_crashes())
    }

    fn crush_tree(&self) -> BoxFuture<'_, Result<CrushTree, CephError>> {
        self.timed("osd crush tree", self.inner.crush_tree())
    }

    fn crush_rules(&self) -> BoxFuture<'_, Result<BTreeMap<i64, CrushRule>, CephError>> {
        self.timed("osd crush rule dump", self.inner.crush_rules())
    }

    fn pool_rules(&self) -> BoxFuture<'_, Result<Vec<PoolRule>, CephError>> {
        self.timed("osd pool ls detail", self.inner.pool_rules())
    }

    fn config_key_get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, CephError>> {
        self.timed("config-key get", self.inner.config_key_get(key))
    }

    fn config_key_set<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
    ) -> BoxFuture<'a, Result<(), CephError>> {
        self.timed("config-key set", self.inner.config_key_set(key, value))
    }

    fn keeps_connected(&self) -> bool {
        self.inner.keeps_connected()
    }
}

#[cfg(test)]
mod tests;
