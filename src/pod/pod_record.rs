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
mod tests;
