//! An open drain through the gate: a key back in the spec leaves it (only the operator's own
//! `out` undone), it is never given up for its pods standing, and without ids it lets only its
//! own pods go.

use super::*;
use crate::testing::gate_inputs::{
    at, CephStepBuilder, CephViewBuilder, GateAnswerBuilder, GateInputBuilder, GateSubjectBuilder,
};

/// The drain of `a:/dev/sdb` (osd.1, marked out by the operator) and `b:/dev/sdb` (osd.2).
fn open_drain() -> CephStep {
    CephStepBuilder::new()
        .keys(&["a:/dev/sdb", "b:/dev/sdb"])
        .osds(&[(1, 7), (2, 7)])
        .drain(&[("a:/dev/sdb", &[1]), ("b:/dev/sdb", &[2])], &[1])
        .build()
}

/// The gate at 5000 s, with `open` untouched and `returned` back in the spec.
fn drain_input<'a>(view: &'a CephView, open: &'a CephStep, returned: &[&str]) -> GateInput<'a> {
    GateInputBuilder::new(view)
        .open(open)
        .untouched()
        .returned(returned)
        .now(at(5000))
        .build()
}

/// Ceph not asked; the open drain at `progress`.
fn looked(progress: DrainProgress) -> CephView {
    CephViewBuilder::on()
        .step(StepProgress::Draining(progress))
        .build()
}

#[test]
fn a_key_back_in_the_spec_leaves_the_drain_and_only_our_out_is_undone() {
    let view = looked(DrainProgress::Safe);
    let open = open_drain();
    // a's osd.1 was marked out by the operator: marked in; the rest still drains (and may
    // go: Ceph says safe).
    let out = gate(&drain_input(&view, &open, &["a:/dev/sdb"]));
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
    let out = gate(&drain_input(&view, &open, &["b:/dev/sdb"]));
    assert!(out.first.is_empty(), "{:?}", out.first);
    // Both back: the drain ends.
    let out = gate(&drain_input(&view, &open, &["a:/dev/sdb", "b:/dev/sdb"]));
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
    let out = gate(&drain_input(&view, &open, &[]));
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
    let out = gate(&drain_input(&view, &open, &[]));
    assert_eq!(
        (out.condition.holds, out.condition.reason),
        (false, ConditionReason::CephBlocked("CephUnavailable"))
    );
    assert!(!out.deletions_allowed);
}

#[test]
fn a_drain_without_ids_lets_only_its_own_pods_go() {
    let proposed = [
        GateSubjectBuilder::new("a", "/dev/sdb")
            .leaving(true)
            .build(),
        GateSubjectBuilder::new("a", "/dev/sdc").build(),
    ];
    let view = CephViewBuilder::off()
        .answered(
            GateAnswerBuilder::proceed(&[])
                .key("a", "/dev/sdb", &[])
                .build(),
        )
        .build();
    let out = gate(
        &GateInputBuilder::new(&view)
            .proposed(&proposed)
            .now(at(5000))
            .build(),
    );
    assert!(out.deletions_allowed && out.step.is_none() && out.first.is_empty());
    assert_eq!(
        out.allowed_keys,
        Some(BTreeSet::from(["a:/dev/sdb".to_owned()])),
        "a:/dev/sdc is out of date: it waits for a step of its own"
    );
}
