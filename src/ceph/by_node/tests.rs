//! The rules for daemons that report no pod, on metadata of the shapes Ceph writes: a loop
//! device (`osd_metadata_loop_devices`, recorded), a disk with its db on a shared SSD, a
//! BlueStore file (recorded: `osd_metadata_plain`).

use super::*;
use crate::ceph::answers::parse_osd_metadata;
use crate::ceph::key_ids::PodRef;
use crate::ceph::pod_map::map_osd_ids;
use crate::ceph::test_data::{fixture, ids, osd_dump as dump};

fn all_up(metadata: &BTreeMap<OsdId, OsdMetadata>) -> OsdDump {
    dump(&metadata.keys().map(|id| (id.0, true)).collect::<Vec<_>>())
}

/// A daemon of the reference operator's pods: `hostname` is the node, no pod, its devices.
fn daemon(id: u32, node: &str, devices: serde_json::Value) -> OsdMetadata {
    let mut json = devices;
    json["id"] = serde_json::json!(id);
    json["hostname"] = serde_json::json!(node);
    serde_json::from_value(json).expect("metadata")
}

fn disk(data: &str, db: Option<&str>) -> serde_json::Value {
    let all = db.map_or(data.to_owned(), |db| format!("{data},{db}"));
    serde_json::json!({
        "bluestore_bdev_access_mode": "blk",
        "bluestore_bdev_devices": data,
        "bluestore_bdev_dev_node": format!("/dev/{data}"),
        "devices": all,
        "device_paths": all.split(',').map(|d| format!("{d}=/dev/disk/by-path/pci-0000:5c:00.0-sas-{d}")).collect::<Vec<_>>().join(","),
        "device_ids": all.split(',').map(|d| format!("{d}=SEAGATE_ST4000NM0025_SN{d}")).collect::<Vec<_>>().join(","),
    })
}

fn file() -> serde_json::Value {
    serde_json::json!({
        "bluestore_bdev_access_mode": "file",
        "bluestore_bdev_devices": "vda",
        "devices": "vda",
    })
}

fn metadata(daemons: Vec<OsdMetadata>) -> BTreeMap<OsdId, OsdMetadata> {
    daemons.into_iter().map(|m| (m.id, m)).collect()
}

fn key(k: &str, pod: &str, domain: Option<&str>) -> KeyToMap {
    let host = k.split_once(':').map_or(k, |(h, _)| h);
    KeyToMap {
        key: k.into(),
        pod: Some(PodRef {
            namespace: "ceph".into(),
            name: pod.into(),
            node: host.into(),
        }),
        recorded: BTreeSet::new(),
        stated: None,
        unreadable_statement: None,
        step_domain: domain.map(str::to_owned),
    }
}

fn map(keys: &[KeyToMap], m: &BTreeMap<OsdId, OsdMetadata>, d: &OsdDump) -> Vec<KeyIds> {
    map_with(keys, m, d, &OtherCephOsds::default())
}

fn map_with(
    keys: &[KeyToMap],
    m: &BTreeMap<OsdId, OsdMetadata>,
    d: &OsdDump,
    others: &OtherCephOsds,
) -> Vec<KeyIds> {
    map_osd_ids(keys, m, d, others)
        .into_iter()
        .map(|m| m.ids)
        .collect()
}

fn known(i: &[u32], source: IdSource) -> KeyIds {
    KeyIds::Known {
        ids: ids(i),
        source,
    }
}

fn message(ids: &KeyIds) -> String {
    match ids {
        KeyIds::Unknown(reason) => reason.to_string(),
        KeyIds::Known { .. } => format!("known: {ids:?}"),
    }
}

fn not_exact(ids: &KeyIds) -> Option<&NotExact> {
    match ids {
        KeyIds::Unknown(UnknownReason::NoEvidence {
            node: NodeEvidence::Candidates { not_exact, .. },
            ..
        }) => Some(not_exact),
        _ => None,
    }
}

/// Recorded: daemons started as the reference operator's pods start them (`NODE_NAME`, in a
/// container, no `POD_NAME`): osd.0 on /dev/loop0 of node-a, osd.1 on /dev/loop1 of
/// node-b.example.com, osd.2 a BlueStore file on node-a.
fn reference_pods() -> BTreeMap<OsdId, OsdMetadata> {
    parse_osd_metadata(&fixture("osd_metadata_reference_pods")).expect("metadata")
}

#[test]
fn recorded_loop_devices_map_each_key_to_its_osd_and_the_file_is_the_one_left() {
    let m = reference_pods();
    assert!(m.values().all(|m| m.pod_name.is_none()));
    let keys = [
        key("node-a:/dev/loop0", "osd-node-a-loop0-x", None),
        // The short name of the node a daemon reports by its FQDN.
        key("node-b:/dev/loop1", "osd-node-b-loop1-y", None),
        // The file-backed OSD names no device: the count maps it.
        key("node-a:/dev/sdz", "osd-node-a-sdz-z", None),
    ];
    let got = map(&keys, &m, &all_up(&m));
    assert_eq!(
        got,
        [
            known(&[0], IdSource::Device),
            known(&[1], IdSource::Device),
            known(&[2], IdSource::Node),
        ]
    );
    // Without the file's key, node-a's loop0 still maps, and nothing else is taken.
    let got = map(&keys[..1], &m, &all_up(&m));
    assert_eq!(got[0], known(&[0], IdSource::Device));
}

#[test]
fn by_path_and_by_id_spellings_map_and_the_shared_db_disk_does_not() {
    // osd.1 on sdb and osd.2 on sdc, both with their db on sdk.
    let m = metadata(vec![
        daemon(1, "node1", disk("sdb", Some("sdk"))),
        daemon(2, "node1", disk("sdc", Some("sdk"))),
    ]);
    let d = all_up(&m);
    for (data, want) in [
        ("/dev/sdb", 1),
        ("/dev/disk/by-path/pci-0000:5c:00.0-sas-sdc", 2),
        ("/dev/disk/by-id/scsi-SSEAGATE_ST4000NM0025_SNsdb", 1),
    ] {
        let got = map(&[key(&format!("node1:{data}"), "p", None)], &m, &d);
        assert_eq!(got[0], known(&[want], IdSource::Device), "{data}");
    }
    // The db disk is in both OSDs' `devices`: never a data device. Two candidates, one key.
    let got = map(&[key("node1:/dev/sdk", "p", None)], &m, &d);
    assert_eq!(not_exact(&got[0]), Some(&NotExact::Count { keys: 1 }));
}

#[test]
fn only_an_up_osd_on_the_keys_node_counts() {
    let m = metadata(vec![
        daemon(1, "node1", disk("sdb", None)),
        daemon(2, "node2", disk("sdb", None)),
    ]);
    let k = key("node1:/dev/sdb", "p", None);
    assert_eq!(
        map(std::slice::from_ref(&k), &m, &all_up(&m))[0],
        known(&[1], IdSource::Device)
    );
    // osd.1 down: its metadata is stale; nothing else on node1 stands for the disk.
    let got = map(&[k], &m, &dump(&[(1, false), (2, true)]));
    assert_eq!(not_exact(&got[0]), Some(&NotExact::DownOnNode(OsdId(1))));
}

#[test]
fn a_short_node_name_maps_a_daemon_reporting_its_fqdn() {
    let m = metadata(vec![daemon(4, "node1.example.com", disk("sdb", None))]);
    let got = map(&[key("node1:/dev/sdb", "p", None)], &m, &all_up(&m));
    assert_eq!(got[0], known(&[4], IdSource::Device));
    // Two machines share the short name: neither is taken.
    let m = metadata(vec![
        daemon(4, "node1.a.example", disk("sdb", None)),
        daemon(5, "node1.b.example", disk("sdb", None)),
    ]);
    let got = map(&[key("node1:/dev/sdb", "p", None)], &m, &all_up(&m));
    assert!(
        message(&got[0])
            .contains("report node1.a.example, node1.b.example: each could be node node1"),
        "{}",
        message(&got[0])
    );
}

#[test]
fn the_one_unknown_key_of_a_node_gets_its_one_free_osd_and_learns_it() {
    // File-backed: no device of its own. osd.3 on node1 runs in another key's pod.
    let mut m = metadata(vec![daemon(1, "node1", file()), daemon(2, "node1", file())]);
    m.insert(
        OsdId(3),
        OsdMetadata {
            pod_name: Some("osd-node1-sdd".into()),
            pod_namespace: Some("ceph".into()),
            ..daemon(3, "node1", file())
        },
    );
    let mut recorded = key("node1:/dev/sdc", "osd-node1-sdc", None);
    recorded.recorded = ids(&[2]);
    let keys = [
        key("node1:/dev/sdb", "osd-node1-sdb", None),
        recorded,
        key("node1:/dev/sdd", "osd-node1-sdd", None),
    ];
    let got = map(&keys, &m, &all_up(&m));
    assert_eq!(got[0], known(&[1], IdSource::Node));
    assert!(IdSource::Node.learnt() && IdSource::Device.learnt());
    assert_eq!(got[1], known(&[2], IdSource::Recorded));
    assert_eq!(got[2], known(&[3], IdSource::Metadata));
}

#[test]
fn a_whole_host_stopped_in_one_step_gets_its_free_set() {
    let m = metadata(vec![
        daemon(1, "node1", file()),
        daemon(2, "node1", file()),
        daemon(7, "node2", file()),
    ]);
    let keys = [
        key("node1:/dev/sdb", "a", Some("node1")),
        key("node1:/dev/sdc", "b", Some("node1")),
        key("node2:/dev/sdb", "c", None),
    ];
    let got = map(&keys, &m, &all_up(&m));
    assert_eq!(got[0], known(&[1, 2], IdSource::NodeSet));
    assert_eq!(got[1], known(&[1, 2], IdSource::NodeSet));
    assert!(!IdSource::NodeSet.learnt(), "not per key: never recorded");
    assert_eq!(got[2], known(&[7], IdSource::Node));
}

#[test]
fn keys_stopped_one_by_one_list_the_candidates_and_the_annotation() {
    let m = metadata(vec![daemon(1, "node1", file()), daemon(2, "node1", file())]);
    let keys = [
        key("node1:/dev/sdb", "osd-node1-sdb-x", Some("node1:/dev/sdb")),
        key("node1:/dev/sdc", "osd-node1-sdc-y", None),
    ];
    let got = map(&keys, &m, &all_up(&m));
    assert_eq!(not_exact(&got[0]), Some(&NotExact::NotOneStep { keys: 2 }));
    assert_eq!(
        message(&got[0]),
        "no up OSD reports pod ceph/osd-node1-sdb-x on node node1, no OSD id is recorded for it \
         and none is stated by annotation; candidates (up on node node1, no pod reported, \
         claimed by no other disk): osd.1, osd.2; as many as the 2 disks there without known \
         ids, but those do not stop in one step (update domain); state its OSD id: `kubectl \
         annotate pod --overwrite -n ceph osd-node1-sdb-x ceph.elemental.net/osd-ids=N`"
    );
    // The admin's statement resolves it; the other key is then alone with the other OSD.
    let mut stated = keys.clone();
    stated[0].stated = Some(ids(&[2]));
    let got = map(&stated, &m, &all_up(&m));
    assert_eq!(got[0], known(&[2], IdSource::Stated));
    assert_eq!(got[1], known(&[1], IdSource::Node));
}

#[test]
fn a_count_that_does_not_match_maps_nothing() {
    // Three daemons on node1, two keys of this CephOSD there: one may be anyone's.
    let m = metadata(vec![
        daemon(1, "node1", file()),
        daemon(2, "node1", file()),
        daemon(3, "node1", file()),
    ]);
    let keys = [
        key("node1:/dev/sdb", "a", Some("node1")),
        key("node1:/dev/sdc", "b", Some("node1")),
    ];
    let got = map(&keys, &m, &all_up(&m));
    assert_eq!(not_exact(&got[0]), Some(&NotExact::Count { keys: 2 }));
    // Another CephOSD recorded osd.3: the other two are exactly ours.
    let others = OtherCephOsds {
        ids_on_host: BTreeMap::from([("node1".into(), ids(&[3]))]),
        ..OtherCephOsds::default()
    };
    let got = map_with(&keys, &m, &all_up(&m), &others);
    assert_eq!(got[0], known(&[1, 2], IdSource::NodeSet));
    // An id recorded for a disk on another host claims nothing here (it may be another Ceph
    // cluster's osd.3).
    let elsewhere = OtherCephOsds {
        ids_on_host: BTreeMap::from([("node9".into(), ids(&[3]))]),
        ..OtherCephOsds::default()
    };
    let got = map_with(&keys, &m, &all_up(&m), &elsewhere);
    assert_eq!(not_exact(&got[0]), Some(&NotExact::Count { keys: 2 }));
}

#[test]
fn another_cephosd_without_records_on_the_host_makes_the_count_prove_nothing() {
    let m = metadata(vec![daemon(1, "node1", file())]);
    let others = OtherCephOsds {
        unrecorded_hosts: BTreeMap::from([("node1".into(), "ceph/ssds".into())]),
        ..OtherCephOsds::default()
    };
    let got = map_with(
        &[key("node1:/dev/sdb", "a", None)],
        &m,
        &all_up(&m),
        &others,
    );
    assert_eq!(
        not_exact(&got[0]),
        Some(&NotExact::OtherCephOsd("ceph/ssds".into()))
    );
    // Its device, when the daemon names one, still maps exactly.
    let m = metadata(vec![daemon(1, "node1", disk("sdb", None))]);
    let got = map_with(
        &[key("node1:/dev/sdb", "a", None)],
        &m,
        &all_up(&m),
        &others,
    );
    assert_eq!(got[0], known(&[1], IdSource::Device));
}

#[test]
fn a_down_osd_on_the_node_may_be_ours() {
    let m = metadata(vec![daemon(1, "node1", file()), daemon(2, "node1", file())]);
    let got = map(
        &[key("node1:/dev/sdb", "a", None)],
        &m,
        &dump(&[(1, true), (2, false)]),
    );
    assert_eq!(not_exact(&got[0]), Some(&NotExact::DownOnNode(OsdId(2))));
    assert!(message(&got[0]).contains("osd.2, last reported on that node without a pod, is down"));
}

#[test]
fn a_free_osd_on_another_device_is_not_the_keys() {
    // The key lists a spelling no daemon reports; the one free OSD names /dev/sdc.
    let m = metadata(vec![daemon(1, "node1", disk("sdc", None))]);
    let got = map(
        &[key(
            "node1:/dev/disk/by-id/wwn-0x5000c500a1b2c3d4",
            "a",
            None,
        )],
        &m,
        &all_up(&m),
    );
    assert_eq!(
        not_exact(&got[0]),
        Some(&NotExact::OtherDevice {
            id: OsdId(1),
            device: "/dev/sdc".into()
        })
    );
}

#[test]
fn several_osds_on_one_device_are_listed_not_taken() {
    let m = metadata(vec![
        daemon(1, "node1", disk("sdb", None)),
        daemon(2, "node1", disk("sdb", None)),
    ]);
    let got = map(&[key("node1:/dev/sdb", "a", None)], &m, &all_up(&m));
    assert_eq!(not_exact(&got[0]), Some(&NotExact::Count { keys: 1 }));
    assert!(
        message(&got[0]).contains("osd.1, osd.2 report its data device"),
        "{}",
        message(&got[0])
    );
}

#[test]
fn a_device_wins_over_a_record_and_contradicts_a_statement() {
    // The disk was replaced: the record names the old OSD.
    let m = metadata(vec![daemon(9, "node1", disk("sdb", None))]);
    let mut k = key("node1:/dev/sdb", "a", None);
    k.recorded = ids(&[4]);
    let d = dump(&[(4, false), (9, true)]);
    assert_eq!(
        map(std::slice::from_ref(&k), &m, &d)[0],
        known(&[9], IdSource::Device)
    );
    k.stated = Some(ids(&[4]));
    let got = map(&[k], &m, &d);
    assert_eq!(
        got[0],
        KeyIds::Unknown(UnknownReason::StatedContradictsMetadata {
            stated: ids(&[4]),
            reported: ids(&[9]),
            device: Some("node1:/dev/sdb".into()),
        })
    );
    assert_eq!(
        message(&got[0]),
        "the annotation states osd.4 but osd.9 reports node1:/dev/sdb as its data device"
    );
}

#[test]
fn a_key_in_conflict_on_the_node_blocks_the_count() {
    let m = metadata(vec![daemon(1, "node1", file()), daemon(2, "node1", file())]);
    let mut a = key("node1:/dev/sdb", "a", None);
    a.recorded = ids(&[5]);
    let mut b = key("node1:/dev/sdc", "b", None);
    b.recorded = ids(&[5]);
    let c = key("node1:/dev/sdd", "c", None);
    let got = map(&[a, b, c], &m, &dump(&[(1, true), (2, true), (5, false)]));
    assert_eq!(
        not_exact(&got[2]),
        Some(&NotExact::KeyInConflict("node1:/dev/sdb".into()))
    );
}

#[test]
fn an_unreadable_statement_is_said() {
    let m = metadata(vec![daemon(1, "node1", file()), daemon(2, "node1", file())]);
    let mut k = key("node1:/dev/sdb", "osd-a", None);
    k.unreadable_statement = Some("3,x".into());
    let got = map(&[k], &m, &all_up(&m));
    assert!(
        message(&got[0]).contains(
            "(its ceph.elemental.net/osd-ids annotation \"3,x\" is not a list of OSD ids)"
        ),
        "{}",
        message(&got[0])
    );
}

#[test]
fn no_daemon_on_the_node_is_said() {
    let got = map(
        &[key("node1:/dev/sdb", "a", None)],
        &BTreeMap::new(),
        &dump(&[]),
    );
    assert!(message(&got[0]).contains("no OSD daemon without a pod reports node node1"));
}
