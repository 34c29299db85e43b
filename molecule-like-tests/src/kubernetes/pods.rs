//! Pods as the scenarios read them: Ready or not, the OSD they claim, the rollout order, and
//! one line per pod for failure messages.

use std::collections::BTreeMap;

use ceph_osd_operator::{labels, OsdKey};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The rollout order, computed independently of the operator: case-insensitive `host:data`,
/// ties broken by the exact key.
pub fn rollout_order(key: &OsdKey) -> (String, String) {
    let k = key.to_string();
    (k.to_lowercase(), k)
}

/// Pods by name with their disks (what a rollout check compares a pod watch with).
pub fn names_by_key(pods: &BTreeMap<OsdKey, Pod>) -> BTreeMap<String, OsdKey> {
    (pods.iter())
        .map(|(k, p)| (p.name_any(), k.clone()))
        .collect()
}

/// An annotation of a pod.
pub fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The OSD a pod claims by its `host` and `data` annotations.
pub fn pod_key(pod: &Pod) -> Option<OsdKey> {
    Some(OsdKey::new(
        annotation(pod, labels::HOST)?,
        annotation(pod, labels::DATA)?,
    ))
}

/// One line per pod: name, key, phase, Ready, deletion, annotations.
pub fn describe_pods(pods: &[Pod]) -> String {
    let mut out = String::new();
    for p in pods {
        let phase = p
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "-".into());
        let deleting = if p.metadata.deletion_timestamp.is_some() {
            " TERMINATING"
        } else {
            ""
        };
        let annotations: BTreeMap<_, _> = p
            .metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        out.push_str(&format!(
            "  {} phase={phase} ready={}{deleting} uid={} rv={} annotations={annotations:?}\n",
            p.name_any(),
            is_ready(p),
            p.metadata.uid.as_deref().unwrap_or("-"),
            p.metadata.resource_version.as_deref().unwrap_or("-"),
        ));
    }
    if out.is_empty() {
        out.push_str("  (no pods)\n");
    }
    out
}
