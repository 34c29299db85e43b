use super::*;

#[test]
fn a_release_is_read_from_each_way_ceph_prints_a_version() {
    for (text, want) in [
        (
            "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)",
            Some(Release::PACIFIC),
        ),
        (
            "ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)",
            Some(Release::REEF),
        ),
        ("18.2.7", Some(Release::REEF)),
        ("v16.2.15", Some(Release::PACIFIC)),
        // A release newer than the names known here is still ordered by its number.
        (
            "ceph version 21.1.0 (abc) umbrella (dev)",
            Some(Release(21)),
        ),
        // Number and name disagree: not read at all.
        ("ceph version 16.2.15 (abc) reef (stable)", None),
        ("ceph version", None),
        ("version 16.2.15", None),
        ("pacific", None),
        ("", None),
        ("x16.2", None),
    ] {
        assert_eq!(Release::of_version(text), want, "{text:?}");
    }
}

#[test]
fn releases_are_ordered_by_number_and_named_as_ceph_names_them() {
    assert_eq!(Release::from_name("pacific"), Some(Release::PACIFIC));
    assert_eq!(Release::from_name(" Reef "), Some(Release::REEF));
    assert_eq!(Release::from_name("ceph"), None);
    assert!(Release::PACIFIC < Release::REEF);
    assert_eq!(Release::PACIFIC.steps_to(Release::REEF), 2);
    assert_eq!(Release::REEF.steps_to(Release::PACIFIC), -2);
    assert_eq!(Release::REEF.to_string(), "reef (18)");
    assert_eq!(Release(30).to_string(), "release 30");
    for (major, name) in NAMES {
        assert_eq!(Release::from_name(name), Some(Release(major)));
        assert_eq!(Release(major).name(), Some(name));
    }
}
