//! One label of every node, from the node watch cache: the failure domain a node label names
//! (`spec.topology.topologyKey`).

use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::Store;
use kube::ResourceExt;
use std::collections::BTreeMap;

/// The value of label `key` on each cached node (`None`: the node has no such label).
pub(crate) fn label_of_nodes(nodes: &Store<Node>, key: &str) -> BTreeMap<String, Option<String>> {
    (nodes.state().iter())
        .map(|node| (node.name_any(), node.labels().get(key).cloned()))
        .collect()
}
