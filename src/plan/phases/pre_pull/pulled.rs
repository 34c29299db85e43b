//! What a pre-pull pod's status says of its images: pulled (every container started, the
//! release report ended, or the pod Succeeded or Ready), failed (a pull the kubelet gave up
//! on, or a given command exiting non-zero), or still pulling; and the release its OSD image
//! reported.

use super::pod::RELEASE_CONTAINER;
use crate::ceph::Release;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// The kubelet's waiting reasons of a pull that does not succeed by waiting.
const PULL_FAILURES: [&str; 4] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// What a pre-pull pod shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pulled {
    Yes,
    Pulling,
    /// The image and why (the kubelet's reason, and its message when it gave one).
    Failed {
        image: String,
        why: String,
    },
}

/// What `pod` shows; `preflight`: its command was given in the spec (its failure counts).
pub(crate) fn pulled(pod: &Pod, preflight: bool) -> Pulled {
    let Some(status) = &pod.status else {
        return Pulled::Pulling;
    };
    let statuses = status.container_statuses.as_deref().unwrap_or_default();
    let image_of = |s: &ContainerStatus| {
        (pod.spec.iter().flat_map(|p| &p.containers))
            .find(|c| c.name == s.name)
            .and_then(|c| c.image.clone())
            .unwrap_or_else(|| s.image.clone())
    };
    for s in statuses {
        let state = s.state.as_ref();
        if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
            let reason = waiting.reason.as_deref().unwrap_or_default();
            if PULL_FAILURES.contains(&reason) {
                let why = match waiting.message.as_deref() {
                    Some(message) if !message.is_empty() => format!("{reason}: {message}"),
                    _ => reason.to_owned(),
                };
                return Pulled::Failed {
                    image: image_of(s),
                    why,
                };
            }
        }
        if let Some(ended) = state.and_then(|s| s.terminated.as_ref()) {
            if preflight && ended.exit_code != 0 {
                let reason = ended.reason.as_deref().unwrap_or("Error");
                return Pulled::Failed {
                    image: image_of(s),
                    why: format!("the command exited {} ({reason})", ended.exit_code),
                };
            }
        }
    }
    let phase = status.phase.as_deref();
    let ready =
        (status.conditions.iter().flatten()).any(|c| c.type_ == "Ready" && c.status == "True");
    let containers = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    let started = statuses.len() >= containers
        && statuses.iter().all(|s| {
            s.state.as_ref().is_some_and(|st| {
                st.terminated.is_some() || (st.running.is_some() && s.name != RELEASE_CONTAINER)
            })
        });
    if phase == Some("Succeeded") || ready || (started && containers > 0) {
        Pulled::Yes
    } else if phase == Some("Failed") && preflight {
        let why = status.reason.clone().unwrap_or_else(|| "Failed".to_owned());
        let image = (pod.spec.iter().flat_map(|p| &p.containers))
            .find_map(|c| c.image.clone())
            .unwrap_or_default();
        Pulled::Failed {
            image,
            why: format!("the pod failed ({why})"),
        }
    } else {
        Pulled::Pulling
    }
}

/// The release `pod`'s OSD image reported (`ceph-osd --version`, its release container's
/// termination message), once that container ended.
pub(crate) fn reported_release(pod: &Pod) -> Option<Release> {
    let statuses = pod.status.as_ref()?.container_statuses.as_deref()?;
    let ended = (statuses.iter())
        .find(|s| s.name == RELEASE_CONTAINER)?
        .state
        .as_ref()?
        .terminated
        .as_ref()?;
    Release::of_version(ended.message.as_deref()?)
}
