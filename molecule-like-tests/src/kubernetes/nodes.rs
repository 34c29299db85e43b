//! Fake Nodes for the hosts a CephOSD names. KWOK (`--manage-all-nodes`) makes them Ready and
//! keeps their leases; the scheduler places pods on them; KWOK's stages play the kubelet.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};

use super::manifests::is_tagged_host;

/// Every host named by `spec.storage[].hosts[]` of a CephOSD manifest (or spec patch).
pub fn hosts_of(manifest: &Value) -> BTreeSet<String> {
    let spec = manifest.get("spec").unwrap_or(manifest);
    spec.get("storage")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("hosts").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// The Node a kubelet on `host` would register: named after it, `kubernetes.io/hostname` = it.
pub fn node(host: &str) -> Node {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": host,
            "labels": {
                "kubernetes.io/hostname": host,
                "kubernetes.io/os": "linux",
                "type": "kwok",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
    }))
    .expect("a Node from a literal")
}

/// Creates the Nodes of `hosts` that do not exist yet (Nodes are cluster-wide and shared by
/// the scenarios). Host names the API refuses as Node names are skipped: the scenarios that
/// use them test the operator's own validation.
pub async fn ensure_nodes(client: &Client, hosts: &BTreeSet<String>) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    for host in hosts {
        match nodes.create(&PostParams::default(), &node(host)).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 422 => {}
            Err(e) => return Err(anyhow::anyhow!("creating Node {host}: {e}")),
        }
    }
    Ok(())
}

/// Deletes the Nodes of the hosts tagged `tag` ([`is_tagged_host`]): KWOK renews the lease of
/// every Node it manages, a cost that would otherwise grow with each scenario of a run.
pub async fn delete_tagged_nodes(client: &Client, tag: &str) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    for node in nodes.list(&ListParams::default()).await?.items {
        let name = node.name_any();
        if !is_tagged_host(&name, tag) {
            continue;
        }
        match nodes.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(anyhow::anyhow!("deleting Node {name}: {e}")),
        }
    }
    Ok(())
}

/// Sets label `key` of Node `node` to `value`, as an admin does.
pub async fn label_node(client: &Client, node: &str, key: &str, value: &str) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let patch = json!({"metadata": {"labels": {key: value}}});
    nodes
        .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests;
