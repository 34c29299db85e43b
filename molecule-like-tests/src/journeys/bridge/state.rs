//! What the bridge's loop keeps: the pods, the table, the daemons, the faults asked for.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use tokio::sync::{mpsc, watch};

use super::events::Log;
use super::faults::Faults;
use super::slots::{Done, Slots};
use super::table::Table;
use crate::ceph::CephCluster;
use crate::recording::ceph::CephState;

/// The bridge's loop and what it keeps: the pods, the table, the daemons, the faults asked for.
pub(super) struct Bridge {
    pub(super) api: Api<Pod>,
    pub(super) cluster: Arc<CephCluster>,
    pub(super) table: Table,
    pub(super) clock: Instant,
    pub(super) log: Log,
    /// Live pods by uid.
    pub(super) pods: BTreeMap<String, Pod>,
    pub(super) slots: Slots,
    /// (what, uid) already recorded once.
    pub(super) reported: BTreeSet<(String, String)>,
    pub(super) ceph: watch::Receiver<CephState>,
    pub(super) ops: mpsc::UnboundedSender<Done>,
    /// Operations under way.
    pub(super) busy: usize,
    pub(super) faults: watch::Receiver<Faults>,
    /// Pods (uid) without a daemon the bridge deleted (grace 0) once terminating.
    pub(super) removed: BTreeSet<String>,
}
