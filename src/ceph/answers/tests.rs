use super::*;
use crate::ceph::test_data::{fixture, ids};

#[test]
fn status_of_a_healthy_cluster() {
    let s = parse_status(&fixture("status_healthy")).unwrap();
    assert_eq!(s.fsid, "7011e4e5-061d-4159-a02f-0c78dae09efa");
    assert_eq!(s.quorum, vec![0]);
    assert_eq!(s.quorum_names, vec!["a"]);
    assert!(s.mgr_available);
    assert_eq!(s.health, "HEALTH_OK");
    assert!(s.health_checks.is_empty());
}

#[test]
fn status_with_the_mgr_down_says_so_beside_a_stale_pg_digest() {
    let s = parse_status(&fixture("status_mgr_down")).unwrap();
    assert!(!s.mgr_available);
    assert_eq!(s.health, "HEALTH_WARN");
    assert_eq!(s.health_checks["MGR_DOWN"], "no active mgr");
}

#[test]
fn status_with_an_osd_down_names_the_checks() {
    let s = parse_status(&fixture("status_1_down")).unwrap();
    assert!(s.mgr_available);
    assert_eq!(s.health_checks["OSD_DOWN"], "1 osds down");
    assert!(s.health_checks.contains_key("OSD_FLAGS"));
}

#[test]
fn pg_stat_of_a_clean_cluster() {
    let p = parse_pg_stat(&fixture("pg_stat_clean")).unwrap();
    assert!(p.ready);
    assert_eq!(p.num_pgs, 33);
    assert_eq!(
        p.by_state,
        vec![PgStateCount {
            state: "active+clean".into(),
            count: 33
        }]
    );
}

#[test]
fn pg_stat_right_after_a_stop_and_while_down() {
    let p = parse_pg_stat(&fixture("pg_stat_stale_after_stop")).unwrap();
    assert_eq!(p.by_state[0].state, "stale+active+clean");
    assert_eq!(p.by_state[0].count, 11);
    let p = parse_pg_stat(&fixture("pg_stat_one_osd_down")).unwrap();
    let states: Vec<_> = p.by_state.iter().map(|s| s.state.as_str()).collect();
    assert_eq!(states, ["active+undersized", "active+undersized+degraded"]);
    let p = parse_pg_stat(&fixture("pg_stat_peering")).unwrap();
    assert_eq!(p.by_state[0].state, "peering");
}

#[test]
fn pg_stat_right_after_a_mgr_start() {
    // The shape the mgr answers before it has heard from the OSDs.
    let json = br#"
{"pg_ready":false,"pg_summary":{"num_pg_by_state":[{"name":"unknown","num":33}],"num_pgs":33}
}"#;
    let p = parse_pg_stat(json).unwrap();
    assert!(!p.ready);
    assert_eq!(p.by_state[0].state, "unknown");
}

#[test]
fn pg_stat_without_pgs() {
    let p = parse_pg_stat(br#"{"pg_ready":true,"pg_summary":{"num_pg_by_state":[]}}"#).unwrap();
    assert_eq!(p.num_pgs, 0);
    assert!(p.by_state.is_empty());
}

#[test]
fn osd_dump_all_up() {
    let d = parse_osd_dump(&fixture("osd_dump_all_up")).unwrap();
    assert_eq!(d.epoch, 11);
    assert_eq!(d.osds.len(), 3);
    for (id, o) in &d.osds {
        assert_eq!(*id, o.id);
        assert!(o.up && o.is_in && !o.noout);
        assert_eq!(o.up_from, 8);
        assert_eq!(o.state, ["exists", "up"]);
    }
}

#[test]
fn osd_dump_with_noout_then_down_then_up_again() {
    let d = parse_osd_dump(&fixture("osd_dump_noout_on_1")).unwrap();
    assert!(d.osds[&OsdId(1)].noout && d.osds[&OsdId(1)].up);
    assert!(!d.osds[&OsdId(0)].noout);
    assert_eq!(d.without_noout(&ids(&[0, 1, 7])), [OsdId(0), OsdId(7)]);
    assert_eq!(d.with_noout(&ids(&[0, 1, 7])), [OsdId(1)]);

    let d = parse_osd_dump(&fixture("osd_dump_1_down")).unwrap();
    let one = &d.osds[&OsdId(1)];
    assert!(!one.up && one.is_in && one.noout);
    assert_eq!(one.state, ["exists", "noout"]);
    assert_eq!(one.up_from, 8);

    let d = parse_osd_dump(&fixture("osd_dump_1_up_again")).unwrap();
    let one = &d.osds[&OsdId(1)];
    assert!(one.up && one.noout);
    assert_eq!(one.up_from, 16);
}

#[test]
fn osd_metadata_with_and_without_pod_names() {
    let m = parse_osd_metadata(&fixture("osd_metadata_plain")).unwrap();
    assert_eq!(m.len(), 3);
    assert!(m
        .values()
        .all(|m| m.pod_name.is_none() && m.hostname.is_some()));

    let m = parse_osd_metadata(&fixture("osd_metadata_with_pod")).unwrap();
    let one = &m[&OsdId(1)];
    assert_eq!(one.pod_name.as_deref(), Some("osd-host-1-data-x7k2q"));
    assert_eq!(one.pod_namespace.as_deref(), Some("ceph-test"));
    assert_eq!(one.hostname.as_deref(), Some("node-1"));
    assert!(m[&OsdId(0)].pod_name.is_none());
}

#[test]
fn osd_metadata_of_an_osd_that_never_booted_has_only_its_id() {
    let m = parse_osd_metadata(br#"[{"id":3}]"#).unwrap();
    assert_eq!(
        m[&OsdId(3)],
        OsdMetadata {
            id: OsdId(3),
            hostname: None,
            pod_name: None,
            pod_namespace: None,
            ceph_version: None,
            devices: ReportedDevices::default(),
        }
    );
}

#[test]
fn ok_to_stop_answers() {
    let a = parse_ok_to_stop(&fixture("ok_to_stop_one_osd")).unwrap();
    assert!(a.ok_to_stop);
    assert_eq!(a.osds, ids(&[0]));
    assert_eq!((a.num_ok_pgs, a.num_not_ok_pgs), (33, 0));
    assert_eq!(a.ok_become_degraded.len(), 33);
    assert!(a.bad_become_inactive.is_empty());

    let a = parse_ok_to_stop(&fixture("ok_to_stop_all_osds")).unwrap();
    assert!(!a.ok_to_stop);
    assert_eq!(a.osds, ids(&[0, 1, 2]));
    assert_eq!((a.num_ok_pgs, a.num_not_ok_pgs), (0, 33));
    assert_eq!(a.bad_become_inactive.len(), 33);
    assert_eq!(a.bad_become_inactive[10], "1.a");

    let a = parse_ok_to_stop(&fixture("ok_to_stop_after_mgr_start")).unwrap();
    assert!(!a.ok_to_stop);
    assert_eq!(a.unknown_pgs.len(), 33);

    // An OSD that does not exist is "ok to stop": the gate never asks about one.
    let a = parse_ok_to_stop(&fixture("ok_to_stop_missing_osd")).unwrap();
    assert!(a.ok_to_stop);
    assert_eq!(a.osds, ids(&[9]));

    let a = parse_ok_to_stop(&fixture("ok_to_stop_other_host_while_1_down")).unwrap();
    assert!(!a.ok_to_stop);
    assert_eq!(a.bad_become_inactive.len(), 33);
    let a = parse_ok_to_stop(&fixture("ok_to_stop_1_while_down")).unwrap();
    assert!(a.ok_to_stop);
    assert_eq!(a.num_ok_pgs, 0);
}

#[test]
fn safe_to_destroy_answers() {
    let a = parse_safe_to_destroy(&fixture("safe_to_destroy_out_still_active")).unwrap();
    assert_eq!(a.active, ids(&[3]));
    assert!(a.safe_to_destroy.is_empty() && a.missing_stats.is_empty());
    let a = parse_safe_to_destroy(&fixture("safe_to_destroy_safe")).unwrap();
    assert_eq!(a.safe_to_destroy, ids(&[3]));
    assert!(a.active.is_empty() && a.stored_pgs.is_empty());
    let a = parse_safe_to_destroy(&fixture("safe_to_destroy_one_of_two")).unwrap();
    assert_eq!((a.safe_to_destroy, a.active), (ids(&[3]), ids(&[2])));
    // Down and out, no PG on it: safe.
    let a = parse_safe_to_destroy(&fixture("safe_to_destroy_down_and_out")).unwrap();
    assert_eq!(a.safe_to_destroy, ids(&[3]));
    // An OSD that does not exist is "safe": only mapped, existing ids are asked about.
    let a = parse_safe_to_destroy(&fixture("safe_to_destroy_missing_osd")).unwrap();
    assert_eq!(a.safe_to_destroy, ids(&[7]));
}

#[test]
fn pg_stat_of_data_ceph_cannot_place() {
    let p = parse_pg_stat(&fixture("pg_stat_remapped_cannot_place")).unwrap();
    assert_eq!(p.by_state[0].state, "active+clean+remapped");
    assert_eq!(p.not_clean_count(), 33);
}

#[test]
fn errors_name_the_field() {
    let e =
        parse_osd_dump(br#"{"epoch":3,"osds":[{"osd":0,"up":1,"in":1,"up_from":"x","state":[]}]}"#)
            .unwrap_err();
    assert_eq!(e.path, "osds[0].up_from");
    let e = parse_status(br#"{"quorum":[0],"health":{"status":"HEALTH_OK"}}"#).unwrap_err();
    assert_eq!(e.path, ".");
    assert!(e.message.contains("mgrmap"), "{e}");
    let e = parse_pg_stat(
        br#"{"pg_ready":true,"pg_summary":{"num_pg_by_state":[{"name":"active+clean","num":-1}]}}"#,
    )
    .unwrap_err();
    assert_eq!(e.path, "pg_summary.num_pg_by_state[0].num");
    let e = parse_osd_dump(br#"{"epoch":3,"osds":[{"osd":0,"up":1,"in":1,"up_from":1,"state":[]},{"osd":0,"up":1,"in":1,"up_from":1,"state":[]}]}"#)
            .unwrap_err();
    assert_eq!(e.to_string(), "at `osds[1].osd`: osd.0 is listed twice");
    let e = parse_osd_metadata(br#"[{"id":1},{"id":1}]"#).unwrap_err();
    assert_eq!(e.path, "[1].id");
}

#[test]
fn empty_or_trailing_garbage_is_an_error() {
    assert!(parse_ok_to_stop(b"").is_err());
    assert!(parse_ok_to_stop(b"\n").is_err());
    assert!(parse_pg_stat(&[fixture("pg_stat_clean"), b"{}".to_vec()].concat()).is_err());
}

mod never_panics {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_status(&bytes);
            let _ = parse_pg_stat(&bytes);
            let _ = parse_osd_dump(&bytes);
            let _ = parse_osd_metadata(&bytes);
            let _ = parse_ok_to_stop(&bytes);
            let _ = parse_safe_to_destroy(&bytes);
        }

        #[test]
        fn on_any_json(json in arbitrary_json()) {
            let bytes = json.to_string().into_bytes();
            let _ = parse_status(&bytes);
            let _ = parse_pg_stat(&bytes);
            let _ = parse_osd_dump(&bytes);
            let _ = parse_osd_metadata(&bytes);
            let _ = parse_ok_to_stop(&bytes);
            let _ = parse_safe_to_destroy(&bytes);
        }
    }

    fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            "[a-z_]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            let key = prop_oneof![
                Just("osds".to_owned()),
                Just("osd".to_owned()),
                Just("up".to_owned()),
                Just("in".to_owned()),
                Just("state".to_owned()),
                Just("id".to_owned()),
                Just("epoch".to_owned()),
                Just("quorum".to_owned()),
                Just("pg_summary".to_owned()),
                Just("num_pg_by_state".to_owned()),
                "[a-z_]{1,6}",
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(key, inner, 0..5)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
