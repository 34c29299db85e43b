use super::*;

#[test]
fn each_new_crash_names_its_daemon_and_time() {
    let json = br#"[
        {"crash_id": "2026-11-29T18:40:01.123456Z_5d2c", "entity_name": "osd.3",
         "timestamp": "2026-11-29T18:40:01.123456Z", "process_name": "ceph-osd",
         "backtrace": ["(()+0x12730) [0x7f]"]},
        {"crash_id": "2019-05-27_15:41:34.1_9a", "entity_name": "mon.a",
         "timestamp": "2019-05-27 15:41:34.100000Z"}
    ]"#;
    let crashes = parse_new_crashes(json).unwrap();
    assert_eq!(crashes.len(), 2);
    assert_eq!(crashes[0].id, "2026-11-29T18:40:01.123456Z_5d2c");
    assert_eq!(crashes[0].osd(), Some(OsdId(3)));
    assert_eq!(
        crashes[0].at,
        "2026-11-29T18:40:01.123456Z".parse::<Timestamp>().unwrap()
    );
    // An older release's time, with a space; a daemon that is not an OSD.
    assert_eq!(
        crashes[1].at,
        "2019-05-27T15:41:34.1Z".parse::<Timestamp>().unwrap()
    );
    assert_eq!(crashes[1].osd(), None);
}

#[test]
fn none_new_is_an_empty_list() {
    assert_eq!(parse_new_crashes(b"[]").unwrap(), Vec::new());
}

#[test]
fn a_time_without_a_zone_is_utc() {
    let json =
        br#"[{"crash_id": "x", "entity_name": "osd.12", "timestamp": "2026-01-02 03:04:05.5"}]"#;
    let crash = &parse_new_crashes(json).unwrap()[0];
    assert_eq!(
        crash.at,
        "2026-01-02T03:04:05.5Z".parse::<Timestamp>().unwrap()
    );
    assert_eq!(crash.osd(), Some(OsdId(12)));
}

#[test]
fn an_answer_not_understood_names_where() {
    let error =
        parse_new_crashes(br#"[{"crash_id": "x", "entity_name": "osd.1", "timestamp": "soon"}]"#)
            .unwrap_err();
    assert_eq!(error.path, "[0].timestamp");
    assert!(error.message.contains("soon"), "{error}");
    let error = parse_new_crashes(br#"[{"crash_id": "x", "timestamp": "2026-01-02T03:04:05Z"}]"#)
        .unwrap_err();
    assert!(error.message.contains("entity_name"), "{error}");
    // An entity that only looks like an OSD.
    let json =
        br#"[{"crash_id": "x", "entity_name": "osd.x", "timestamp": "2026-01-02T03:04:05Z"}]"#;
    assert_eq!(parse_new_crashes(json).unwrap()[0].osd(), None);
}

#[test]
fn a_report_as_pacific_answers_it() {
    // Recorded: osd.0 aborted (SIGABRT), its report posted, `ceph crash ls-new -f json`.
    let crashes = parse_new_crashes(&crate::ceph::test_data::fixture("crash_ls_new")).unwrap();
    assert_eq!(crashes.len(), 1);
    let crash = &crashes[0];
    assert_eq!(
        crash.id,
        "2026-11-29T19:35:19.852188Z_0e9aa221-663d-461c-9f23-0bb0ca31793c"
    );
    assert_eq!(crash.osd(), Some(OsdId(0)));
    assert_eq!(
        crash.at,
        "2026-11-29T19:35:19.852188Z".parse::<Timestamp>().unwrap()
    );
}
