//! What the bridge's loop keeps: the pods, the table, the daemons, the faults asked for, the
//! failed disks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use tokio::sync::{mpsc, watch};

use super::disk_state::DiskState;
use super::events::Log;
use super::faults::Faults;
use super::slots::{Done, Slots};
use super::table::{Disk, Table};
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
    /// Disks failed ([`super::CephBridge::fail_disk`]) until their next pod prepared an id.
    pub(super) disks: BTreeMap<Disk, DiskState>,
    /// Pods (uid) left without a daemon by a disk's fault (their disk failed under them, or
    /// their prepare step failed): deleted at once once terminating.
    pub(super) faulted: BTreeSet<String>,
    /// Prepares still to fail, by disk ([`super::CephBridge::fail_prepare`]).
    pub(super) failing_prepares: BTreeMap<Disk, u32>,
}
