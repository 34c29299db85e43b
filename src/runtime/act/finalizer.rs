//! The operator's finalizer on CephOSDs (`plan::rules::deletion` decides), and whether a CephOSD's
//! namespace is being deleted. A finalizer write is a merge patch of `metadata.finalizers`
//! at the resourceVersion it was computed from: another writer's finalizers are never lost.

use crate::crd::CephOsd;
use crate::plan::rules::deletion::FINALIZER;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};

/// The patch that adds (`hold`) or removes the finalizer, keeping every other one; None when
/// there is nothing to change.
pub(crate) fn finalizers_patch(cr: &CephOsd, hold: bool) -> Option<Value> {
    let mut finalizers = cr.finalizers().to_vec();
    if finalizers.iter().any(|f| f == FINALIZER) == hold {
        return None;
    }
    if hold {
        finalizers.push(FINALIZER.to_owned());
    } else {
        finalizers.retain(|f| f != FINALIZER);
    }
    Some(json!({"metadata": {
        "resourceVersion": cr.resource_version(),
        "finalizers": finalizers,
    }}))
}

/// Adds (`hold`) or removes the finalizer on the CephOSD as it is now (read again: the
/// status written meanwhile changed its version).
pub(crate) async fn write(crs: &Api<CephOsd>, name: &str, hold: bool) -> Result<(), kube::Error> {
    let Some(cr) = crs.get_opt(name).await? else {
        return Ok(());
    };
    match finalizers_patch(&cr, hold) {
        Some(patch) => crs
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ()),
        None => Ok(()),
    }
}

/// Whether `namespace` is being deleted; false when it cannot be read (then the deletion is
/// taken as kubectl's default one).
pub(crate) async fn namespace_terminating(client: &Client, namespace: &str) -> bool {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    match namespaces.get_opt(namespace).await {
        Ok(Some(ns)) => ns.metadata.deletion_timestamp.is_some(),
        Ok(None) => true,
        Err(error) => {
            tracing::warn!(namespace, %error, "cannot read the namespace; taking the deletion as kubectl's default");
            false
        }
    }
}

#[cfg(test)]
mod tests;
