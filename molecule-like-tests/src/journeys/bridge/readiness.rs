//! Readiness by Ceph: a pod whose template asks for it (`testing.local/ready: ceph`) is Ready
//! only once the bridge saw its OSD boot (up with an `up_from` newer than before its start)
//! and marked it so (`testing.local/ceph-osd-up: "true"`, which KWOK's `pod-ready-ceph`
//! stage reads): a readiness probe that asks the daemon.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use serde_json::{json, Value};

use super::events::BridgeEventKind;
use super::slots::Phase;
use super::state::Bridge;
use crate::kubernetes::manifests::READY_ANNOTATION;
use crate::kubernetes::pods::{annotation, is_ready};

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

/// Whether `pod` is to be Ready by its OSD but is Ready before the bridge said its OSD was up.
pub(super) fn ready_early(pod: &Pod) -> bool {
    annotation(pod, READY_ANNOTATION) == Some(READY_WHEN_OSD_UP)
        && is_ready(pod)
        && annotation(pod, OSD_UP_ANNOTATION) != Some("true")
        && pod.metadata.deletion_timestamp.is_none()
}

impl Bridge {
    /// Records the boots Ceph's view shows: up with an `up_from` newer than before the start.
    pub(super) fn note_boots(&mut self) {
        let view = self.ceph.borrow().clone();
        let Some((_, map)) = view.osdmap else {
            return;
        };
        let mut booted = Vec::new();
        for (id, h) in self.slots.held_mut() {
            if h.phase != Phase::Running || h.booted {
                continue;
            }
            if let Some(osd) = map.osd(id).filter(|o| o.up && o.up_from > h.up_from_before) {
                h.booted = true;
                booted.push((id, h.pod.clone(), h.uid.clone(), osd.up_from));
            }
        }
        for (id, pod, uid, up_from) in booted {
            self.record(Some(id), &pod, &uid, BridgeEventKind::Booted { up_from });
        }
    }

    /// Sets `testing.local/ceph-osd-up` on booted pods that are to be Ready by their OSD.
    pub(super) fn mark_booted(&mut self) {
        let mut to_mark = Vec::new();
        let pods = &self.pods;
        for (id, h) in self.slots.held_mut() {
            if !h.booted || h.marked || h.phase != Phase::Running {
                continue;
            }
            let wants = pods
                .get(&h.uid)
                .is_some_and(|p| annotation(p, READY_ANNOTATION) == Some(READY_WHEN_OSD_UP));
            if wants {
                h.marked = true;
                to_mark.push((id, h.clone()));
            }
        }
        for (osd, h) in to_mark {
            let (api, pod, uid) = (self.api.clone(), h.pod.clone(), h.uid.clone());
            self.spawn_recorded(Some(osd), &h.pod, &h.uid, async move {
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
