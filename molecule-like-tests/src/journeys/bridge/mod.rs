//! The bridge: makes KWOK's OSD pods real where it matters. KWOK's pods run no process; the
//! bridge plays the kubelet's part for the OSD daemons of one namespace, on a [`CephCluster`]:
//!
//! - Its table maps each disk (`host:data`) to a pre-created OSD id (`osd-create --host
//!   <node>`: the CRUSH host is the Kubernetes node). A pod's disk is what a kubelet would run:
//!   the plain `OSD_DEVICE` of its first container on the node it is bound to; a pod without
//!   that env is taken by its `host` / `data` annotations. Each pod keeps the disk it had when
//!   first seen bound.
//! - A pod that is Running, bound and not terminating gets its daemon: `osd-start ID --host
//!   <node> --pod-name <pod> --pod-namespace <ns> --node-name <node>`, once per pod uid.
//! - A pod that gets a deletionTimestamp, fails, or is gone has its daemon stopped (SIGTERM,
//!   `osd-stop ID`, which returns once the process has exited); a terminating pod is then
//!   deleted with grace 0, as a kubelet does once its containers have exited. KWOK removes a
//!   deleted pod only when its grace period ends, so OSD pods need a grace period longer than a
//!   stop (~1 s; 30 s is safe): their deletion still takes only as long as the stop.
//! - One daemon per OSD id: a pod that claims an id while another pod's daemon holds it (or
//!   two pods that claim one id at once) is recorded as a violation, and gets the daemon only
//!   once the holder's has stopped (as a real OSD waits for its disk's lock).
//! - Readiness: by default KWOK's timing annotations (`testing.local/ready-after-seconds`): a
//!   pod may be Ready before its daemon has booted. A template with `testing.local/ready: ceph`
//!   ([`ready_when_osd_up`]) is Running and not Ready until the bridge sees its OSD up in the
//!   osdmap with an `up_from` newer than before its start; the bridge then sets
//!   `testing.local/ceph-osd-up: "true"` and KWOK's `pod-ready-ceph` stage makes it Ready
//!   (a readiness probe that asks the daemon). Such a pod Ready before that is a violation:
//!   the control plane's KWOK stages predate that stage (restart the control plane).
//!
//! - Faults on demand, per disk: [`CephBridge::withhold`] starts no daemon for its pods (a
//!   daemon that never boots: its pod Running, never Ready by its OSD; such a pod, once
//!   terminating, is deleted at once as a kubelet does with no container to stop) until
//!   [`CephBridge::release`]; [`CephBridge::anonymous`] starts its daemons without
//!   `POD_NAME`/`POD_NAMESPACE` (a daemon that reports no pod, as one started by an older
//!   image). By default neither. [`CephBridge::like_reference_pods`]: a pod whose container
//!   declares no `POD_NAME` env (the reference operator's) gets its daemon as such a pod runs
//!   it: no pod reported, `NODE_NAME` its node and `CONTAINER_IMAGE` its image (so Ceph takes
//!   the node as `hostname`, as a hostNetwork pod's daemon reports it).
//!
//! - A disk that fails, replaced keeping its OSD id (`disks`): [`CephBridge::fail_disk`] kills
//!   the disk's daemon (SIGKILL) and wipes its data (`osd-wipe`; `DiskFailed` recorded) once
//!   that daemon neither starts nor stops; its pods so far stay as they are (Running, no
//!   daemon, never one again; a `ready: ceph` pod stays Ready; once terminating, deleted at
//!   once). The disk is then blank: its next pod (a new uid), once Running and bound, runs its
//!   template's prepare step first: the `OSD_ID` env of its first container ([`OSD_ID_ENV`], a
//!   value or a `fieldRef` to one of its annotations) is prepared on the disk as `ceph-volume
//!   lvm prepare --osd-id N` does (`osd-prepare N --host <node>`: Ceph takes N only when it is
//!   destroyed or absent; `Prepared` recorded); the table's disk → id is N from then on and the
//!   pod gets its daemon as any other. Without an `OSD_ID`, when Ceph refuses, or once after
//!   [`CephBridge::fail_prepare`], `PrepareFailed` is recorded with the reason, the disk stays
//!   blank, and the pod ends as a pod whose prepare step exited 1: its status (subresource)
//!   phase `Failed`, Ready and ContainersReady False (`PodFailed`), every container
//!   `state.terminated` with exit code 1 and reason `Error`, the first one's message the reason
//!   (no KWOK stage matches a Failed pod: the status stays). The API server removes a deleted
//!   Failed pod at once (a terminal pod has no grace period).
//!
//! - Releases: a pod's daemon runs the Ceph release its first container's image names
//!   ([`image_release`]: tag `v18…` Reef, anything else the machine's Pacific; recorded in its
//!   `Started` event); a `…-broken` image's daemon is never started (as a container that exits
//!   at once: its OSD stays down; `Broken` recorded; once terminating, the pod is deleted at
//!   once). A pre-pull pod's `ceph-release` container ends with the real `ceph-osd --version`
//!   of its image's release as its message (`pre_pull`, with KWOK's `pre-pull-ceph-release`
//!   stage).
//!
//! [`CephBridge::check`] replays the events: no violation or error, every pod that ran got its
//! daemon, every pod gone had its daemon stopped first (a daemon killed as its disk failed
//! counts as stopped then; a pod whose prepare step failed had no daemon to stop).
//!
//! Its parts, one type each: `table` (the disks' OSD ids, each pod's disk), `slots` (who
//! holds each OSD id), `daemons` (starts and stops), `faults` (asked for by disk), `disks`
//! (failed disks, prepare steps), `readiness`
//! (Ready by Ceph), `image` (an image's release), `pre_pull` (pre-pull pods' release reports),
//! `events` (the record and its rules), `state` (what the loop keeps),
//! `kubelet` (the loop over the pod watch).

mod daemons;
mod disk_state;
mod disks;
mod events;
mod faults;
mod image;
mod kubelet;
mod pre_pull;
mod readiness;
mod slots;
mod state;
mod table;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use anyhow::{anyhow, bail};
use ceph_osd_operator::OsdKey;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;
use kube::runtime::WatchStreamExt;
use tokio::sync::{mpsc, watch};

use crate::ceph::CephCluster;
use crate::recording::ceph::CephRecorder;
use disks::Request;
pub use disks::OSD_ID_ENV;
use events::{check, daemons, locked, render, Log};
pub use events::{BridgeEvent, BridgeEventKind, Daemon};
use faults::Faults;
pub use image::{image_release, ImageRelease};
pub use pre_pull::{CEPH_RELEASE_CONTAINER, RELEASE_OUTPUT_ANNOTATION};
pub use readiness::{ready_when_osd_up, OSD_UP_ANNOTATION, READY_WHEN_OSD_UP};
use slots::Slots;
use state::Bridge;
use table::{disk_of, Table};

/// The bridge of one namespace (see the module docs). Stop it with [`CephBridge::stop`]
/// before the pods are cleaned up; dropped without that (a failed test), it prints its events.
pub struct CephBridge {
    log: Log,
    faults: watch::Sender<Faults>,
    requests: mpsc::UnboundedSender<Request>,
    shutdown: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for CephBridge {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            eprintln!(
                "ceph bridge dropped without stop():\n{}",
                render(&locked(&self.log))
            );
        }
    }
}

impl CephBridge {
    /// Starts bridging the pods of `pods` (one namespace) to `cluster`'s OSDs by `osds`
    /// (`host:data` → OSD id). Boots are read from `ceph`'s view, events timed on its clock.
    /// Returns once the pod watch is open.
    pub async fn start(
        pods: Api<Pod>,
        cluster: Arc<CephCluster>,
        osds: &BTreeMap<OsdKey, u32>,
        ceph: &CephRecorder,
    ) -> anyhow::Result<Self> {
        let clock = ceph.clock();
        let log: Log = Arc::default();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut stream = watcher(pods.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        // The first list, so nothing that happens afterwards is missed.
        let mut initial = Vec::new();
        loop {
            match stream.next().await {
                Some(Ok(watcher::Event::InitApply(pod))) => initial.push(pod),
                Some(Ok(watcher::Event::InitDone)) => break,
                Some(Ok(_)) => {}
                Some(Err(e)) => bail!("ceph bridge: listing pods: {e}"),
                None => bail!("ceph bridge: the pod watch ended"),
            }
        }
        let (ops, ops_rx) = mpsc::unbounded_channel();
        let (faults, faults_rx) = watch::channel(Faults::default());
        let (requests, requests_rx) = mpsc::unbounded_channel();
        let mut bridge = Bridge {
            api: pods,
            cluster,
            table: Table::new(osds),
            clock,
            log: Arc::clone(&log),
            pods: BTreeMap::new(),
            slots: Slots::new(osds.values().copied()),
            reported: BTreeSet::new(),
            ceph: ceph.subscribe(),
            ops,
            busy: 0,
            faults: faults_rx,
            removed: BTreeSet::new(),
            disks: BTreeMap::new(),
            faulted: BTreeSet::new(),
            failing_prepares: BTreeMap::new(),
        };
        for pod in initial {
            bridge.apply(pod);
        }
        bridge.reconcile();
        let task = tokio::spawn(bridge.run(stream, ops_rx, requests_rx, shutdown_rx));
        Ok(Self {
            log,
            faults,
            requests,
            shutdown,
            task: Some(task),
        })
    }

    /// From now on no daemon is started for pods of `key`'s disk (a daemon that never boots);
    /// a daemon running already is left alone. Such a pod, once terminating, is deleted at once.
    pub fn withhold(&self, key: &OsdKey) {
        self.faults.send_modify(|f| f.withhold(disk_of(key)));
    }

    /// Daemons for pods of `key`'s disk are started again ([`Self::withhold`] undone).
    pub fn release(&self, key: &OsdKey) {
        self.faults.send_modify(|f| f.release(&disk_of(key)));
    }

    /// From now on the daemons of `key`'s disk start without `POD_NAME` and `POD_NAMESPACE`:
    /// their `osd metadata` names no pod (`NODE_NAME` and the CRUSH host stay).
    pub fn anonymous(&self, key: &OsdKey) {
        self.faults.send_modify(|f| f.make_anonymous(disk_of(key)));
    }

    /// From now on a pod whose first container declares no `POD_NAME` env (as the reference
    /// operator's pods) gets its daemon as the kubelet would run it there: no `POD_NAME` and
    /// `POD_NAMESPACE`, `NODE_NAME` its node, `CONTAINER_IMAGE` its image: `osd metadata` names
    /// no pod and the node as `hostname`.
    pub fn like_reference_pods(&self) {
        self.faults.send_modify(Faults::run_like_reference_pods);
    }

    /// `key`'s disk fails: its daemon (once it neither starts nor stops) is killed and its
    /// data wiped, its pods so far stay as they are without a daemon; the disk is blank until
    /// a next pod prepares its `OSD_ID` on it (see the module docs). Returns at once: the
    /// `DiskFailed` event says when it is done ([`Self::wait_for_event`]).
    pub fn fail_disk(&self, key: &OsdKey) {
        let _ = self.requests.send(Request::FailDisk(disk_of(key)));
    }

    /// The next prepare step on `key`'s disk fails (exit code 1), even with a valid `OSD_ID`:
    /// `PrepareFailed` recorded, the pod ended `Failed`. Once per call; a later pod prepares
    /// as usual.
    pub fn fail_prepare(&self, key: &OsdKey) {
        let _ = self.requests.send(Request::FailPrepare(disk_of(key)));
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<BridgeEvent> {
        locked(&self.log).clone()
    }

    /// Waits (at most a minute) until the bridge has recorded an event `matches` accepts; its
    /// events so far.
    pub async fn wait_for_event(
        &self,
        what: &str,
        matches: impl Fn(&BridgeEvent) -> bool,
    ) -> anyhow::Result<Vec<BridgeEvent>> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
        loop {
            let events = self.events();
            if events.iter().any(&matches) {
                return Ok(events);
            }
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}\n{}",
                self.render()
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// The events, one line each.
    pub fn render(&self) -> String {
        render(&locked(&self.log))
    }

    /// The bridge's invariants over its events (see the module docs).
    pub fn check(&self) -> anyhow::Result<()> {
        let events = self.events();
        check(&events).map_err(|e| anyhow!("{e}\n{}", render(&events)))
    }

    /// Per OSD, its daemons in order: (pod, started, booted, stopped), times on the clock.
    pub fn daemons(&self) -> BTreeMap<u32, Vec<Daemon>> {
        daemons(&locked(&self.log))
    }

    /// OSD `id`'s daemons, which must have run in exactly `pods`, in that order.
    pub fn daemons_of(&self, id: u32, pods: &[&str]) -> anyhow::Result<Vec<Daemon>> {
        let list = self.daemons().remove(&id).unwrap_or_default();
        let names: Vec<&str> = list.iter().map(|d| d.pod.as_str()).collect();
        anyhow::ensure!(
            names == pods,
            "osd.{id}: daemons of {names:?}, expected {pods:?}"
        );
        Ok(list)
    }

    /// Stops the bridge: waits for the operations under way, stops every daemon it started
    /// (recorded as stopped `bridge stopped`), ends the watch. Returns the events.
    pub async fn stop(mut self) -> anyhow::Result<Vec<BridgeEvent>> {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.task.take() {
            task.await?;
        }
        Ok(self.events())
    }
}
