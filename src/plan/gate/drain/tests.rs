//! A removal's drain: which keys it takes (`next_subjects`), and how a status records it.

use super::*;
use crate::testing::gate_inputs::{CephStepBuilder, GateSubjectBuilder};

fn subject(host: &str, data: &str, leaving: bool) -> GateSubject {
    GateSubjectBuilder::new(host, data).leaving(leaving).build()
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
    let drain = serde_json::to_value(
        CephStepBuilder::new()
            .keys(&["a:/dev/sdb", "b:/dev/sdb"])
            .osds(&[(1, 7), (2, 7)])
            .drain(&[("a:/dev/sdb", &[1]), ("b:/dev/sdb", &[2])], &[1])
            .build(),
    )
    .expect("json");
    assert_eq!(
        drain["drain"],
        serde_json::json!({"ids": {"a:/dev/sdb": [1], "b:/dev/sdb": [2]}, "markedOut": [1]})
    );
}
