//! deploy/'s RBAC objects, applied as the tests need them: the Lease Role in a test's own
//! namespace (for tests that elect a leader there), the Ceph step lock's Role there (for gated
//! tests), or a whole variant bound to another ServiceAccount.

use anyhow::{bail, Context};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use serde_json::Value;

use crate::kubernetes::manifests::FIELD_MANAGER;
use crate::paths::workspace_root;

/// The objects of a YAML file under the workspace root.
pub fn manifests(relative: &str) -> anyhow::Result<Vec<Value>> {
    let path = workspace_root().join(relative);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Server-side applies RBAC objects (Role, RoleBinding, ClusterRole, ClusterRoleBinding).
pub async fn apply(client: &Client, docs: &[Value]) -> anyhow::Result<()> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for doc in docs {
        let name = doc["metadata"]["name"]
            .as_str()
            .context("an RBAC object without a name")?;
        let namespace = doc["metadata"]["namespace"].as_str().unwrap_or("default");
        let patch = Patch::Apply(doc);
        match doc["kind"].as_str() {
            Some("Role") => {
                let api: Api<Role> = Api::namespaced(client.clone(), namespace);
                api.patch(name, &params, &patch).await?;
            }
            Some("RoleBinding") => {
                let api: Api<RoleBinding> = Api::namespaced(client.clone(), namespace);
                api.patch(name, &params, &patch).await?;
            }
            Some("ClusterRole") => {
                let api: Api<ClusterRole> = Api::all(client.clone());
                api.patch(name, &params, &patch).await?;
            }
            Some("ClusterRoleBinding") => {
                let api: Api<ClusterRoleBinding> = Api::all(client.clone());
                api.patch(name, &params, &patch).await?;
            }
            other => bail!("not an RBAC object: {other:?} {name}"),
        }
    }
    Ok(())
}

/// Lets the operator's ServiceAccount hold its Lease in `namespace` too: deploy/'s Lease Role
/// and RoleBinding, moved there (they go with the namespace).
pub async fn grant_lease_in(client: &Client, namespace: &str) -> anyhow::Result<()> {
    let mut docs = manifests("deploy/lease-rbac.yaml")?;
    for doc in &mut docs {
        doc["metadata"]["namespace"] = Value::from(namespace);
    }
    apply(client, &docs).await
}

/// Lets the operator's ServiceAccount hold the step locks of Ceph clusters (Leases
/// `ceph-osd-step-<fsid>`) in `namespace`: deploy/ceph-gate/'s lock Role and RoleBinding, moved
/// there (they go with the namespace); and deploy/ceph-gate/'s read of the kube-system
/// Namespace (this Kubernetes cluster's identity in the lock's place recorded in Ceph).
pub async fn grant_ceph_lock_in(client: &Client, namespace: &str) -> anyhow::Result<()> {
    let mut docs = manifests("deploy/ceph-gate/ceph-lock-rbac.yaml")?;
    for doc in &mut docs {
        doc["metadata"]["namespace"] = Value::from(namespace);
    }
    docs.extend(manifests("deploy/ceph-gate/lock-place-rbac.yaml")?);
    apply(client, &docs).await
}
