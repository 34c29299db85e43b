use super::*;
use crate::ceph::answers::{parse_osd_dump, parse_osd_metadata};
use crate::ceph::osd_devices::ReportedDevices;
use crate::ceph::osd_id;
use crate::ceph::test_data::{fixture, ids, osd_dump as dump};

fn pod(name: &str, node: &str) -> PodRef {
    PodRef {
        namespace: "ceph".into(),
        name: name.into(),
        node: node.into(),
    }
}

fn key(k: &str, pod: Option<PodRef>) -> KeyToMap {
    KeyToMap {
        key: k.into(),
        pod,
        recorded: BTreeSet::new(),
        stated: None,
        unreadable_statement: None,
        step_domain: None,
    }
}

fn reports(entries: &[(u32, &PodRef)]) -> BTreeMap<OsdId, OsdMetadata> {
    entries
        .iter()
        .map(|&(id, p)| {
            (
                OsdId(id),
                OsdMetadata {
                    id: OsdId(id),
                    hostname: Some(p.node.clone()),
                    pod_name: Some(p.name.clone()),
                    pod_namespace: Some(p.namespace.clone()),
                    ceph_version: None,
                    devices: ReportedDevices::default(),
                },
            )
        })
        .collect()
}

fn one(k: KeyToMap, metadata: &BTreeMap<OsdId, OsdMetadata>, d: &OsdDump) -> KeyIds {
    map_osd_ids(&[k], metadata, d, &OtherCephOsds::default())
        .remove(0)
        .ids
}

#[test]
fn the_real_metadata_maps_the_pod_that_osd_1_runs_in() {
    let metadata = parse_osd_metadata(&fixture("osd_metadata_with_pod")).unwrap();
    let up = parse_osd_dump(&fixture("osd_dump_1_up_again")).unwrap();
    let p = PodRef {
        namespace: "ceph-test".into(),
        name: "osd-host-1-data-x7k2q".into(),
        node: "node-1".into(),
    };
    assert_eq!(
        one(key("node-1:/dev/sdb", Some(p.clone())), &metadata, &up),
        KeyIds::Known {
            ids: ids(&[1]),
            source: IdSource::Metadata
        }
    );
    // The same report while osd.1 is down is not trusted.
    let down = parse_osd_dump(&fixture("osd_dump_1_down")).unwrap();
    let got = one(key("node-1:/dev/sdb", Some(p)), &metadata, &down);
    assert_eq!(
        got,
        KeyIds::Unknown(UnknownReason::NoEvidence {
            pod: Some(PodRef {
                namespace: "ceph-test".into(),
                name: "osd-host-1-data-x7k2q".into(),
                node: "node-1".into(),
            }),
            reported_by_down: vec![OsdId(1)],
            node: NodeEvidence::NoDaemon {
                node: "node-1".into()
            },
            unreadable_statement: None,
        })
    );
    let KeyIds::Unknown(reason) = got else {
        unreachable!()
    };
    assert_eq!(
            reason.to_string(),
            "no up OSD reports pod ceph-test/osd-host-1-data-x7k2q on node node-1 (osd.1 reported it but is down), no OSD id is recorded for it and none is stated by annotation; no OSD daemon without a pod reports node node-1; state its OSD id: `kubectl annotate pod --overwrite -n ceph-test osd-host-1-data-x7k2q ceph.elemental.net/osd-ids=N`"
        );
}

#[test]
fn several_osds_on_one_device_map_together() {
    let p = pod("osd-a-sdb-1", "a");
    let got = one(
        key("a:/dev/sdb", Some(p.clone())),
        &reports(&[(2, &p), (5, &p)]),
        &dump(&[(2, true), (5, true)]),
    );
    assert_eq!(
        got,
        KeyIds::Known {
            ids: ids(&[2, 5]),
            source: IdSource::Metadata
        }
    );
}

#[test]
fn metadata_must_match_namespace_name_and_node() {
    let p = pod("osd-a-sdb-1", "a");
    let d = dump(&[(1, true)]);
    for other in [
        PodRef {
            namespace: "other".into(),
            ..p.clone()
        },
        pod("osd-a-sdb-2", "a"),
        pod("osd-a-sdb-1", "b"),
    ] {
        assert!(matches!(
            one(
                key("a:/dev/sdb", Some(p.clone())),
                &reports(&[(1, &other)]),
                &d
            ),
            KeyIds::Unknown(UnknownReason::NoEvidence { .. })
        ));
    }
    // Metadata without a pod name (a daemon started without POD_NAME) matches no pod;
    // on another node it maps nothing either (on the key's node, see `by_node`).
    let md = BTreeMap::from([(
        OsdId(1),
        OsdMetadata {
            id: OsdId(1),
            hostname: Some("b".into()),
            pod_name: None,
            pod_namespace: None,
            ceph_version: None,
            devices: ReportedDevices::default(),
        },
    )]);
    assert!(matches!(
        one(key("a:/dev/sdb", Some(p)), &md, &d),
        KeyIds::Unknown(UnknownReason::NoEvidence { .. })
    ));
}

#[test]
fn recorded_ids_map_a_pod_without_reports() {
    // An adopted pod (no POD_NAME yet), a crash-looping one (down), or no pod at all.
    for p in [Some(pod("osd-a-sdb-1", "a")), None] {
        let mut k = key("a:/dev/sdb", p);
        k.recorded = ids(&[4]);
        assert_eq!(
            one(k, &BTreeMap::new(), &dump(&[(4, false)])),
            KeyIds::Known {
                ids: ids(&[4]),
                source: IdSource::Recorded
            }
        );
    }
}

#[test]
fn live_reports_win_over_recorded_ids() {
    // The disk was replaced: a new OSD id runs in the key's pod.
    let p = pod("osd-a-sdb-2", "a");
    let mut k = key("a:/dev/sdb", Some(p.clone()));
    k.recorded = ids(&[4]);
    assert_eq!(
        one(k, &reports(&[(9, &p)]), &dump(&[(4, false), (9, true)])),
        KeyIds::Known {
            ids: ids(&[9]),
            source: IdSource::Metadata
        }
    );
}

#[test]
fn stated_ids_win_unless_reports_contradict_them() {
    let p = pod("osd-a-sdb-1", "a");
    let mut k = key("a:/dev/sdb", Some(p.clone()));
    k.recorded = ids(&[4]);
    k.stated = Some(ids(&[6]));
    assert_eq!(
        one(k.clone(), &BTreeMap::new(), &dump(&[(4, true), (6, false)])),
        KeyIds::Known {
            ids: ids(&[6]),
            source: IdSource::Stated
        }
    );
    assert_eq!(
        one(k.clone(), &reports(&[(6, &p)]), &dump(&[(6, true)])),
        KeyIds::Known {
            ids: ids(&[6]),
            source: IdSource::Stated
        }
    );
    let got = one(k, &reports(&[(7, &p)]), &dump(&[(7, true)]));
    assert_eq!(
        got,
        KeyIds::Unknown(UnknownReason::StatedContradictsMetadata {
            stated: ids(&[6]),
            reported: ids(&[7]),
            device: None,
        })
    );
    let KeyIds::Unknown(reason) = got else {
        unreachable!()
    };
    assert_eq!(
        reason.to_string(),
        "the annotation states osd.6 but the pod runs osd.7"
    );
}

#[test]
fn an_empty_statement_is_no_statement() {
    let mut k = key("a:/dev/sdb", None);
    k.stated = Some(BTreeSet::new());
    k.recorded = ids(&[3]);
    assert_eq!(
        one(k, &BTreeMap::new(), &dump(&[(3, true)])),
        KeyIds::Known {
            ids: ids(&[3]),
            source: IdSource::Recorded
        }
    );
}

#[test]
fn a_recorded_or_stated_id_running_in_another_pod_is_unknown() {
    let mine = pod("osd-a-sdb-1", "a");
    let theirs = pod("osd-b-sdc-1", "b");
    for stated in [None, Some(ids(&[3]))] {
        let mut k = key("a:/dev/sdb", Some(mine.clone()));
        k.recorded = ids(&[3]);
        k.stated = stated;
        let got = one(k, &reports(&[(3, &theirs)]), &dump(&[(3, true)]));
        assert_eq!(
            got,
            KeyIds::Unknown(UnknownReason::IdInOtherPod {
                id: OsdId(3),
                pod: theirs.clone()
            })
        );
        assert_eq!(
            match got {
                KeyIds::Unknown(r) => r.to_string(),
                KeyIds::Known { .. } => String::new(),
            },
            "osd.3 is up in pod ceph/osd-b-sdc-1 on node b"
        );
    }
    // The other pod's report is stale once osd.3 is down: the record stands.
    let mut k = key("a:/dev/sdb", Some(mine));
    k.recorded = ids(&[3]);
    assert!(matches!(
        one(k, &reports(&[(3, &theirs)]), &dump(&[(3, false)])),
        KeyIds::Known { .. }
    ));
}

#[test]
fn an_id_of_two_keys_is_unknown_for_both() {
    let mut first = key("a:/dev/sdb", None);
    first.recorded = ids(&[1, 3]);
    let mut second = key("b:/dev/sdb", None);
    second.stated = Some(ids(&[3]));
    let mut third = key("c:/dev/sdb", None);
    third.recorded = ids(&[3]);
    let without = key("d:/dev/sdb", None);
    let got = map_osd_ids(
        &[first, second, third, without],
        &BTreeMap::new(),
        &dump(&[(1, true), (3, true)]),
        &OtherCephOsds::default(),
    );
    let reasons: Vec<String> = got
        .iter()
        .map(|m| match &m.ids {
            KeyIds::Unknown(r) => r.to_string(),
            KeyIds::Known { ids, .. } => osd_id::list(ids),
        })
        .collect();
    assert_eq!(
            reasons,
            [
                "osd.3 is also the OSD of b:/dev/sdb",
                "osd.3 is also the OSD of a:/dev/sdb",
                "osd.3 is also the OSD of a:/dev/sdb",
                "no pod runs, no OSD id is recorded for it and none is stated by annotation; no OSD daemon without a pod reports node d",
            ]
        );
}

#[test]
fn ids_are_kept_even_when_absent_from_the_osdmap() {
    // Whether they exist is the gate's question; the mapping only says which they are.
    let mut k = key("a:/dev/sdb", None);
    k.recorded = ids(&[8]);
    assert!(matches!(
        one(k, &BTreeMap::new(), &dump(&[])),
        KeyIds::Known { .. }
    ));
}

#[test]
fn a_down_daemon_that_last_reported_the_pod_names_its_id_only_alone_and_down() {
    let p = pod("osd-a-sdb-x", "a");
    let k = key("a:/dev/sdb", Some(p.clone()));
    let other = pod("osd-b-sdb-y", "b");
    assert_eq!(
        reported_by_down_daemon(
            &k,
            &reports(&[(3, &p), (4, &other)]),
            &dump(&[(3, false), (4, true)])
        ),
        Some(OsdId(3))
    );
    // Up: the mapping's own business; two daemons named the pod: no telling which.
    assert_eq!(
        reported_by_down_daemon(&k, &reports(&[(3, &p)]), &dump(&[(3, true)])),
        None
    );
    assert_eq!(
        reported_by_down_daemon(
            &k,
            &reports(&[(3, &p), (5, &p)]),
            &dump(&[(3, false), (5, false)])
        ),
        None
    );
    // Gone from the OSD map, or no pod to look for.
    assert_eq!(
        reported_by_down_daemon(&k, &reports(&[(3, &p)]), &dump(&[])),
        None
    );
    assert_eq!(
        reported_by_down_daemon(
            &key("a:/dev/sdb", None),
            &reports(&[(3, &p)]),
            &dump(&[(3, false)])
        ),
        None
    );
}

#[test]
fn a_replacement_learns_up_daemons_ids_and_a_failed_disks_last_reporter_once_each() {
    let (a, b, c) = (pod("osd-a", "a"), pod("osd-b", "b"), pod("osd-c", "c"));
    let keys = vec![
        key("a:/dev/sdb", Some(a.clone())),
        key("b:/dev/sdb", Some(b.clone())),
        key("c:/dev/sdb", Some(c.clone())),
    ];
    // osd.1 up on a; osd.2 down, last reported b; osd.3 and osd.4 down, both reported c.
    let metadata = reports(&[(1, &a), (2, &b), (3, &c), (4, &c)]);
    let d = dump(&[(1, true), (2, false), (3, false), (4, false)]);
    let mapped = map_osd_ids(&keys, &metadata, &d, &OtherCephOsds::default());
    let learnt = ids_learnt(&keys, mapped, &metadata, &d);
    assert_eq!(learnt.get("a:/dev/sdb"), Some(&ids(&[1])));
    assert_eq!(learnt.get("b:/dev/sdb"), Some(&ids(&[2])));
    assert_eq!(
        learnt.get("c:/dev/sdb"),
        None,
        "two down daemons named its pod"
    );
}
