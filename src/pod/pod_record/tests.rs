use super::*;
use serde_json::json;

fn pod(spec: &serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).expect("pod")
}

fn affinity(expressions: &serde_json::Value) -> serde_json::Value {
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": expressions}]}}})
}

#[test]
fn the_bound_host_is_the_affinity_host_else_the_node() {
    let host = |spec| bound_host(&pod(&spec)).map(str::to_owned);
    let containers = json!([{"name": "osd"}]);
    assert_eq!(
        host(json!({"containers": containers, "nodeName": "n2",
                "affinity": affinity(&json!([{"key": HOSTNAME_LABEL, "operator": "In", "values": ["N2"]}]))})),
        Some("N2".into())
    );
    assert_eq!(
        host(json!({"containers": containers, "nodeName": "n2"})),
        Some("n2".into())
    );
    // Two hosts allowed, or two terms: no single host.
    assert_eq!(
        host(json!({"containers": containers,
                "affinity": affinity(&json!([{"key": HOSTNAME_LABEL, "operator": "In", "values": ["a", "b"]}]))})),
        None
    );
    assert_eq!(host(json!({"containers": containers})), None);
    assert_eq!(bound_host(&Pod::default()), None);
}

#[test]
fn the_recorded_data_is_a_plain_value_in_the_first_container() {
    let data = |env| {
        recorded_data(&pod(&json!({"containers": [{"name": "osd", "env": env}]})))
            .map(str::to_owned)
    };
    assert_eq!(
        data(json!([{"name": "X", "value": "1"}, {"name": DATA_ENV, "value": "/dev/sdb"}])),
        Some("/dev/sdb".into())
    );
    // The reference operator's downward-API form records nothing.
    assert_eq!(
        data(json!([{"name": DATA_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.annotations['ceph.elemental.net/data']"}}}])),
        None
    );
    assert_eq!(data(json!([])), None);
}
