use super::*;
use crate::ceph::Release::{Pacific, Reef};

fn of(image: &str) -> (Release, bool) {
    let r = image_release(image);
    (r.release, r.broken)
}

#[test]
fn a_v18_tag_runs_reef() {
    assert_eq!(of("quay.io/ceph/ceph:v18.2.7"), (Reef, false));
    assert_eq!(of("quay.io/ceph/ceph:v18"), (Reef, false));
    assert_eq!(
        of("localhost:5000/ceph/ceph:v18.2.7-20250101"),
        (Reef, false)
    );
    assert_eq!(of("ceph:v18.2.7@sha256:abc"), (Reef, false));
}

#[test]
fn any_other_image_runs_pacific() {
    assert_eq!(of("quay.io/ceph/ceph:v16.2.15"), (Pacific, false));
    assert_eq!(of("quay.io/ceph/ceph"), (Pacific, false));
    assert_eq!(of("quay.io/ceph/ceph:latest"), (Pacific, false));
    assert_eq!(of("quay.io/ceph/ceph:v180"), (Pacific, false));
    assert_eq!(of("quay.io/ceph/ceph:v17.2.8"), (Pacific, false));
    assert_eq!(of("quay.io/ceph/ceph@sha256:v18"), (Pacific, false));
    // A registry port is no tag.
    assert_eq!(of("v18:5000/ceph"), (Pacific, false));
    assert_eq!(of(""), (Pacific, false));
}

#[test]
fn a_broken_tag_keeps_its_release() {
    assert_eq!(of("quay.io/ceph/ceph:v18.2.7-broken"), (Reef, true));
    assert_eq!(of("quay.io/ceph/ceph:v16.2.15-broken"), (Pacific, true));
    assert_eq!(of("quay.io/ceph/ceph:broken"), (Pacific, false));
    assert_eq!(of("quay.io/ceph/ceph-broken:v18.2.7"), (Reef, false));
}
