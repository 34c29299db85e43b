//! The garbage collector: what kube-controller-manager's GC does for pods.
//!
//! Every interval: resolve each pod's ownerReferences through the CRD list (group + kind →
//! plural, scope) and delete, with background propagation and a uid precondition, every pod
//! none of whose owners exists any more (by uid). Owners of unknown kinds count as present.
//! Owners deleted with `propagationPolicy: Foreground` carry the `foregroundDeletion`
//! finalizer: their pods are deleted, and once none is left the finalizer is removed; with
//! `Orphan` the pods lose that ownerReference and the `orphan` finalizer is removed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, Preconditions,
};
use kube::core::GroupVersionKind;
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::rewrite::POD_GROUP;

/// Settings of the garbage collector.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Time between two passes.
    pub interval: Duration,
}

#[derive(Clone, Debug)]
struct Kind {
    resource: ApiResource,
    namespaced: bool,
}

/// `(group, kind)` → served resource, from the CRD list (Pods as the core group too).
async fn kinds(client: &Client) -> anyhow::Result<BTreeMap<(String, String), Kind>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut out = BTreeMap::new();
    for crd in crds.list(&ListParams::default()).await? {
        let spec = &crd.spec;
        let Some(version) = spec
            .versions
            .iter()
            .find(|v| v.storage)
            .or_else(|| spec.versions.first())
        else {
            continue;
        };
        let gvk = GroupVersionKind::gvk(&spec.group, &version.name, &spec.names.kind);
        let kind = Kind {
            resource: ApiResource::from_gvk_with_plural(&gvk, &spec.names.plural),
            namespaced: spec.scope == "Namespaced",
        };
        if spec.group == POD_GROUP && spec.names.kind == "Pod" {
            out.insert((String::new(), "Pod".to_string()), kind.clone());
        }
        out.insert((spec.group.clone(), spec.names.kind.clone()), kind);
    }
    Ok(out)
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Whether an owner still exists: `None` when its kind is unknown.
async fn owner_exists(
    client: &Client,
    kinds: &BTreeMap<(String, String), Kind>,
    ns: &str,
    owner: &OwnerReference,
) -> anyhow::Result<Option<bool>> {
    let key = (group_of(&owner.api_version).to_string(), owner.kind.clone());
    let Some(kind) = kinds.get(&key) else {
        return Ok(None);
    };
    let api: Api<DynamicObject> = if kind.namespaced {
        Api::namespaced_with(client.clone(), ns, &kind.resource)
    } else {
        Api::all_with(client.clone(), &kind.resource)
    };
    let found = api.get_opt(&owner.name).await?;
    Ok(Some(found.is_some_and(|o| {
        o.metadata.uid.as_deref() == Some(owner.uid.as_str())
    })))
}

/// One pass over all pods; returns how many were deleted.
pub async fn pass(client: &Client) -> anyhow::Result<usize> {
    let kinds = kinds(client).await?;
    let pods: Api<Pod> = Api::all(client.clone());
    let all = pods.list(&ListParams::default()).await?;
    let mut deleted = 0;
    for pod in &all {
        if pod.metadata.deletion_timestamp.is_some() || pod.owner_references().is_empty() {
            continue;
        }
        let ns = pod.namespace().unwrap_or_default();
        let mut any_present = false;
        let mut any_gone = false;
        for owner in pod.owner_references() {
            match owner_exists(client, &kinds, &ns, owner).await? {
                Some(false) => any_gone = true,
                Some(true) | None => any_present = true,
            }
        }
        if !any_gone || any_present {
            continue;
        }
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        match api.delete(&pod.name_any(), &dp).await {
            Ok(_) => {
                tracing::info!(pod = %format!("{ns}/{}", pod.name_any()), "owner gone: deleted");
                deleted += 1;
            }
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    deleted += owners_being_deleted(client, &kinds, &all.items).await?;
    Ok(deleted)
}

/// Foreground and orphan deletion of owners (any CRD kind except Pods themselves).
async fn owners_being_deleted(
    client: &Client,
    kinds: &BTreeMap<(String, String), Kind>,
    pods: &[Pod],
) -> anyhow::Result<usize> {
    let mut deleted = 0;
    let mut seen = BTreeSet::new();
    for ((group, _), kind) in kinds {
        if group.is_empty()
            || group == POD_GROUP
            || !seen.insert(kind.resource.plural.clone() + group)
        {
            continue;
        }
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &kind.resource);
        let Ok(list) = api.list(&ListParams::default()).await else {
            continue;
        };
        for owner in list
            .items
            .iter()
            .filter(|o| o.metadata.deletion_timestamp.is_some())
        {
            let fins = owner.finalizers();
            let foreground = fins.iter().any(|f| f == "foregroundDeletion");
            let orphan = fins.iter().any(|f| f == "orphan");
            if !foreground && !orphan {
                continue;
            }
            let uid = owner.metadata.uid.clone().unwrap_or_default();
            let dependents: Vec<&Pod> = pods
                .iter()
                .filter(|p| p.owner_references().iter().any(|o| o.uid == uid))
                .collect();
            for dep in &dependents {
                let ns = dep.namespace().unwrap_or_default();
                let papi: Api<Pod> = Api::namespaced(client.clone(), &ns);
                if orphan {
                    let refs: Vec<&OwnerReference> = dep
                        .owner_references()
                        .iter()
                        .filter(|o| o.uid != uid)
                        .collect();
                    let patch = json!({"metadata": {
                        "resourceVersion": dep.resource_version(),
                        "ownerReferences": refs,
                    }});
                    let _ = papi
                        .patch(
                            &dep.name_any(),
                            &PatchParams::default(),
                            &Patch::Merge(&patch),
                        )
                        .await;
                } else if dep.metadata.deletion_timestamp.is_none()
                    && papi
                        .delete(&dep.name_any(), &DeleteParams::background())
                        .await
                        .is_ok()
                {
                    deleted += 1;
                }
            }
            if dependents.is_empty() {
                let remaining: Vec<&String> = fins
                    .iter()
                    .filter(|f| *f != "foregroundDeletion" && *f != "orphan")
                    .collect();
                let patch = json!({"metadata": {
                    "resourceVersion": owner.resource_version(),
                    "finalizers": remaining,
                }});
                let oapi: Api<DynamicObject> = match owner.namespace() {
                    Some(ns) if kind.namespaced => {
                        Api::namespaced_with(client.clone(), &ns, &kind.resource)
                    }
                    _ => Api::all_with(client.clone(), &kind.resource),
                };
                let _ = oapi
                    .patch(
                        &owner.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await;
                tracing::info!(owner = %owner.name_any(), "dependents gone: owner finalizer removed");
            }
        }
    }
    Ok(deleted)
}

/// Runs the garbage collector until the process ends.
pub async fn run(client: Client, settings: Settings) -> anyhow::Result<()> {
    tracing::info!(?settings, "garbage collector running");
    loop {
        if let Err(e) = pass(&client).await {
            tracing::warn!(error = %e, "gc pass failed");
        }
        tokio::time::sleep(settings.interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::group_of;

    #[test]
    fn groups() {
        assert_eq!(group_of("v1"), "");
        assert_eq!(
            group_of("ceph.elemental.net/v1alpha1"),
            "ceph.elemental.net"
        );
    }
}
