//! Pre-pull pods report their image's release from the real binary: a pre-pull pod's
//! `ceph-release` container (it runs `ceph-osd --version > /dev/termination-log`) is given
//! what `ceph-osd --version` of its image's release prints ([`super::image`]; a `-broken`
//! image's binaries report theirs), in the pod annotation [`RELEASE_OUTPUT_ANNOTATION`].
//! KWOK's `pre-pull-ceph-release` stage then ends that container as a kubelet would:
//! terminated, exit code 0, that output as its message; its other containers stay as they were.

use ceph_osd_operator::labels::is_pre_pull;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::ResourceExt;
use serde_json::json;

use super::events::BridgeEventKind;
use super::image::image_release;
use super::state::Bridge;
use crate::kubernetes::pods::annotation;

/// The pre-pull pod's container that reports its image's release.
pub const CEPH_RELEASE_CONTAINER: &str = "ceph-release";
/// Pod annotation the bridge sets to that container's output (KWOK's `pre-pull-ceph-release`
/// stage reads it).
pub const RELEASE_OUTPUT_ANNOTATION: &str = "testing.local/ceph-release-output";

impl Bridge {
    /// Gives `pod`'s `ceph-release` container its output, once per pod (see the module docs).
    pub(super) fn report_release(&mut self, pod: &Pod) {
        if !is_pre_pull(pod) || annotation(pod, RELEASE_OUTPUT_ANNOTATION).is_some() {
            return;
        }
        let container = (pod.spec.iter().flat_map(|s| &s.containers))
            .find(|c| c.name == CEPH_RELEASE_CONTAINER);
        let Some(image) = container.and_then(|c| c.image.as_deref()) else {
            return;
        };
        let (name, uid) = (pod.name_any(), pod.uid().unwrap_or_default());
        if !self.reported.insert(("release".to_owned(), uid.clone())) {
            return;
        }
        let release = image_release(image).release;
        let api = self.api.clone();
        // The uid in the patch: never another pod of that name.
        let patch_uid = uid.clone();
        self.spawn_recorded(None, &name.clone(), &uid, async move {
            let output = match release.osd_version().await {
                Ok(output) => output,
                Err(e) => return Some(BridgeEventKind::Error(format!("{e:#}"))),
            };
            let patch = json!({"metadata": {"uid": patch_uid,
                "annotations": {RELEASE_OUTPUT_ANNOTATION: output}}});
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => Some(BridgeEventKind::ReleaseReported { release }),
                // Gone already, or another pod of that name now.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => None,
                Err(e) => Some(BridgeEventKind::Error(format!(
                    "reporting the release of pod {name}: {e}"
                ))),
            }
        });
    }
}
