//! What a pod's image runs: the Ceph release its tag names (`v18…`: Reef; `v16…`, any other
//! tag, none or a digest: the machine's Pacific), and whether its OSD daemon is broken (a tag
//! ending in `-broken`: the daemon cannot start; the image's binaries still report their
//! version).

use k8s_openapi::api::core::v1::Pod;

use crate::ceph::Release;

/// What an image runs (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageRelease {
    pub release: Release,
    /// Its OSD daemon cannot start.
    pub broken: bool,
}

/// What `image` runs (see the module docs).
pub fn image_release(image: &str) -> ImageRelease {
    // The tag: after the last `/` (a registry's `host:port` is before it), without a digest.
    let name = image.rsplit('/').next().unwrap_or(image);
    let name = name.split('@').next().unwrap_or(name);
    let tag = name.split_once(':').map_or("", |(_, tag)| tag);
    let reef = tag
        .strip_prefix("v18")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '-']));
    ImageRelease {
        release: if reef {
            Release::Reef
        } else {
            Release::Pacific
        },
        broken: tag.ends_with("-broken"),
    }
}

/// The image of `pod`'s first container (the OSD daemon's), when it names one.
pub(super) fn daemon_image(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.containers.first()?.image.as_deref()
}

/// What `pod`'s OSD daemon runs: its first container's image's release (Pacific without one).
pub(super) fn daemon_release(pod: &Pod) -> ImageRelease {
    image_release(daemon_image(pod).unwrap_or_default())
}

#[cfg(test)]
mod tests;
