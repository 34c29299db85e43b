//! The rules on whole mappings: adopted pods whose daemons report no pod (only their node as
//! `hostname`), an admin's `osd-ids` statement on one of them.

use super::*;
use crate::ceph::key_ids::PodRef;
use crate::ceph::pod_map::map_osd_ids;
use crate::ceph::test_data::{ids, osd_dump as dump, podless_metadata as podless};

/// The adopted pod of `host`'s `/dev/sdX`, with what its annotation states.
fn key(host: &str, data: &str, stated: Option<&[u32]>) -> KeyToMap {
    KeyToMap {
        key: format!("{host}:/dev/{data}"),
        pod: Some(PodRef {
            namespace: "ceph".into(),
            name: format!("osd-{host}-{data}"),
            node: host.into(),
        }),
        recorded: BTreeSet::new(),
        stated: stated.map(ids),
        unreadable_statement: None,
        step_domain: Some(host.into()),
    }
}

fn map(keys: &[KeyToMap], metadata: &BTreeMap<OsdId, OsdMetadata>, d: &OsdDump) -> Vec<KeyIds> {
    map_with(keys, metadata, d, &OtherCephOsds::default())
}

fn map_with(
    keys: &[KeyToMap],
    metadata: &BTreeMap<OsdId, OsdMetadata>,
    d: &OsdDump,
    others: &OtherCephOsds,
) -> Vec<KeyIds> {
    (map_osd_ids(keys, metadata, d, others).into_iter())
        .map(|m| m.ids)
        .collect()
}

fn stated_ids(list: &[u32]) -> KeyIds {
    KeyIds::Known {
        ids: ids(list),
        source: IdSource::Stated,
    }
}

fn refusal(ids: &KeyIds) -> &StatedRefusal {
    match ids {
        KeyIds::Unknown(UnknownReason::StatedRefuted(refusal)) => refusal,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn a_stated_id_up_on_another_node_is_refused_naming_both() {
    // osd.0 is the only daemon on c1; osd.1 runs on c2. The admin wrote 1 on c1's pod.
    for c2 in ["c2", "C2", "c2.example.com"] {
        let metadata = podless(&[(0, "c1"), (1, c2)]);
        let got = map(
            &[key("c1", "sdb", Some(&[1])), key("c2", "sdb", None)],
            &metadata,
            &dump(&[(0, true), (1, true)]),
        );
        let refused = refusal(&got[0]);
        assert_eq!(
            (
                refused.id,
                refused.up_on.as_deref(),
                &refused.on_node,
                &refused.unclaimed
            ),
            (OsdId(1), Some(c2), &ids(&[0]), &ids(&[0])),
            "{c2}"
        );
        // The statement claims nothing: c2's disk gets its own daemon.
        assert_eq!(
            got[1],
            KeyIds::Known {
                ids: ids(&[1]),
                source: IdSource::Node
            },
            "{c2}"
        );
        if c2 == "c2" {
            assert_eq!(
                refused.to_string(),
                "pod ceph/osd-c1-sdb states ceph.elemental.net/osd-ids=1 but Ceph reports osd.1 \
                 up on node c2 and osd.0 up on node c1 (osd.0 without a pod, claimed by no \
                 disk): nothing is stopped on this statement; state the pod's own id: `kubectl \
                 annotate pod --overwrite -n ceph osd-c1-sdb ceph.elemental.net/osd-ids=0`, or \
                 remove the annotation: `kubectl annotate pod -n ceph osd-c1-sdb \
                 ceph.elemental.net/osd-ids-`"
            );
        }
    }
}

#[test]
fn a_refuted_statement_leaves_the_id_to_the_key_that_recorded_it() {
    // c2's id was learnt (recorded) before the admin stated it on c1's pod.
    let metadata = podless(&[(0, "c1"), (1, "c2")]);
    let mut c2 = key("c2", "sdb", None);
    c2.recorded = ids(&[1]);
    let got = map(
        &[key("c1", "sdb", Some(&[1])), c2],
        &metadata,
        &dump(&[(0, true), (1, true)]),
    );
    assert_eq!(refusal(&got[0]).up_on.as_deref(), Some("c2"));
    assert!(
        matches!(&got[1], KeyIds::Known { ids: i, .. } if *i == ids(&[1])),
        "{:?}",
        got[1]
    );
}

#[test]
fn the_right_statement_stands() {
    let metadata = podless(&[(0, "c1"), (1, "c2")]);
    let got = map(
        &[key("c1", "sdb", Some(&[0])), key("c2", "sdb", None)],
        &metadata,
        &dump(&[(0, true), (1, true)]),
    );
    assert_eq!(got[0], stated_ids(&[0]));
    assert_eq!(
        got[1],
        KeyIds::Known {
            ids: ids(&[1]),
            source: IdSource::Node
        }
    );
}

#[test]
fn a_down_or_unplaced_id_is_not_on_another_node() {
    // osd.1 last reported c2 but is down: its metadata is stale. c1 has no free daemon.
    let c1 = key("c1", "sdb", Some(&[1]));
    let metadata = podless(&[(1, "c2")]);
    assert_eq!(
        map(std::slice::from_ref(&c1), &metadata, &dump(&[(1, false)])),
        [stated_ids(&[1])]
    );
    // Up, but its hostname names no node of the CephOSD (the kernel's name of some machine):
    // nothing says it runs elsewhere.
    let metadata = podless(&[(1, "build-host")]);
    assert_eq!(
        map(std::slice::from_ref(&c1), &metadata, &dump(&[(1, true)])),
        [stated_ids(&[1])]
    );
}

#[test]
fn a_stated_id_not_up_is_refused_while_the_node_runs_an_unclaimed_daemon() {
    let metadata = podless(&[(0, "c1"), (1, "c2")]);
    // osd.1 down (its report of c2 stale), osd.7 unknown to Ceph: osd.0 up on c1 may be the
    // pod's own.
    for (stated, exists, said) in [(1, true, "osd.1 down"), (7, false, "no osd.7")] {
        let got = map(
            &[key("c1", "sdb", Some(&[stated]))],
            &metadata,
            &dump(&[(0, true), (1, false)]),
        );
        let refused = refusal(&got[0]);
        assert_eq!(
            (refused.id, refused.up_on.as_deref(), refused.exists),
            (OsdId(stated), None, exists)
        );
        assert_eq!(refused.unclaimed, ids(&[0]));
        let text = refused.to_string();
        assert!(
            text.contains(&format!("Ceph reports {said} and osd.0 up on node c1"))
                && text.contains("osd-ids=0`"),
            "{text}"
        );
    }
}

#[test]
fn a_stated_id_not_up_stands_when_every_daemon_of_the_node_is_claimed() {
    let metadata = podless(&[(5, "c1")]);
    let d = dump(&[(5, true), (7, false)]);
    // c1's other disk takes osd.5 by the count rule.
    let got = map(
        &[key("c1", "sdb", Some(&[7])), key("c1", "sdc", None)],
        &metadata,
        &d,
    );
    assert_eq!(got[0], stated_ids(&[7]));
    assert_eq!(
        got[1],
        KeyIds::Known {
            ids: ids(&[5]),
            source: IdSource::Node
        }
    );
    // Another CephOSD recorded osd.5 for its disk on c1.
    let others = OtherCephOsds {
        ids_on_host: BTreeMap::from([("c1".to_owned(), ids(&[5]))]),
        ..OtherCephOsds::default()
    };
    let got = map_with(&[key("c1", "sdb", Some(&[7]))], &metadata, &d, &others);
    assert_eq!(got, [stated_ids(&[7])]);
    // A daemon that reports a pod is that pod's, not an unclaimed one.
    let mut metadata = metadata;
    let theirs = metadata.get_mut(&OsdId(5)).expect("osd.5");
    theirs.pod_name = Some("someone-elses".into());
    theirs.pod_namespace = Some("ceph".into());
    let got = map(&[key("c1", "sdb", Some(&[7]))], &metadata, &d);
    assert_eq!(got, [stated_ids(&[7])]);
}

#[test]
fn several_stated_ids_are_refused_for_any_one_elsewhere() {
    let metadata = podless(&[(0, "c1"), (2, "c1"), (1, "c2")]);
    let got = map(
        &[key("c1", "sdb", Some(&[0, 1])), key("c2", "sdb", None)],
        &metadata,
        &dump(&[(0, true), (1, true), (2, true)]),
    );
    let refused = refusal(&got[0]);
    assert_eq!(refused.id, OsdId(1));
    assert_eq!(refused.on_node, ids(&[0, 2]));
    // Two stated, two unclaimed on the node: the fix names them; otherwise a placeholder.
    assert!(refused.to_string().contains("osd-ids=0,2`"), "{refused}");
    let got = map(
        &[key("c1", "sdb", Some(&[1])), key("c2", "sdb", None)],
        &metadata,
        &dump(&[(0, true), (1, true), (2, true)]),
    );
    assert!(refusal(&got[0]).to_string().contains("osd-ids=N`"));
}
