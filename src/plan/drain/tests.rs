//! The drain's rules one by one, without a plan around them.

use super::*;
use crate::crd::osd::OsdKey;
use crate::plan::ceph_gate::{gate, CephInput, CephView};
use k8s_openapi::jiff::Timestamp;

fn subject(host: &str, data: &str, leaving: bool) -> GateSubject {
    GateSubject {
        key: OsdKey::new(host, data),
        pod: None,
        domain: host.into(),
        leaving,
    }
}

fn keys(subjects: &[GateSubject]) -> Vec<String> {
    subjects.iter().map(|s| s.key.to_string()).collect()
}

#[test]
fn a_drain_goes_alone_and_only_with_its_leaving_keys() {
    // The first domain has a leaving key: a drain of the leaving keys of the first domains
    // that have one (an out-of-date key of the same host waits).
    let proposed = [
        subject("a", "/dev/sdb", true),
        subject("a", "/dev/sdc", false),
        subject("b", "/dev/sdb", true),
        subject("c", "/dev/sdb", false),
        subject("d", "/dev/sdb", true),
    ];
    let (next, draining) = next_subjects(&proposed);
    assert!(draining);
    assert_eq!(keys(&next), ["a:/dev/sdb", "b:/dev/sdb"]);
    // Else the stops of the first domains without one.
    let (next, draining) = next_subjects(&proposed[3..]);
    assert!(!draining);
    assert_eq!(keys(&next), ["c:/dev/sdb"]);
    assert_eq!(next_subjects(&[]), (Vec::new(), false));
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("time")
}

fn open_drain() -> CephStep {
    CephStep {
        keys: vec!["a:/dev/sdb".into(), "b:/dev/sdb".into()],
        osds: vec![StepOsd { id: 1, up_from: 7 }, StepOsd { id: 2, up_from: 7 }],
        noout: Vec::new(),
        started: Time(at(1000)),
        drain: Some(StepDrain {
            ids: BTreeMap::from([
                ("a:/dev/sdb".into(), vec![1]),
                ("b:/dev/sdb".into(), vec![2]),
            ]),
            marked_out: vec![1],
        }),
    }
}

fn input<'a>(view: &'a CephView, open: &'a CephStep, returned: &[&str]) -> GateInput<'a> {
    GateInput {
        view,
        skipped: false,
        open: Some(open),
        proposed: &[],
        settled: false,
        untouched: true,
        returned: returned.iter().map(|k| (*k).to_owned()).collect(),
        now: at(5000),
    }
}

fn looked(progress: DrainProgress) -> CephView {
    CephView {
        input: CephInput::NotAsked,
        step: Some(StepProgress::Draining(progress)),
        ..CephView::default()
    }
}

#[test]
fn a_key_back_in_the_spec_leaves_the_drain_and_only_our_out_is_undone() {
    let view = looked(DrainProgress::Safe);
    let open = open_drain();
    // a's osd.1 was marked out by the operator: marked in; the rest still drains (and may
    // go: Ceph says safe).
    let out = gate(&input(&view, &open, &["a:/dev/sdb"]));
    assert!(matches!(&out.first[..], [Action::MarkIn { ids }] if *ids == [OsdId(1)]));
    let step = out.step.expect("b still drains");
    assert_eq!(step.keys, ["b:/dev/sdb"]);
    assert_eq!(step.osds, [StepOsd { id: 2, up_from: 7 }]);
    let drain = step.drain.expect("a drain");
    assert!(drain.marked_out.is_empty() && !drain.ids.contains_key("a:/dev/sdb"));
    assert_eq!(
        out.allowed_keys,
        Some(BTreeSet::from(["b:/dev/sdb".to_owned()]))
    );
    // b's osd.2 was out before the drain (an admin's): nothing to undo.
    let out = gate(&input(&view, &open, &["b:/dev/sdb"]));
    assert!(out.first.is_empty(), "{:?}", out.first);
    // Both back: the drain ends.
    let out = gate(&input(&view, &open, &["a:/dev/sdb", "b:/dev/sdb"]));
    assert!(out.step.is_none() && !out.deletions_allowed);
    assert_eq!(out.condition.reason, ConditionReason::CephIdle);
}

#[test]
fn a_drain_is_never_given_up_for_its_pods_standing_and_sets_no_noout() {
    // Hours with its pods untouched: still draining (a rollout step would be given up).
    let view = looked(DrainProgress::Moving {
        why: "12 PGs still map to osd.1".into(),
    });
    let open = open_drain();
    let out = gate(&input(&view, &open, &[]));
    assert_eq!(out.step.as_ref(), Some(&open));
    assert!(out.first.is_empty() && out.last.is_empty() && !out.deletions_allowed);
    assert!(out.condition.message.contains("12 PGs still map to osd.1"));
    // The halt (an Event each time it changes) does not follow Ceph's numbers.
    assert_eq!(
        out.halted.as_deref(),
        Some(
            "draining osd.1, osd.2 (a:/dev/sdb, b:/dev/sdb) before their pods stop (see the \
             CephGate condition)"
        )
    );
    // Ceph away: said, nothing stops.
    let view = looked(DrainProgress::NoAnswer {
        why: "no mgr is available".into(),
    });
    let out = gate(&input(&view, &open, &[]));
    assert_eq!(
        (out.condition.holds, out.condition.reason),
        (false, ConditionReason::CephBlocked("CephUnavailable"))
    );
    assert!(!out.deletions_allowed);
}

#[test]
fn a_status_written_before_drains_existed_reads_as_a_rollout_step() {
    let old = serde_json::json!({
        "keys": ["a:/dev/sdb"],
        "osds": [{"id": 1, "upFrom": 7}],
        "noout": [1],
        "started": "2026-11-26T10:00:00Z",
    });
    let step: CephStep = serde_json::from_value(old.clone()).expect("an old step");
    assert!(step.drain.is_none());
    assert_eq!(serde_json::to_value(&step).expect("json"), old);
    let drain = serde_json::to_value(open_drain()).expect("json");
    assert_eq!(
        drain["drain"],
        serde_json::json!({"ids": {"a:/dev/sdb": [1], "b:/dev/sdb": [2]}, "markedOut": [1]})
    );
}

#[test]
fn a_drain_without_ids_lets_only_its_own_pods_go() {
    let proposed = [
        subject("a", "/dev/sdb", true),
        subject("a", "/dev/sdc", false),
    ];
    let view = CephView {
        input: CephInput::Answered(GateAnswer {
            keys: BTreeMap::from([(OsdKey::new("a", "/dev/sdb"), BTreeSet::new())]),
            decision: crate::ceph::GateDecision::Proceed {
                ids: BTreeSet::new(),
            },
            up_from: BTreeMap::new(),
            learned: BTreeMap::new(),
            noout_before: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
        }),
        ..CephView::default()
    };
    let out = gate(&GateInput {
        view: &view,
        skipped: false,
        open: None,
        proposed: &proposed,
        settled: false,
        untouched: false,
        returned: BTreeSet::new(),
        now: at(5000),
    });
    assert!(out.deletions_allowed && out.step.is_none() && out.first.is_empty());
    assert_eq!(
        out.allowed_keys,
        Some(BTreeSet::from(["a:/dev/sdb".to_owned()])),
        "a:/dev/sdc is out of date: it waits for a step of its own"
    );
}
