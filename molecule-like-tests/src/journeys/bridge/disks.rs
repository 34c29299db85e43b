//! Failed disks and their replacement keeping the OSD id.
//!
//! - [`CephBridge::fail_disk`](super::CephBridge::fail_disk): once the disk's daemon neither
//!   starts nor stops, it is killed and the disk's data wiped (`osd-wipe`); `DiskFailed`
//!   recorded (for the pod whose daemon was killed, else pod `-`). The disk's pods so far stay
//!   as they are (Running, no daemon) and never get one; once terminating they are deleted at
//!   once. The disk is blank.
//! - A blank disk's next pod (a new uid), once Running and bound, runs the prepare step of its
//!   template first: the `OSD_ID` of its first container (a value, or a `fieldRef` to one of
//!   its annotations) is prepared on the disk (`osd-prepare N --host <node>`: Ceph takes N only
//!   when it is destroyed or absent); `Prepared` recorded, the table's disk → id is N and the
//!   pod gets its daemon as any other. Without an `OSD_ID`, when Ceph refuses, or once after
//!   [`CephBridge::fail_prepare`](super::CephBridge::fail_prepare), `PrepareFailed` is recorded
//!   with the reason, the disk stays blank and the pod ends as a pod whose prepare step exited
//!   1 ([`failed_prepare_status`]); once terminating it is deleted at once.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::ResourceExt;
use serde_json::{json, Value};

use super::disk_state::DiskState;
use super::events::BridgeEventKind;
use super::slots::{Done, Phase};
use super::state::Bridge;
use super::table::{node_of, Disk};
use crate::kubernetes::pods::annotation;

/// The env of a pod's first container that names the OSD id its prepare step keeps.
pub const OSD_ID_ENV: &str = "OSD_ID";

/// What the bridge was asked for, once, by disk.
#[derive(Clone, Debug)]
pub(super) enum Request {
    /// [`CephBridge::fail_disk`](super::CephBridge::fail_disk).
    FailDisk(Disk),
    /// [`CephBridge::fail_prepare`](super::CephBridge::fail_prepare).
    FailPrepare(Disk),
}

/// The OSD id `pod`'s prepare step keeps: its first container's `OSD_ID`, a value or a
/// `fieldRef` to one of the pod's annotations (as a kubelet resolves it); why none.
pub(super) fn prepare_id(pod: &Pod) -> Result<u32, String> {
    let container: Option<&Container> = pod.spec.as_ref().and_then(|s| s.containers.first());
    let env = (container.and_then(|c| c.env.as_ref()).into_iter().flatten())
        .find(|e| e.name == OSD_ID_ENV)
        .ok_or_else(|| format!("no {OSD_ID_ENV} env in the first container: no id to prepare"))?;
    let field = (env.value_from.as_ref())
        .and_then(|v| v.field_ref.as_ref())
        .map(|f| f.field_path.as_str());
    let value = match (env.value.as_deref(), field) {
        (Some(v), _) => Some(v),
        (None, Some(path)) => path
            .strip_prefix("metadata.annotations['")
            .and_then(|rest| rest.strip_suffix("']"))
            .and_then(|key| annotation(pod, key)),
        (None, None) => None,
    };
    let value = value.unwrap_or_default();
    value
        .trim()
        .parse()
        .map_err(|_| format!("{OSD_ID_ENV} {value:?} is not an OSD id"))
}

/// The status patch (with the pod's uid: never another pod of that name) that ends `pod` as a
/// pod whose prepare step exited 1 with `reason` on its termination log, at `now`: phase
/// `Failed`; Ready and ContainersReady False (`PodFailed`), its other conditions kept; every
/// container `terminated` (exit code 1, reason `Error`), the first one's message `reason`.
pub(super) fn failed_prepare_status(pod: &Pod, reason: &str, now: &Time) -> Value {
    let now = json!(now);
    let status = pod.status.clone().unwrap_or_default();
    let mut conditions: Vec<Value> = (status.conditions.iter().flatten())
        .filter(|c| c.type_ != "Ready" && c.type_ != "ContainersReady")
        .map(|c| json!(c))
        .collect();
    for kind in ["Ready", "ContainersReady"] {
        conditions.push(
            json!({"type": kind, "status": "False", "reason": "PodFailed",
            "lastTransitionTime": now}),
        );
    }
    let containers = pod.spec.iter().flat_map(|s| &s.containers);
    let statuses: Vec<Value> = containers
        .enumerate()
        .map(|(i, c)| {
            let started = (status.container_statuses.iter().flatten())
                .find(|s| s.name == c.name)
                .and_then(|s| s.state.as_ref()?.running.as_ref()?.started_at.as_ref())
                .map_or_else(|| now.clone(), |t| json!(t));
            let mut terminated = json!({"exitCode": 1, "reason": "Error",
                "startedAt": started, "finishedAt": now});
            if i == 0 {
                terminated["message"] = json!(reason);
            }
            json!({"name": c.name, "image": c.image, "ready": false, "restartCount": 0,
                "started": false, "state": {"terminated": terminated}})
        })
        .collect();
    json!({
        "metadata": {"uid": pod.uid()},
        "status": {"phase": "Failed", "reason": "Error", "message": reason,
            "conditions": conditions, "containerStatuses": statuses},
    })
}

impl Bridge {
    /// Takes a request of [`super::CephBridge`].
    pub(super) fn request(&mut self, request: Request) {
        match request {
            Request::FailDisk(disk) => {
                if self.table.osd(&disk).is_none() {
                    let error = format!("fail_disk: disk {disk} has no OSD id in the table");
                    self.record(None, "-", "-", BridgeEventKind::Error(error));
                } else if self.disks.get(&disk) != Some(&DiskState::Wiping) {
                    self.disks.insert(disk, DiskState::Failing);
                }
            }
            Request::FailPrepare(disk) => {
                *self.failing_prepares.entry(disk).or_default() += 1;
            }
        }
    }

    /// Fails the disks asked for whose daemon neither starts nor stops: kills it, wipes the
    /// data, leaves the disk's pods so far without a daemon.
    pub(super) fn fail_disks(&mut self) {
        let failing: Vec<Disk> = (self.disks.iter())
            .filter(|(_, s)| **s == DiskState::Failing)
            .map(|(d, _)| d.clone())
            .collect();
        for disk in failing {
            let Some(osd) = self.table.osd(&disk) else {
                continue;
            };
            if self
                .slots
                .holder(osd)
                .is_some_and(|h| h.phase != Phase::Running)
            {
                continue;
            }
            for uid in self.table.pods_on(&disk) {
                self.slots.finish(&uid);
                self.faulted.insert(uid);
            }
            if let Some(h) = self.slots.holder_mut(osd) {
                h.phase = Phase::Failing;
            }
            self.disks.insert(disk.clone(), DiskState::Wiping);
            self.busy += 1;
            let (cluster, ops) = (Arc::clone(&self.cluster), self.ops.clone());
            tokio::spawn(async move {
                let result = cluster.osd_wipe(osd).await.map_err(|e| format!("{e:#}"));
                let _ = ops.send(Done::Wiped { disk, osd, result });
            });
        }
    }

    /// `osd-wipe` of `disk` (OSD `osd`) returned.
    pub(super) fn wiped(&mut self, disk: Disk, osd: u32, result: Result<(), String>) {
        let killed = self
            .slots
            .holder(osd)
            .is_some_and(|h| h.phase == Phase::Failing);
        let holder = if killed { self.slots.free(osd) } else { None };
        let (pod, uid) =
            holder.map_or_else(|| ("-".to_owned(), "-".to_owned()), |h| (h.pod, h.uid));
        self.disks.insert(disk.clone(), DiskState::Blank);
        let kind = match result {
            Ok(()) => BridgeEventKind::DiskFailed { disk },
            Err(e) => BridgeEventKind::Error(format!("osd-wipe {osd} ({disk}): {e}")),
        };
        self.record(Some(osd), &pod, &uid, kind);
    }

    /// Runs the prepare step of `pod`, the next pod of its blank disk `disk`.
    pub(super) fn prepare(&mut self, pod: &Pod, disk: &Disk) {
        let (uid, name, node) = (pod.uid().unwrap_or_default(), pod.name_any(), node_of(pod));
        let osd = self.table.osd(disk);
        if let Some(left) = self.failing_prepares.get_mut(disk).filter(|n| **n > 0) {
            *left -= 1;
            let reason = "the prepare step failed (CephBridge::fail_prepare)".to_owned();
            self.prepare_failed(osd, &name, &uid, reason);
            return;
        }
        let id = match prepare_id(pod) {
            Ok(id) => id,
            Err(reason) => {
                self.prepare_failed(osd, &name, &uid, reason);
                return;
            }
        };
        self.disks
            .insert(disk.clone(), DiskState::Preparing(uid.clone()));
        self.busy += 1;
        let (cluster, ops, disk) = (Arc::clone(&self.cluster), self.ops.clone(), disk.clone());
        tokio::spawn(async move {
            let result = (cluster.osd_prepare(id, &node).await).map_err(|e| format!("{e:#}"));
            let _ = ops.send(Done::Prepared {
                disk,
                uid,
                pod: name,
                osd: id,
                result,
            });
        });
    }

    /// `osd-prepare` of OSD `osd` on `disk` for pod `pod` (`uid`) returned.
    pub(super) fn prepared(
        &mut self,
        disk: Disk,
        pod: &str,
        uid: &str,
        osd: u32,
        result: Result<(), String>,
    ) {
        let ours = self.disks.get(&disk) == Some(&DiskState::Preparing(uid.to_owned()));
        match result {
            Ok(()) => {
                if ours {
                    self.disks.remove(&disk);
                }
                self.table.set_osd(&disk, osd);
                self.slots.add(osd);
                self.record(Some(osd), pod, uid, BridgeEventKind::Prepared);
            }
            Err(reason) => {
                if ours {
                    self.disks.insert(disk, DiskState::Blank);
                }
                self.prepare_failed(Some(osd), pod, uid, reason);
            }
        }
    }

    /// Pod `pod` (`uid`) gets no daemon: its prepare step failed for `reason`. Its status says
    /// so as a kubelet's would ([`failed_prepare_status`]).
    fn prepare_failed(&mut self, osd: Option<u32>, pod: &str, uid: &str, reason: String) {
        self.slots.finish(uid);
        self.faulted.insert(uid.to_owned());
        let kind = BridgeEventKind::PrepareFailed {
            reason: reason.clone(),
        };
        self.record(osd, pod, uid, kind);
        let Some(live) = self.pods.get(uid) else {
            return;
        };
        let patch = failed_prepare_status(live, &reason, &Time(Timestamp::now()));
        let (api, name) = (self.api.clone(), pod.to_owned());
        self.spawn_recorded(osd, pod, uid, async move {
            let params = PatchParams::default();
            match api
                .patch_status(&name, &params, &Patch::Merge(&patch))
                .await
            {
                Ok(_) => None,
                // Gone already, or another pod of that name now.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => None,
                Err(e) => Some(BridgeEventKind::Error(format!(
                    "ending pod {name} as failed: {e}"
                ))),
            }
        });
    }
}

#[cfg(test)]
mod tests;
