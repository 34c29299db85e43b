//! The bridge's loop: it plays the kubelet's part for the OSD pods. It follows the pod watch,
//! starts a daemon for each pod that runs and stops it when the pod goes, one daemon per OSD
//! id, and deletes a terminated pod once its daemon has exited. A failed disk's next pod runs
//! its prepare step first (`disks`).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Preconditions};
use kube::runtime::watcher;
use kube::ResourceExt;
use tokio::sync::{mpsc, watch};

use super::disk_state::DiskState;
use super::disks::Request;
use super::events::{locked, BridgeEvent, BridgeEventKind};
use super::image::{daemon_image, daemon_release};
use super::readiness::ready_early;
use super::slots::{Done, Phase};
use super::state::Bridge;
use super::table::{running, Disk};

impl Bridge {
    pub(super) fn record(&self, osd: Option<u32>, pod: &str, uid: &str, kind: BridgeEventKind) {
        locked(&self.log).push(BridgeEvent {
            at: self.clock.elapsed(),
            osd,
            pod: pod.to_owned(),
            uid: uid.to_owned(),
            kind,
        });
    }

    /// Records `kind` once per (`what`, pod uid).
    pub(super) fn record_once(
        &mut self,
        what: &str,
        osd: Option<u32>,
        pod: &Pod,
        kind: BridgeEventKind,
    ) {
        let uid = pod.uid().unwrap_or_default();
        if self.reported.insert((what.to_owned(), uid.clone())) {
            self.record(osd, &pod.name_any(), &uid, kind);
        }
    }

    pub(super) async fn run(
        mut self,
        mut stream: futures::stream::BoxStream<
            'static,
            Result<watcher::Event<Pod>, watcher::Error>,
        >,
        mut ops_rx: mpsc::UnboundedReceiver<Done>,
        mut requests: mpsc::UnboundedReceiver<Request>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut relisted: Option<BTreeMap<String, Pod>> = None;
        let mut asking = true;
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
                request = requests.recv(), if asking => match request {
                    Some(request) => self.request(request),
                    None => asking = false,
                },
                Ok(()) = self.faults.changed() => {}
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

    pub(super) fn apply(&mut self, pod: Pod) {
        let uid = pod.uid().unwrap_or_default();
        self.table.learn(&pod);
        self.report_release(&pod);
        // A pod that is to be Ready by its OSD but is Ready before the bridge said so.
        if ready_early(&pod) {
            let osd = self.table.osd_of(&uid);
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

    pub(super) fn gone(&mut self, pod: &Pod) {
        let uid = pod.uid().unwrap_or_default();
        self.pods.remove(&uid);
        let osd = self.table.osd_of(&uid);
        self.record(osd, &pod.name_any(), &uid, BridgeEventKind::Gone);
        let violations: Vec<(u32, String, String)> = (self.slots.held_by(&uid))
            .map(|(id, h)| {
                let v = format!(
                    "pod {} was gone while its daemon (osd.{id}) was {:?}",
                    h.pod, h.phase
                );
                (id, h.pod.clone(), v)
            })
            .collect();
        for (id, pod, v) in violations {
            self.record(Some(id), &pod, &uid, BridgeEventKind::Violation(v));
        }
    }

    /// Starts and stops daemons as the pods say (see the module docs).
    pub(super) fn reconcile(&mut self) {
        self.note_boots();
        self.fail_disks();
        // Pods that want a daemon, by OSD id, oldest first.
        let mut claims: BTreeMap<u32, Vec<Pod>> = BTreeMap::new();
        // Pods of blank disks (their prepare step to run), by disk, oldest first.
        let mut blank: BTreeMap<Disk, Vec<Pod>> = BTreeMap::new();
        let live: Vec<Pod> = self.pods.values().cloned().collect();
        for pod in live {
            let uid = pod.uid().unwrap_or_default();
            if !running(&pod) || self.slots.is_finished(&uid) {
                continue;
            }
            let disk = self.table.disk(&uid).cloned();
            let withheld = self.faults.borrow().is_withheld(disk.as_ref());
            let id = disk.as_ref().and_then(|d| self.table.osd(d));
            let broken = id.is_some() && daemon_release(&pod).broken;
            let holds = self.slots.holds(&uid);
            // A failed disk (see `disks`): no daemon starts until its next pod prepared it.
            let failed = (disk.as_ref())
                .and_then(|d| self.disks.get(d).map(|s| (d.clone(), s.clone())))
                .filter(|_| !holds);
            if withheld && !holds {
                self.record_once("withheld", id, &pod, BridgeEventKind::Withheld);
            } else if broken && !holds {
                let image = daemon_image(&pod).unwrap_or_default().to_owned();
                self.record_once("broken", id, &pod, BridgeEventKind::Broken { image });
            } else if let Some((disk, state)) = failed {
                if state == DiskState::Blank {
                    blank.entry(disk).or_default().push(pod);
                }
            } else if let Some(id) = id {
                claims.entry(id).or_default().push(pod);
            } else {
                let disk = disk.unwrap_or_else(|| "(none)".to_owned());
                self.record_once("unmapped", None, &pod, BridgeEventKind::Unmapped { disk });
            }
        }
        for list in claims.values_mut().chain(blank.values_mut()) {
            list.sort_by_key(|p| (p.creation_timestamp().map(|t| t.0), p.name_any()));
        }
        for (disk, pods) in blank {
            if let Some(next) = pods.first() {
                self.prepare(next, &disk);
            }
        }
        let ids = self.slots.ids();
        for id in ids {
            let wanting = claims.remove(&id).unwrap_or_default();
            let holder = self.slots.holder(id).cloned();
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

    /// Deletes (grace 0) terminating OSD pods that have no daemon (their disk withheld, their
    /// image broken, their disk failed under them or their prepare step failed), as a kubelet
    /// does with a pod none of whose containers runs.
    pub(super) fn remove_withheld(&mut self) {
        let faults = self.faults.borrow().clone();
        let doomed: Vec<Pod> = self
            .pods
            .values()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
            .filter(|p| {
                let uid = p.uid().unwrap_or_default();
                let broken = self.table.osd_of(&uid).is_some() && daemon_release(p).broken;
                !self.slots.holds(&uid)
                    && !self.removed.contains(&uid)
                    && (broken
                        || faults.is_withheld(self.table.disk(&uid))
                        || self.faulted.contains(&uid))
            })
            .cloned()
            .collect();
        for pod in doomed {
            let uid = pod.uid().unwrap_or_default();
            self.removed.insert(uid.clone());
            let osd = self.table.osd_of(&uid);
            self.remove_pod(osd, &pod.name_any(), &uid);
        }
    }

    /// Deletes a terminated pod with grace 0 (its daemon has exited), as a kubelet does.
    pub(super) fn remove_pod(&mut self, osd: Option<u32>, pod: &str, uid: &str) {
        let (api, name) = (self.api.clone(), pod.to_owned());
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        self.spawn_recorded(osd, pod, uid, async move {
            match api.delete(&name, &params).await {
                Ok(_) => Some(BridgeEventKind::Removed),
                // Gone already, or another pod of that name now.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => None,
                Err(e) => Some(BridgeEventKind::Error(format!("deleting pod {name}: {e}"))),
            }
        });
    }

    /// Runs an API call about pod `pod` (`uid`) in the background and records what it returns.
    pub(super) fn spawn_recorded<F>(&mut self, osd: Option<u32>, pod: &str, uid: &str, call: F)
    where
        F: std::future::Future<Output = Option<BridgeEventKind>> + Send + 'static,
    {
        self.busy += 1;
        let (ops, log, clock) = (self.ops.clone(), Arc::clone(&self.log), self.clock);
        let (pod, uid) = (pod.to_owned(), uid.to_owned());
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
}
