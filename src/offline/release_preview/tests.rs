use super::*;

#[test]
fn a_new_release_in_the_image_says_what_is_checked_before_the_first_stop() {
    let note = release_note(
        Some("quay.io/ceph/ceph:v16.2.15"),
        Some("quay.io/ceph/ceph:v18.2.7"),
        true,
    )
    .unwrap();
    assert!(
        note.contains("(pacific (16)) → quay.io/ceph/ceph:v18.2.7 (reef (18))"),
        "{note}"
    );
    assert!(
        note.contains("monitors and managers on the new release"),
        "{note}"
    );
    assert!(note.contains("pre-pull pods report"), "{note}");
    let canary = release_note(Some("ceph:v16.2.15"), Some("ceph:latest"), false).unwrap();
    assert!(
        canary.contains("ceph:latest (release not in its tag)"),
        "{canary}"
    );
    assert!(
        canary.contains("the first update domain is the canary"),
        "{canary}"
    );
}

#[test]
fn the_same_image_or_none_says_nothing() {
    assert_eq!(release_note(Some("ceph:v18"), Some("ceph:v18"), true), None);
    assert_eq!(release_note(None, Some("ceph:v18"), true), None);
    assert_eq!(tagged_release("registry:5000/ceph"), None);
    assert_eq!(
        tagged_release("registry:5000/ceph:v18.2.7-broken"),
        Some(Release::REEF)
    );
}
