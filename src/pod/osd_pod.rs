//! Builds an OSD pod: `spec.podTemplate` deep-merged with the operator's additions from
//! `templates/pod.yaml.j2`, plus the device env vars appended to every container.
//!
//! CR values enter the template only as data; nothing from a CR is ever compiled.

use crate::crd::desired::DesiredOsd;
use crate::crd::template_rules::remove_forbidden_fields;
use crate::pod::pod_additions::{pod_additions, PodIdentity, RenderError};
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

/// Renders the pod for one OSD.
pub(crate) fn render_pod(
    pod_template: &Value,
    osd: &DesiredOsd,
    identity: &PodIdentity<'_>,
) -> Result<Pod, RenderError> {
    let Value::Object(template) = pod_template else {
        return Err(RenderError::TemplateNotAMapping(json_type(pod_template)));
    };
    let mut additions = pod_additions(osd, identity)?;
    let mut pod = Value::Object(template.clone());
    // What the operator computes is never taken from the template (db/wal of another OSD,
    // a pod-state that skips the readiness gate, a node that is not the OSD's host).
    remove_forbidden_fields(&mut pod);
    deep_merge(&mut pod, additions.remove("pod").unwrap_or(Value::Null));
    let env = additions.remove("containerEnv").unwrap_or(Value::Null);
    append_container_env(&mut pod, &env);
    serde_path_to_error::deserialize(pod).map_err(|e| RenderError::InvalidPod {
        path: e.path().to_string(),
        source: e.into_inner(),
    })
}

/// Merges `overlay` into `base`: mappings key by key (the overlay wins), anything else replaced.
pub(crate) fn deep_merge(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(&key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, overlay) => *base = overlay,
    }
}

/// Appends the device env vars to every init container and container (creating `env`).
fn append_container_env(pod: &mut Value, env: &Value) {
    let Some(entries) = env.as_array() else {
        return;
    };
    for list in ["initContainers", "containers"] {
        let Some(containers) = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let container_env = container
                .entry("env")
                .or_insert_with(|| Value::Array(Vec::new()));
            if !container_env.is_array() {
                *container_env = Value::Array(Vec::new());
            }
            if let Value::Array(container_env) = container_env {
                container_env.extend(entries.iter().cloned());
            }
        }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests;
