use super::*;
use crate::ceph::parse_osd_dump;
use crate::ceph::test_data::fixture;

#[test]
fn versions_are_counted_by_release_for_each_kind_of_daemon() {
    let json = br#"{
        "mon": {"ceph version 18.2.7 (x) reef (stable)": 3},
        "mgr": {"ceph version 18.2.7 (x) reef (stable)": 1,
                "ceph version 16.2.15 (y) pacific (stable)": 1},
        "osd": {"ceph version 16.2.15 (y) pacific (stable)": 5,
                "ceph version 16.2.14 (z) pacific (stable)": 2,
                "ceph version 18.2.7 (x) reef (stable)": 1},
        "overall": {"ceph version 18.2.7 (x) reef (stable)": 5}
    }"#;
    let releases = parse_versions(json).unwrap();
    assert_eq!(releases.mon, BTreeMap::from([(Release::REEF, 3)]));
    assert_eq!(
        releases.mgr,
        BTreeMap::from([(Release::PACIFIC, 1), (Release::REEF, 1)])
    );
    assert_eq!(
        releases.osd,
        BTreeMap::from([(Release::PACIFIC, 7), (Release::REEF, 1)])
    );
}

#[test]
fn a_version_without_a_readable_release_is_an_error_naming_it() {
    let error = parse_versions(br#"{"mon": {"ceph version ?": 1}}"#).unwrap_err();
    assert_eq!(error.path, "mon");
    assert!(error.message.contains("ceph version ?"), "{error}");
    // A kind with no daemon reporting is absent from the answer: none of it.
    assert_eq!(parse_versions(b"{}").unwrap(), DaemonReleases::default());
    assert_eq!(parse_versions(br#"{"mon": 3}"#).unwrap_err().path, "mon");
}

#[test]
fn the_osdmap_says_which_release_every_osd_runs_at_least() {
    let dump = parse_osd_dump(&fixture("osd_dump_all_up")).unwrap();
    assert_eq!(dump.require_osd_release, Some(Release::PACIFIC));
    let without = br#"{"epoch": 3, "osds": []}"#;
    assert_eq!(parse_osd_dump(without).unwrap().require_osd_release, None);
    let unknown = br#"{"epoch": 3, "osds": [], "require_osd_release": "not-a-release"}"#;
    let error = parse_osd_dump(unknown).unwrap_err();
    assert_eq!(error.path, "require_osd_release");
}
