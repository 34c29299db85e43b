//! What every reconcile shares: the process's settings, the API client and event recorder,
//! the watch caches, what is remembered of each CephOSD, and Ceph when configured.

use crate::ceph::{CephClient, CliSettings};
use crate::crd::CephOsd;
use crate::runtime::backoff::Backoff;
use crate::runtime::ceph::cluster_lock::CephStepLocks;
use crate::runtime::ceph::gate_questions::GateSettings;
use crate::runtime::memory::Memory;
use crate::runtime::observe::budget_inputs::BudgetCaches;
use crate::runtime::observe::claims_registry::ClaimsRegistry;
use crate::runtime::observe::owned_objects::OwnedObjects;
use crate::runtime::serve::metrics::Metrics;
use kube::runtime::events::Recorder;
use kube::runtime::reflector;
use kube::Client;
use std::sync::Arc;
use std::time::Duration;

/// Settings of one operator process.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Watch only this namespace (None: all namespaces).
    pub namespace: Option<String>,
    /// Periodic resync of every CephOSD.
    pub resync: Duration,
    /// Delay before the first retry of a failed reconcile (doubling up to 5 minutes).
    pub retry: Duration,
    /// How to reach Ceph; `None`: the Ceph gate is off (the `CephGate` condition says so).
    pub ceph: Option<CliSettings>,
    /// How rollout steps are gated.
    pub gate: GateSettings,
}

/// What every reconcile shares.
pub(super) struct Context {
    pub client: Client,
    pub settings: Settings,
    pub recorder: Recorder,
    pub backoff: Backoff,
    pub metrics: Arc<Metrics>,
    /// What is remembered of each CephOSD between reconciles.
    pub memory: Arc<Memory>,
    pub owned: OwnedObjects,
    /// Every CephOSD in the cluster (claims are cluster-wide).
    pub crs: reflector::Store<CephOsd>,
    pub claims: Arc<ClaimsRegistry>,
    /// Ceph, when configured.
    pub ceph: Option<Arc<dyn CephClient>>,
    /// The step lock of that Ceph cluster, when a namespace for it is configured.
    pub ceph_locks: Option<Arc<CephStepLocks>>,
    /// PodDisruptionBudgets (of the watched namespace) and nodes (name and cordon only).
    pub budget_caches: BudgetCaches,
}

/// Whether a CephOSD in `namespace` is reconciled by an operator watching `watched` (None:
/// every namespace).
pub(super) fn in_scope(watched: Option<&str>, namespace: Option<&str>) -> bool {
    watched.is_none_or(|w| namespace == Some(w))
}
