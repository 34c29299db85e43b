use super::*;
use k8s_openapi::api::core::v1::NodeStatus;
use std::collections::BTreeMap;

fn node(name: &str, cordoned: bool, labels: &[(&str, &str)]) -> Node {
    let mut node = Node::default();
    node.metadata.name = Some(name.into());
    node.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    );
    node.metadata.annotations = Some(BTreeMap::from([("big".into(), "x".repeat(100))]));
    node.spec = Some(NodeSpec {
        unschedulable: Some(cordoned),
        pod_cidr: Some("10.0.0.0/24".into()),
        ..NodeSpec::default()
    });
    node.status = Some(NodeStatus::default());
    node
}

#[test]
fn a_cached_node_keeps_its_name_labels_and_cordon_only() {
    let mut n = node("n1", true, &[("rack", "r1")]);
    strip_node(&mut n);
    assert_eq!(n.name_any(), "n1");
    assert_eq!(n.labels().get("rack").map(String::as_str), Some("r1"));
    assert!(is_cordoned(&n));
    assert!(n.metadata.annotations.is_none() && n.status.is_none());
    assert_eq!(n.spec.and_then(|s| s.pod_cidr), None);
}

#[test]
fn a_node_is_passed_on_when_its_cordon_or_labels_change_only() {
    let mut changes = NodeChanges::default();
    assert!(changes.changed(&node("n1", false, &[("rack", "r1")])));
    // A status report: nothing that matters changed.
    assert!(!changes.changed(&node("n1", false, &[("rack", "r1")])));
    assert!(changes.changed(&node("n1", false, &[("rack", "r2")])));
    assert!(changes.changed(&node("n1", true, &[("rack", "r2")])));
    assert!(!changes.changed(&node("n1", true, &[("rack", "r2")])));
    assert!(changes.changed(&node("n2", true, &[("rack", "r2")])));
}
