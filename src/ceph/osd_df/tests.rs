use super::*;

#[test]
fn each_osds_bytes_and_pgs_are_read() {
    let usage = parse_osd_df(include_bytes!(
        "../../../tests/data/ceph/osd_df_two_osds.json"
    ))
    .expect("parses");
    assert_eq!(usage.len(), 2);
    let osd0 = &usage[&OsdId(0)];
    assert_eq!(osd0.bytes_used, 301_508 * 1024);
    assert_eq!(osd0.pgs, 32);
    assert_eq!(osd0.status, "up");
}

#[test]
fn the_recovery_rate_is_zero_unless_ceph_says_one() {
    assert_eq!(
        parse_recovery_rate(br#"{"pgmap": {"num_pgs": 32}}"#).unwrap(),
        0
    );
    assert_eq!(
        parse_recovery_rate(br#"{"pgmap": {"recovering_bytes_per_sec": 1048576}}"#).unwrap(),
        1_048_576
    );
    let error = parse_recovery_rate(br#"{"health": {}}"#).unwrap_err();
    assert!(error.to_string().contains("pgmap"), "{error}");
}
