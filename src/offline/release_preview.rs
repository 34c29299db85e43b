//! What a plan preview says of a new OSD image: which release each image names (its tag,
//! only a hint: the operator trusts only what the image and Ceph report) and what is checked
//! before the first stop.

use crate::ceph::Release;

/// The first container's image of a pod template (the OSD's).
pub(crate) fn osd_image(template: &serde_json::Value) -> Option<&str> {
    template.pointer("/spec/containers/0/image")?.as_str()
}

/// The release an image's tag names (`…:v18.2.7` → reef), when it names one.
fn tagged_release(image: &str) -> Option<Release> {
    let tag = image.rsplit_once(':')?.1;
    if tag.contains('/') {
        // `registry:5000/ceph`: a port, no tag.
        return None;
    }
    Release::of_version(tag.split('-').next()?)
}

/// The words of a preview whose OSD image changes from `from` to `to` (`pre_pull`: the spec
/// pulls ahead); None: the image stays.
pub(crate) fn release_note(from: Option<&str>, to: Option<&str>, pre_pull: bool) -> Option<String> {
    let (from, to) = (from?, to?);
    if from == to {
        return None;
    }
    let named = |image: &str| {
        tagged_release(image).map_or_else(|| "release not in its tag".to_owned(), |r| r.to_string())
    };
    let how = if pre_pull {
        "its pre-pull pods report the new image's `ceph-osd --version` before the first stop"
    } else {
        "without spec.prePull the first update domain is the canary: no second one stops before \
         its OSDs report their release"
    };
    Some(format!(
        "the OSD image changes: {from} ({}) → {to} ({}). Before each step the gate checks \
         Ceph's release rules: monitors and managers on the new release, at most two releases \
         past require_osd_release and past what the step's OSDs run, no OSD going back to an \
         older release than it ran, no release change on HEALTH_ERR; {how}",
        named(from),
        named(to)
    ))
}

#[cfg(test)]
mod tests;
