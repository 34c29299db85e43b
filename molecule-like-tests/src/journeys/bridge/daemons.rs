//! The bridge's daemons: one per OSD id (held as [`super::slots`] says), from its start to its
//! stop; started and stopped through the cluster's script in the background, each ending
//! reported back to the bridge's loop.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use tokio::sync::mpsc;

use super::events::BridgeEventKind;
use super::image::daemon_release;
use super::slots::{Done, Holder, Phase};
use super::state::Bridge;
use super::table::node_of;
use crate::ceph::OsdStart;

impl Bridge {
    pub(super) fn start_daemon(&mut self, osd: u32, pod: &Pod) {
        let (uid, name, node) = (pod.uid().unwrap_or_default(), pod.name_any(), node_of(pod));
        let namespace = pod.namespace().unwrap_or_default();
        let anonymous = self.faults.borrow().is_anonymous(self.table.disk(&uid));
        // A reference operator's pod: its container gives the daemon no POD_NAME.
        let reference_image = self.faults.borrow().reference_image(pod);
        let anonymous = anonymous || reference_image.is_some();
        let release = daemon_release(pod).release;
        if anonymous {
            self.record(Some(osd), &name, &uid, BridgeEventKind::Anonymous);
        }
        self.slots.hold(
            osd,
            Holder {
                uid,
                pod: name.clone(),
                phase: Phase::Starting,
                release,
                up_from_before: 0,
                booted: false,
                marked: false,
            },
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
                    release,
                };
                cluster.osd_start(osd, &start).await?;
                anyhow::Ok(before)
            }
            .await
            .map_err(|e| format!("{e:#}"));
            let _ = ops.send(Done::Started { osd, result });
        });
    }

    pub(super) fn stop_daemon(&mut self, osd: u32, holder: &Holder, why: String, remove: bool) {
        self.record(
            Some(osd),
            &holder.pod,
            &holder.uid,
            BridgeEventKind::Stopping { why },
        );
        if let Some(h) = self.slots.holder_mut(osd) {
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

    pub(super) fn finish(&mut self, done: Done) {
        self.busy = self.busy.saturating_sub(1);
        match done {
            Done::Started { osd, result } => {
                let Some(h) = self.slots.holder_mut(osd) else {
                    return;
                };
                let (pod, uid, release) = (h.pod.clone(), h.uid.clone(), h.release);
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
                                release,
                            },
                        );
                    }
                    Err(e) => {
                        // Not started: the slot is free again, the pod is not retried.
                        self.slots.free(osd);
                        self.slots.finish(&uid);
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
                let Some(h) = self.slots.free(osd) else {
                    return;
                };
                self.slots.finish(&h.uid);
                match result {
                    Ok(()) => {
                        self.record(Some(osd), &h.pod, &h.uid, BridgeEventKind::Stopped);
                        if remove {
                            self.removed.insert(h.uid.clone());
                            self.remove_pod(Some(osd), &h.pod, &h.uid);
                        }
                    }
                    Err(e) => {
                        let error = format!("osd-stop {osd}: {e}");
                        self.record(Some(osd), &h.pod, &h.uid, BridgeEventKind::Error(error));
                    }
                }
            }
            Done::Wiped { disk, osd, result } => self.wiped(disk, osd, result),
            Done::Prepared {
                disk,
                uid,
                pod,
                osd,
                result,
            } => self.prepared(disk, &pod, &uid, osd, result),
            Done::Other => {}
        }
    }

    /// Waits for the operations under way, then stops every daemon still held.
    pub(super) async fn shut_down(&mut self, ops_rx: &mut mpsc::UnboundedReceiver<Done>) {
        while self.busy > 0 {
            match tokio::time::timeout(Duration::from_mins(1), ops_rx.recv()).await {
                Ok(Some(done)) => self.finish(done),
                _ => break,
            }
        }
        for (osd, holder) in self.slots.free_all() {
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
}
