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
