//! What a pod's status says of it: since when it is Ready, and why it cannot be scheduled.

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::jiff::Timestamp;

/// The pod's condition of type `type_` when its status is `status`.
fn condition<'a>(pod: &'a Pod, type_: &str, status: &str) -> Option<&'a PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
}

/// The scheduler's message while a pod cannot be placed (`PodScheduled` False).
pub(crate) fn unschedulable(pod: &Pod) -> Option<String> {
    let condition = condition(pod, "PodScheduled", "False")?;
    Some(
        condition
            .message
            .clone()
            .or_else(|| condition.reason.clone())
            .unwrap_or_else(|| "not scheduled".to_owned()),
    )
}

/// When the pod's `Ready` condition turned `True` (its creation time when the kubelet did not
/// say), or None while it is not Ready.
pub(crate) fn ready_since(pod: &Pod) -> Option<Timestamp> {
    let condition = condition(pod, "Ready", "True")?;
    condition
        .last_transition_time
        .as_ref()
        .or(pod.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
        .or(Some(Timestamp::UNIX_EPOCH))
}

/// Why the pod failed, if it did: it ended `Failed`, or one of its containers (init ones too)
/// exited non-zero now or before its last restart.
pub(crate) fn failure(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    let statuses = (status.init_container_statuses.iter().flatten())
        .chain(status.container_statuses.iter().flatten());
    for container in statuses {
        let ended = [container.state.as_ref(), container.last_state.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|s| s.terminated.as_ref())
            .find(|t| t.exit_code != 0);
        if let Some(t) = ended {
            let words = (t.message.as_deref())
                .or(t.reason.as_deref())
                .map_or_else(String::new, |m| format!(": {}", m.trim()));
            return Some(format!(
                "container {} exited with code {}{words}",
                container.name, t.exit_code
            ));
        }
    }
    (status.phase.as_deref() == Some("Failed")).then(|| {
        let why = (status.message.as_deref())
            .or(status.reason.as_deref())
            .unwrap_or("no reason given");
        format!("the pod failed: {why}")
    })
}

#[cfg(test)]
mod tests;
