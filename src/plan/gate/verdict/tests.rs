//! A statement Ceph refutes, from the metadata to the gate's decision: the step halts before
//! anything is asked or stopped, naming the pod, the stated id, where Ceph reports it and
//! what runs on the pod's node. Ceph's answers one by one (`answers`) and the properties over
//! any answer (`properties`) are beside it.

use super::*;
use crate::ceph::test_data::podless_metadata;
use crate::ceph::{map_osd_ids, parse_status, KeyToMap, OsdMetadata, OtherCephOsds};
use crate::testing::gate_inputs::CephFactsBuilder;
use std::collections::BTreeMap;

/// The healthy 3-OSD cluster with `down` down and out.
fn facts(down: &[u32]) -> CephFacts {
    CephFactsBuilder::healthy().down(down).build()
}

/// osd.0 runs on c1 and osd.1 on c2, both without a pod (adopted reference pods).
fn metadata() -> BTreeMap<OsdId, OsdMetadata> {
    podless_metadata(&[(0, "c1"), (1, "c2")])
}

fn key(host: &str, stated: Option<&[u32]>) -> KeyToMap {
    KeyToMap {
        key: format!("{host}:/dev/sdb"),
        pod: Some(PodRef {
            namespace: "ceph".into(),
            name: format!("osd-{host}"),
            node: host.into(),
        }),
        recorded: BTreeSet::new(),
        stated: stated.map(|s| s.iter().copied().map(OsdId).collect()),
        unreadable_statement: None,
        step_domain: Some(host.into()),
    }
}

fn decide(facts: &CephFacts, stated: &[u32]) -> GateDecision {
    let keys = [key("c1", Some(stated)), key("c2", None)];
    let mapped = map_osd_ids(&keys, &metadata(), &facts.osds, &OtherCephOsds::default());
    precheck(facts, &mapped[..1])
}

#[test]
fn a_stated_id_ceph_reports_on_another_node_halts_before_any_question() {
    let d = decide(&facts(&[]), &[1]);
    assert!(matches!(d, GateDecision::Halt { .. }), "{d:?}");
    let blocker = &d.blockers()[0];
    assert_eq!(blocker.category(), "CephOsdIdsRefuted");
    assert_eq!(blocker.severity(), Severity::Halt);
    let text = blocker.to_string();
    assert!(
        text.starts_with(
            "pod ceph/osd-c1 states ceph.elemental.net/osd-ids=1 but Ceph reports \
             osd.1 up on node c2 and osd.0 up on node c1"
        ) && text.contains(
            "kubectl annotate pod --overwrite -n ceph osd-c1 ceph.elemental.net/osd-ids=0`"
        ),
        "{text}"
    );
    // The pod's own id proceeds, to be asked about.
    assert_eq!(
        decide(&facts(&[]), &[0]),
        GateDecision::Proceed {
            ids: [OsdId(0)].into()
        }
    );
}

#[test]
fn a_stated_down_id_never_stops_the_nodes_running_daemon_unasked() {
    // osd.2 is down (its last report elsewhere): the domain would be "all known and down"
    // and stop with nothing asked, while osd.0 runs on c1.
    let d = decide(&facts(&[2]), &[2]);
    assert!(matches!(d, GateDecision::Halt { .. }), "{d:?}");
    assert_eq!(d.blockers()[0].category(), "CephOsdIdsRefuted");
    assert!(
        d.blockers()[0]
            .to_string()
            .contains("Ceph reports osd.2 down and osd.0 up on node c1"),
        "{d}"
    );
}

mod answers;
mod properties;
