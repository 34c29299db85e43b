//! What an OSD pod carries that no edit can change: the host its spec binds it to and the
//! devices the operator wrote into its env as plain values when it created it. Annotations
//! can be rewritten by anyone who may edit the pod; the spec of a pod cannot. So the disk a
//! pod holds is read from here first.

use k8s_openapi::api::core::v1::{Pod, PodSpec};

/// The node-name label the operator binds every OSD pod to.
pub(crate) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// The env var carrying the OSD's data device in every container of an OSD pod.
pub(crate) const DATA_ENV: &str = "OSD_DEVICE";

/// The host the pod is bound to: the single value of its required `kubernetes.io/hostname`
/// node affinity (the host as the CR spells it), else the node it was scheduled to.
pub(crate) fn bound_host(pod: &Pod) -> Option<&str> {
    let spec = pod.spec.as_ref()?;
    affinity_host(spec).or(spec.node_name.as_deref())
}

/// The host of a required node affinity that allows exactly one `kubernetes.io/hostname`.
fn affinity_host(spec: &PodSpec) -> Option<&str> {
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let [term] = terms.as_slice() else {
        return None;
    };
    let mut hosts = term
        .match_expressions
        .iter()
        .flatten()
        .filter(|e| e.key == HOSTNAME_LABEL && e.operator == "In")
        .filter_map(|e| match e.values.as_deref() {
            Some([host]) => Some(host.as_str()),
            _ => None,
        });
    let host = hosts.next()?;
    hosts.next().is_none().then_some(host)
}

/// The data device the operator recorded in the pod's first container as a plain value (pods
/// made before that record existed take it from the annotation instead: `None`).
pub(crate) fn recorded_data(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()?
        .containers
        .first()?
        .env
        .iter()
        .flatten()
        .find(|e| e.name == DATA_ENV)?
        .value
        .as_deref()
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
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
}
