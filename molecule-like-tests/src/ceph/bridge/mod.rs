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
//! [`CephBridge::check`] replays the events: no violation or error, every pod that ran got its
//! daemon, every pod gone had its daemon stopped first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::watcher;
use kube::runtime::WatchStreamExt;
use kube::ResourceExt;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use crate::ceph::{CephCluster, OsdStart};
use crate::kubernetes::manifests::READY_ANNOTATION;
use crate::kubernetes::pods::{annotation, is_ready};
use crate::recording::ceph::{CephRecorder, CephState};

/// Value of `testing.local/ready` for pods Ready once their OSD is up in Ceph.
pub const READY_WHEN_OSD_UP: &str = "ceph";
/// Pod annotation the bridge sets once the pod's OSD is up (KWOK's `pod-ready-ceph` stage).
pub const OSD_UP_ANNOTATION: &str = "testing.local/ceph-osd-up";

/// A pod template whose pods are Ready only once their OSD is up in Ceph (see the module docs).
pub fn ready_when_osd_up(mut template: Value) -> Value {
    let annotations = &mut template["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[READY_ANNOTATION] = json!(READY_WHEN_OSD_UP);
    template
}

/// What the bridge did or saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BridgeEventKind {
    /// `osd-start` returned for the pod, on `node`; the OSD's `up_from` before was
    /// `up_from_before`.
    Started {
        node: String,
        up_from_before: u64,
    },
    /// Ceph's osdmap shows the OSD up with this newer `up_from`.
    Booted {
        up_from: u64,
    },
    /// `testing.local/ceph-osd-up: "true"` set on the pod.
    MarkedUp,
    /// Stopping the pod's daemon, and why.
    Stopping {
        why: String,
    },
    /// `osd-stop` returned: the daemon has exited.
    Stopped,
    /// The bridge deleted the terminated pod (grace 0).
    Removed,
    /// The pod is gone from the API.
    Gone,
    /// A pod on a disk the table does not map.
    Unmapped {
        disk: String,
    },
    /// The pod's disk is withheld ([`CephBridge::withhold`]): no daemon is started for it.
    Withheld,
    /// The daemon is started without the pod's name and namespace ([`CephBridge::anonymous`]).
    Anonymous,
    Violation(String),
    Error(String),
}

/// One event of the bridge.
#[derive(Clone, Debug)]
pub struct BridgeEvent {
    /// On the Ceph recorder's clock.
    pub at: Duration,
    pub osd: Option<u32>,
    pub pod: String,
    pub uid: String,
    pub kind: BridgeEventKind,
}

type Log = Arc<Mutex<Vec<BridgeEvent>>>;

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The bridge of one namespace (see the module docs). Stop it with [`CephBridge::stop`]
/// before the pods are cleaned up; dropped without that (a failed test), it prints its events.
pub struct CephBridge {
    log: Log,
    controls: watch::Sender<Controls>,
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
        let (controls, controls_rx) = watch::channel(Controls::default());
        let mut bridge = Bridge {
            api: pods,
            cluster,
            table: osds.iter().map(|(k, id)| (disk_of(k), *id)).collect(),
            clock,
            log: Arc::clone(&log),
            pods: BTreeMap::new(),
            disks: BTreeMap::new(),
            slots: osds.values().map(|id| (*id, None)).collect(),
            finished: BTreeSet::new(),
            reported: BTreeSet::new(),
            ceph: ceph.subscribe(),
            ops,
            busy: 0,
            controls: controls_rx,
            removed: BTreeSet::new(),
        };
        for pod in initial {
            bridge.apply(pod);
        }
        bridge.reconcile();
        let task = tokio::spawn(bridge.run(stream, ops_rx, shutdown_rx));
        Ok(Self {
            log,
            controls,
            shutdown,
            task: Some(task),
        })
    }

    /// From now on no daemon is started for pods of `key`'s disk (a daemon that never boots);
    /// a daemon running already is left alone. Such a pod, once terminating, is deleted at once.
    pub fn withhold(&self, key: &OsdKey) {
        self.controls.send_modify(|c| {
            c.withheld.insert(disk_of(key));
        });
    }

    /// Daemons for pods of `key`'s disk are started again ([`Self::withhold`] undone).
    pub fn release(&self, key: &OsdKey) {
        self.controls.send_modify(|c| {
            c.withheld.remove(&disk_of(key));
        });
    }

    /// From now on the daemons of `key`'s disk start without `POD_NAME` and `POD_NAMESPACE`:
    /// their `osd metadata` names no pod (`NODE_NAME` and the CRUSH host stay).
    pub fn anonymous(&self, key: &OsdKey) {
        self.controls.send_modify(|c| {
            c.anonymous.insert(disk_of(key));
        });
    }

    /// From now on a pod whose first container declares no `POD_NAME` env (as the reference
    /// operator's pods) gets its daemon as the kubelet would run it there: no `POD_NAME` and
    /// `POD_NAMESPACE`, `NODE_NAME` its node, `CONTAINER_IMAGE` its image: `osd metadata` names
    /// no pod and the node as `hostname`.
    pub fn like_reference_pods(&self) {
        self.controls.send_modify(|c| c.env_of_pods = true);
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<BridgeEvent> {
        locked(&self.log).clone()
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

/// One daemon's life, from the bridge's events.
#[derive(Clone, Debug, Default)]
pub struct Daemon {
    pub pod: String,
    pub uid: String,
    pub started: Option<Duration>,
    pub booted: Option<(Duration, u64)>,
    pub stopping: Option<Duration>,
    pub stopped: Option<Duration>,
    pub gone: Option<Duration>,
}

fn daemons(events: &[BridgeEvent]) -> BTreeMap<u32, Vec<Daemon>> {
    let mut out: BTreeMap<u32, Vec<Daemon>> = BTreeMap::new();
    for e in events {
        let Some(osd) = e.osd else { continue };
        let list = out.entry(osd).or_default();
        if matches!(e.kind, BridgeEventKind::Started { .. }) {
            list.push(Daemon {
                pod: e.pod.clone(),
                uid: e.uid.clone(),
                started: Some(e.at),
                ..Daemon::default()
            });
            continue;
        }
        let Some(d) = list.iter_mut().rev().find(|d| d.uid == e.uid) else {
            continue;
        };
        match &e.kind {
            BridgeEventKind::Booted { up_from } => d.booted = Some((e.at, *up_from)),
            BridgeEventKind::Stopping { .. } => d.stopping = d.stopping.or(Some(e.at)),
            BridgeEventKind::Stopped => d.stopped = Some(e.at),
            BridgeEventKind::Gone => d.gone = Some(e.at),
            _ => {}
        }
    }
    out
}

fn check(events: &[BridgeEvent]) -> Result<(), String> {
    let mut problems: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            BridgeEventKind::Violation(v) => Some(format!("violation: {v}")),
            BridgeEventKind::Error(err) => Some(format!("error: {err}")),
            _ => None,
        })
        .collect();
    for (osd, list) in daemons(events) {
        for d in list {
            if let Some(gone) = d.gone {
                if d.stopped.is_none_or(|stopped| stopped > gone) {
                    problems.push(format!(
                        "osd.{osd}: pod {} was gone at {:.2}s before its daemon stopped",
                        d.pod,
                        gone.as_secs_f64()
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn render(events: &[BridgeEvent]) -> String {
    let mut out = String::from("ceph bridge events:\n");
    for e in events {
        out.push_str(&format!(
            "  {:>8.2}s {:<7} {} {:?}\n",
            e.at.as_secs_f64(),
            e.osd
                .map_or_else(|| "-".to_owned(), |id| format!("osd.{id}")),
            e.pod,
            e.kind
        ));
    }
    out
}

/// Who holds an OSD id: the pod whose daemon starts, runs or stops.
#[derive(Clone, Debug)]
struct Holder {
    uid: String,
    pod: String,
    phase: Phase,
    up_from_before: u64,
    booted: bool,
    marked: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Starting,
    Running,
    Stopping,
}

/// Faults asked for by disk (see [`CephBridge::withhold`], [`CephBridge::anonymous`]).
#[derive(Clone, Debug, Default)]
struct Controls {
    withheld: BTreeSet<Disk>,
    anonymous: BTreeSet<Disk>,
    /// [`CephBridge::like_reference_pods`].
    env_of_pods: bool,
}

/// An operation that ended.
enum Done {
    Started {
        osd: u32,
        result: Result<u64, String>,
    },
    Stopped {
        osd: u32,
        result: Result<(), String>,
        remove: bool,
    },
    Other,
}

struct Bridge {
    api: Api<Pod>,
    cluster: Arc<CephCluster>,
    table: BTreeMap<Disk, u32>,
    clock: Instant,
    log: Log,
    /// Live pods by uid.
    pods: BTreeMap<String, Pod>,
    /// The disk of each pod (uid) as first seen bound; None when it has none.
    disks: BTreeMap<String, Option<Disk>>,
    slots: BTreeMap<u32, Option<Holder>>,
    /// Pods whose daemon ran and stopped: never started again.
    finished: BTreeSet<String>,
    /// (what, uid) already recorded once.
    reported: BTreeSet<(String, String)>,
    ceph: watch::Receiver<CephState>,
    ops: mpsc::UnboundedSender<Done>,
    /// Operations under way.
    busy: usize,
    controls: watch::Receiver<Controls>,
    /// Pods (uid) without a daemon the bridge deleted (grace 0) once terminating.
    removed: BTreeSet<String>,
}

/// A disk, whatever the spelling of its key (`OsdKey::device_id`, displayed).
type Disk = String;

fn disk_of(key: &OsdKey) -> Disk {
    key.device_id().to_string()
}

/// The disk a kubelet would run a bound pod's daemon on: its first container's `OSD_DEVICE`
/// on its node, else its annotations.
fn pod_disk(pod: &Pod) -> Option<Disk> {
    let node = pod.spec.as_ref()?.node_name.clone()?;
    let env = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.env.as_ref())
        .and_then(|env| env.iter().find(|e| e.name == "OSD_DEVICE"))
        .and_then(|e| e.value.clone());
    match env {
        Some(data) => Some(disk_of(&OsdKey::new(node, data))),
        None => annotation(pod, labels::HOST)
            .zip(annotation(pod, labels::DATA))
            .map(|(h, d)| disk_of(&OsdKey::new(h, d))),
    }
}

/// The image of `pod`'s first container when that container declares no `POD_NAME` env.
fn reference_image(pod: &Pod) -> Option<String> {
    let container = pod.spec.as_ref()?.containers.first()?;
    let declares = (container.env.iter().flatten()).any(|e| e.name == "POD_NAME");
    (!declares).then(|| {
        container
            .image
            .clone()
            .unwrap_or_else(|| "unknown".to_owned())
    })
}

fn bound(pod: &Pod) -> bool {
    pod.spec.as_ref().is_some_and(|s| s.node_name.is_some())
}

fn running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && bound(pod)
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

impl Bridge {
    fn record(&self, osd: Option<u32>, pod: &str, uid: &str, kind: BridgeEventKind) {
        locked(&self.log).push(BridgeEvent {
            at: self.clock.elapsed(),
            osd,
            pod: pod.to_owned(),
            uid: uid.to_owned(),
            kind,
        });
    }

    /// Records `kind` once per (`what`, pod uid).
    fn record_once(&mut self, what: &str, osd: Option<u32>, pod: &Pod, kind: BridgeEventKind) {
        let uid = pod.uid().unwrap_or_default();
        if self.reported.insert((what.to_owned(), uid.clone())) {
            self.record(osd, &pod.name_any(), &uid, kind);
        }
    }

    async fn run(
        mut self,
        mut stream: futures::stream::BoxStream<
            'static,
            Result<watcher::Event<Pod>, watcher::Error>,
        >,
        mut ops_rx: mpsc::UnboundedReceiver<Done>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut relisted: Option<BTreeMap<String, Pod>> = None;
        loop {
            tokio::select! {
                event = stream.next() => match event {
                    Some(Ok(watcher::Event::Apply(pod))) => self.apply(pod),
                    Some(Ok(watcher::Event::Delete(pod))) => self.gone(&pod),
                    Some(Ok(watcher::Event::Init)) => relisted = Some(BTreeMap::new()),
                    Some(Ok(watcher::Event::InitApply(pod))) => {
                        if let Some(list) = relisted.as_mut() {
                            list.insert(pod.uid().unwrap_or_default(), pod);
                        }
                    }
                    Some(Ok(watcher::Event::InitDone)) => {
                        let list = relisted.take().unwrap_or_default();
                        let vanished: Vec<Pod> = self
                            .pods
                            .iter()
                            .filter(|(uid, _)| !list.contains_key(*uid))
                            .map(|(_, p)| p.clone())
                            .collect();
                        for pod in vanished {
                            self.gone(&pod);
                        }
                        for pod in list.into_values() {
                            self.apply(pod);
                        }
                    }
                    Some(Err(e)) => tracing::warn!(error = %e, "ceph bridge: pod watch"),
                    None => {
                        self.record(None, "-", "-", BridgeEventKind::Error("the pod watch ended".into()));
                        break;
                    }
                },
                Some(done) = ops_rx.recv() => self.finish(done),
                Ok(()) = self.controls.changed() => {}
                changed = self.ceph.changed() => {
                    if changed.is_err() {
                        self.record(None, "-", "-", BridgeEventKind::Error("the ceph recorder stopped".into()));
                        break;
                    }
                }
                _ = shutdown.changed() => break,
            }
            self.reconcile();
        }
        self.shut_down(&mut ops_rx).await;
    }

    /// Waits for the operations under way, then stops every daemon still held.
    async fn shut_down(&mut self, ops_rx: &mut mpsc::UnboundedReceiver<Done>) {
        while self.busy > 0 {
            match tokio::time::timeout(Duration::from_mins(1), ops_rx.recv()).await {
                Ok(Some(done)) => self.finish(done),
                _ => break,
            }
        }
        let held: Vec<(u32, Holder)> = self
            .slots
            .iter_mut()
            .filter_map(|(id, h)| h.take().map(|h| (*id, h)))
            .collect();
        for (osd, holder) in held {
            self.record(
                Some(osd),
                &holder.pod,
                &holder.uid,
                BridgeEventKind::Stopping {
                    why: "bridge stopped".into(),
                },
            );
            let kind = match self.cluster.osd_stop(osd, false).await {
                Ok(()) => BridgeEventKind::Stopped,
                Err(e) => BridgeEventKind::Error(format!("osd-stop {osd}: {e:#}")),
            };
            self.record(Some(osd), &holder.pod, &holder.uid, kind);
        }
    }

    fn apply(&mut self, pod: Pod) {
        let uid = pod.uid().unwrap_or_default();
        if !self.disks.contains_key(&uid) && bound(&pod) {
            self.disks.insert(uid.clone(), pod_disk(&pod));
        }
        // A pod that is to be Ready by its OSD but is Ready before the bridge said so.
        if annotation(&pod, READY_ANNOTATION) == Some(READY_WHEN_OSD_UP)
            && is_ready(&pod)
            && annotation(&pod, OSD_UP_ANNOTATION) != Some("true")
            && pod.metadata.deletion_timestamp.is_none()
        {
            let osd = self.osd_of(&uid);
            self.record_once(
                "ready-early",
                osd,
                &pod,
                BridgeEventKind::Violation(format!(
                    "pod {} is Ready before its OSD was up: KWOK lacks the pod-ready-ceph stage \
                     (restart the control plane)",
                    pod.name_any()
                )),
            );
        }
        self.pods.insert(uid, pod);
    }

    fn gone(&mut self, pod: &Pod) {
        let uid = pod.uid().unwrap_or_default();
        self.pods.remove(&uid);
        let osd = self.osd_of(&uid);
        self.record(osd, &pod.name_any(), &uid, BridgeEventKind::Gone);
        for (id, holder) in &self.slots {
            if let Some(h) = holder.as_ref().filter(|h| h.uid == uid) {
                let v = format!(
                    "pod {} was gone while its daemon (osd.{id}) was {:?}",
                    h.pod, h.phase
                );
                self.record(Some(*id), &h.pod, &uid, BridgeEventKind::Violation(v));
            }
        }
    }

    fn osd_of(&self, uid: &str) -> Option<u32> {
        self.disks
            .get(uid)
            .cloned()
            .flatten()
            .and_then(|d| self.table.get(&d).copied())
    }

    /// Starts and stops daemons as the pods say (see the module docs).
    fn reconcile(&mut self) {
        self.note_boots();
        // Pods that want a daemon, by OSD id, oldest first.
        let mut claims: BTreeMap<u32, Vec<Pod>> = BTreeMap::new();
        let live: Vec<Pod> = self.pods.values().cloned().collect();
        for pod in live {
            let uid = pod.uid().unwrap_or_default();
            if !running(&pod) || self.finished.contains(&uid) {
                continue;
            }
            let disk = self.disks.get(&uid).cloned().flatten();
            let withheld = disk
                .as_ref()
                .is_some_and(|d| self.controls.borrow().withheld.contains(d));
            let id = disk.as_ref().and_then(|d| self.table.get(d)).copied();
            if withheld && !self.holds(&uid) {
                self.record_once("withheld", id, &pod, BridgeEventKind::Withheld);
            } else if let Some(id) = id {
                claims.entry(id).or_default().push(pod);
            } else {
                let disk = disk.unwrap_or_else(|| "(none)".to_owned());
                self.record_once("unmapped", None, &pod, BridgeEventKind::Unmapped { disk });
            }
        }
        for list in claims.values_mut() {
            list.sort_by_key(|p| (p.creation_timestamp().map(|t| t.0), p.name_any()));
        }
        let ids: Vec<u32> = self.slots.keys().copied().collect();
        for id in ids {
            let wanting = claims.remove(&id).unwrap_or_default();
            let holder = self.slots.get(&id).cloned().flatten();
            if let Some(h) = holder {
                for other in wanting
                    .iter()
                    .filter(|p| p.uid().as_deref() != Some(&h.uid))
                {
                    let v = format!(
                        "pod {} claims osd.{id} while pod {}'s daemon holds it",
                        other.name_any(),
                        h.pod
                    );
                    self.record_once("claim", Some(id), other, BridgeEventKind::Violation(v));
                }
                let pod = self.pods.get(&h.uid).cloned();
                if h.phase == Phase::Running && !pod.as_ref().is_some_and(running) {
                    let why = match &pod {
                        None => "pod gone".to_owned(),
                        Some(p) if p.metadata.deletion_timestamp.is_some() => {
                            "pod terminating".to_owned()
                        }
                        Some(p) => format!(
                            "pod {}",
                            p.status
                                .as_ref()
                                .and_then(|s| s.phase.clone())
                                .unwrap_or_default()
                        ),
                    };
                    let remove = pod
                        .as_ref()
                        .is_some_and(|p| p.metadata.deletion_timestamp.is_some());
                    self.stop_daemon(id, &h, why, remove);
                }
            } else {
                let Some((first, rest)) = wanting.split_first() else {
                    continue;
                };
                for other in rest {
                    let v = format!(
                        "pods {} and {} claim osd.{id} at once",
                        first.name_any(),
                        other.name_any()
                    );
                    self.record_once("claim", Some(id), other, BridgeEventKind::Violation(v));
                }
                self.start_daemon(id, first);
            }
        }
        self.remove_withheld();
        self.mark_booted();
    }

    /// Whether pod `uid`'s daemon starts, runs or stops.
    fn holds(&self, uid: &str) -> bool {
        self.slots.values().flatten().any(|h| h.uid == uid)
    }

    /// Deletes (grace 0) terminating pods of withheld disks that have no daemon, as a kubelet
    /// does with a pod none of whose containers runs.
    fn remove_withheld(&mut self) {
        let withheld = self.controls.borrow().withheld.clone();
        let doomed: Vec<Pod> = self
            .pods
            .values()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
            .filter(|p| {
                let uid = p.uid().unwrap_or_default();
                !self.holds(&uid)
                    && !self.removed.contains(&uid)
                    && self
                        .disks
                        .get(&uid)
                        .cloned()
                        .flatten()
                        .is_some_and(|d| withheld.contains(&d))
            })
            .cloned()
            .collect();
        for pod in doomed {
            let uid = pod.uid().unwrap_or_default();
            self.removed.insert(uid.clone());
            let h = Holder {
                uid,
                pod: pod.name_any(),
                phase: Phase::Stopping,
                up_from_before: 0,
                booted: false,
                marked: false,
            };
            let osd = self.osd_of(&h.uid);
            self.remove_pod(osd, &h);
        }
    }

    fn start_daemon(&mut self, osd: u32, pod: &Pod) {
        let (uid, name, node) = (pod.uid().unwrap_or_default(), pod.name_any(), node_of(pod));
        let namespace = pod.namespace().unwrap_or_default();
        let anonymous = self
            .disks
            .get(&uid)
            .cloned()
            .flatten()
            .is_some_and(|d| self.controls.borrow().anonymous.contains(&d));
        // A reference operator's pod: its container gives the daemon no POD_NAME.
        let reference_image = (self.controls.borrow().env_of_pods)
            .then(|| reference_image(pod))
            .flatten();
        let anonymous = anonymous || reference_image.is_some();
        if anonymous {
            self.record(Some(osd), &name, &uid, BridgeEventKind::Anonymous);
        }
        self.slots.insert(
            osd,
            Some(Holder {
                uid,
                pod: name.clone(),
                phase: Phase::Starting,
                up_from_before: 0,
                booted: false,
                marked: false,
            }),
        );
        self.busy += 1;
        let (cluster, ops) = (Arc::clone(&self.cluster), self.ops.clone());
        tokio::spawn(async move {
            let result = async {
                // up_from before the start: the new daemon's boot has a newer one.
                let dump = cluster.cli_json(&["osd", "dump"]).await?;
                let before = dump["osds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|o| o["osd"].as_u64() == Some(u64::from(osd)))
                    .and_then(|o| o["up_from"].as_u64())
                    .unwrap_or(0);
                let start = OsdStart {
                    host: &node,
                    pod_name: (!anonymous).then_some(name.as_str()),
                    pod_namespace: (!anonymous).then_some(namespace.as_str()),
                    node_name: Some(&node),
                    container_image: reference_image.as_deref(),
                };
                cluster.osd_start(osd, &start).await?;
                anyhow::Ok(before)
            }
            .await
            .map_err(|e| format!("{e:#}"));
            let _ = ops.send(Done::Started { osd, result });
        });
    }

    fn stop_daemon(&mut self, osd: u32, holder: &Holder, why: String, remove: bool) {
        self.record(
            Some(osd),
            &holder.pod,
            &holder.uid,
            BridgeEventKind::Stopping { why },
        );
        if let Some(Some(h)) = self.slots.get_mut(&osd) {
            h.phase = Phase::Stopping;
        }
        self.busy += 1;
        let (cluster, ops) = (Arc::clone(&self.cluster), self.ops.clone());
        tokio::spawn(async move {
            let result = cluster
                .osd_stop(osd, false)
                .await
                .map_err(|e| format!("{e:#}"));
            let _ = ops.send(Done::Stopped {
                osd,
                result,
                remove,
            });
        });
    }

    fn finish(&mut self, done: Done) {
        self.busy = self.busy.saturating_sub(1);
        match done {
            Done::Started { osd, result } => {
                let Some(Some(h)) = self.slots.get_mut(&osd) else {
                    return;
                };
                let (pod, uid) = (h.pod.clone(), h.uid.clone());
                match result {
                    Ok(before) => {
                        h.phase = Phase::Running;
                        h.up_from_before = before;
                        let node = self.pods.get(&uid).map(node_of).unwrap_or_default();
                        self.record(
                            Some(osd),
                            &pod,
                            &uid,
                            BridgeEventKind::Started {
                                node,
                                up_from_before: before,
                            },
                        );
                    }
                    Err(e) => {
                        // Not started: the slot is free again, the pod is not retried.
                        self.slots.insert(osd, None);
                        self.finished.insert(uid.clone());
                        let error = format!("osd-start {osd}: {e}");
                        self.record(Some(osd), &pod, &uid, BridgeEventKind::Error(error));
                    }
                }
            }
            Done::Stopped {
                osd,
                result,
                remove,
            } => {
                let Some(h) = self.slots.get_mut(&osd).and_then(Option::take) else {
                    return;
                };
                self.finished.insert(h.uid.clone());
                match result {
                    Ok(()) => {
                        self.record(Some(osd), &h.pod, &h.uid, BridgeEventKind::Stopped);
                        if remove {
                            self.removed.insert(h.uid.clone());
                            self.remove_pod(Some(osd), &h);
                        }
                    }
                    Err(e) => {
                        let error = format!("osd-stop {osd}: {e}");
                        self.record(Some(osd), &h.pod, &h.uid, BridgeEventKind::Error(error));
                    }
                }
            }
            Done::Other => {}
        }
    }

    /// Deletes a terminated pod with grace 0 (its daemon has exited), as a kubelet does.
    fn remove_pod(&mut self, osd: Option<u32>, h: &Holder) {
        let (api, pod, uid) = (self.api.clone(), h.pod.clone(), h.uid.clone());
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        self.spawn_recorded(osd, h, async move {
            match api.delete(&pod, &params).await {
                Ok(_) => Some(BridgeEventKind::Removed),
                // Gone already, or another pod of that name now.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => None,
                Err(e) => Some(BridgeEventKind::Error(format!("deleting pod {pod}: {e}"))),
            }
        });
    }

    /// Runs an API call about `h`'s pod in the background and records what it returns.
    fn spawn_recorded<F>(&mut self, osd: Option<u32>, h: &Holder, call: F)
    where
        F: std::future::Future<Output = Option<BridgeEventKind>> + Send + 'static,
    {
        self.busy += 1;
        let (ops, log, clock) = (self.ops.clone(), Arc::clone(&self.log), self.clock);
        let (pod, uid) = (h.pod.clone(), h.uid.clone());
        tokio::spawn(async move {
            if let Some(kind) = call.await {
                locked(&log).push(BridgeEvent {
                    at: clock.elapsed(),
                    osd,
                    pod,
                    uid,
                    kind,
                });
            }
            let _ = ops.send(Done::Other);
        });
    }

    /// Records the boots Ceph's view shows: up with an `up_from` newer than before the start.
    fn note_boots(&mut self) {
        let view = self.ceph.borrow().clone();
        let Some((_, map)) = view.osdmap else {
            return;
        };
        let mut booted = Vec::new();
        for (id, holder) in &mut self.slots {
            let Some(h) = holder
                .as_mut()
                .filter(|h| h.phase == Phase::Running && !h.booted)
            else {
                continue;
            };
            if let Some(osd) = map
                .osd(*id)
                .filter(|o| o.up && o.up_from > h.up_from_before)
            {
                h.booted = true;
                booted.push((*id, h.pod.clone(), h.uid.clone(), osd.up_from));
            }
        }
        for (id, pod, uid, up_from) in booted {
            self.record(Some(id), &pod, &uid, BridgeEventKind::Booted { up_from });
        }
    }

    /// Sets `testing.local/ceph-osd-up` on booted pods that are to be Ready by their OSD.
    fn mark_booted(&mut self) {
        let mut to_mark = Vec::new();
        for (id, holder) in &mut self.slots {
            let Some(h) = holder
                .as_mut()
                .filter(|h| h.booted && !h.marked && h.phase == Phase::Running)
            else {
                continue;
            };
            let wants = self
                .pods
                .get(&h.uid)
                .is_some_and(|p| annotation(p, READY_ANNOTATION) == Some(READY_WHEN_OSD_UP));
            if wants {
                h.marked = true;
                to_mark.push((*id, h.clone()));
            }
        }
        for (osd, h) in to_mark {
            let (api, pod, uid) = (self.api.clone(), h.pod.clone(), h.uid.clone());
            self.spawn_recorded(Some(osd), &h, async move {
                // The uid in the patch: never another pod of that name.
                let patch =
                    json!({"metadata": {"uid": uid, "annotations": {OSD_UP_ANNOTATION: "true"}}});
                Some(
                    match api
                        .patch(&pod, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        Ok(_) => BridgeEventKind::MarkedUp,
                        Err(e) => BridgeEventKind::Error(format!("marking pod {pod} up: {e}")),
                    },
                )
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(ms: u64, osd: u32, pod: &str, kind: BridgeEventKind) -> BridgeEvent {
        BridgeEvent {
            at: Duration::from_millis(ms),
            osd: Some(osd),
            pod: pod.to_owned(),
            uid: format!("uid-{pod}"),
            kind,
        }
    }

    fn started() -> BridgeEventKind {
        BridgeEventKind::Started {
            node: "n".into(),
            up_from_before: 0,
        }
    }

    #[test]
    fn a_pod_gone_before_its_daemon_stopped_fails_the_check() {
        use BridgeEventKind::{Booted, Gone, Stopped};
        let ok = vec![
            event(0, 0, "a", started()),
            event(1, 0, "a", Booted { up_from: 9 }),
            event(2, 0, "a", Stopped),
            event(3, 0, "a", Gone),
            event(4, 0, "b", started()),
        ];
        check(&ok).expect("stopped first");
        let d = &daemons(&ok)[&0];
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].booted, Some((Duration::from_millis(1), 9)));
        let bad = vec![
            event(0, 0, "a", started()),
            event(3, 0, "a", Gone),
            event(4, 0, "a", Stopped),
        ];
        let err = check(&bad).expect_err("gone first");
        assert!(err.contains("before its daemon stopped"), "{err}");
        let violation = vec![event(0, 0, "b", BridgeEventKind::Violation("two".into()))];
        assert!(check(&violation).is_err());
    }

    #[test]
    fn a_pods_disk_is_its_env_on_its_node() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "annotations": {labels::HOST: "h9", labels::DATA: "/dev/sdz"}},
            "spec": {"nodeName": "h1", "containers": [{"name": "osd", "env": [{"name": "OSD_DEVICE", "value": "/dev/sdb"}]}]},
        }))
        .expect("pod");
        assert_eq!(
            pod_disk(&pod),
            Some(disk_of(&OsdKey::new("h1", "/dev/sdb")))
        );
        let mut unbound = pod.clone();
        unbound.spec.as_mut().expect("spec").node_name = None;
        assert_eq!(pod_disk(&unbound), None);
        let mut no_env = pod;
        no_env.spec.as_mut().expect("spec").containers[0].env = None;
        assert_eq!(
            pod_disk(&no_env),
            Some(disk_of(&OsdKey::new("h9", "/dev/sdz")))
        );
    }
}
