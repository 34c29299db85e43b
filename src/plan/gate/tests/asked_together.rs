//! Steps kept apart by Ceph itself: every OSD carrying `noout` (another step on the Ceph
//! cluster, or an admin's) is asked about together with a new step's, the step's opening
//! carries what its question covered, and a step's `noout` already gone is not cleared again.

use super::*;
use crate::ceph::CephFacts;
use crate::plan::gate::asking::asked_together;
use crate::testing::gate_inputs::{
    answered, asked, known, ok_to_stop, CephFactsBuilder, CephViewBuilder, GateInputBuilder,
};
use proptest::prelude::*;

/// The healthy 3-OSD cluster with `noout` on `flagged`.
fn flagged(flagged: &[u32]) -> CephFacts {
    CephFactsBuilder::healthy().noout(flagged).build()
}

fn set(of: &[u32]) -> BTreeSet<OsdId> {
    ids(of)
}

#[test]
fn the_question_covers_every_other_osd_carrying_noout_but_the_own_ended_steps() {
    let facts = flagged(&[0, 1, 2]);
    // osd.1 is the step's own, osd.2 its CephOSD's ended step's: osd.0 is another's.
    assert_eq!(
        asked_together(&facts.osds, &set(&[1]), &set(&[2])),
        set(&[0])
    );
    assert_eq!(
        asked_together(&facts.osds, &set(&[0, 1]), &set(&[2])),
        set(&[])
    );
    assert_eq!(
        asked_together(
            &CephFactsBuilder::healthy().build().osds,
            &set(&[1]),
            &set(&[])
        ),
        set(&[])
    );
}

#[test]
fn another_steps_noout_is_asked_about_together_and_named_when_ceph_refuses() {
    // osd.0 carries noout: another step's OSD, its daemon stopping but still up.
    let question = [GateSubjectBuilder::host("host-2").build()];
    let mapped = vec![known("host-2:/dev/sdb", &[1])];
    let asking = asked(conversation::start(
        &question,
        &[],
        flagged(&[0]),
        mapped,
        BTreeMap::new(),
    ));
    assert_eq!(asking.ids(), &set(&[0, 1]), "asked together");
    let done = answered(asking.heard(Ok(&ok_to_stop(false, &[0, 1]))));
    assert!(matches!(done.answer.decision, GateDecision::Wait { .. }));
    assert_eq!(done.answer.asked_with, set(&[0]));

    let view = CephViewBuilder::on().answered(done.answer).build();
    let proposed = [GateSubjectBuilder::host("host-2").build()];
    let out = gate(&input(&view, None, &proposed));
    assert!(!out.deletions_allowed && out.first.is_empty());
    assert_eq!(
        out.condition.message,
        "Ceph does not let host-2:/dev/sdb stop: Ceph says stopping osd.0, osd.1 is not safe: \
         8 PGs not ok, 0 ok; asked together with osd.0, which carries noout: another step on \
         this Ceph cluster, or an admin's"
    );
}

#[test]
fn a_yes_for_both_lets_only_the_steps_own_osds_stop_and_its_opening_covers_both() {
    let question = [GateSubjectBuilder::host("host-2").build()];
    let mapped = vec![known("host-2:/dev/sdb", &[1])];
    let asking = asked(conversation::start(
        &question,
        &[],
        flagged(&[0]),
        mapped,
        BTreeMap::new(),
    ));
    let done = answered(asking.heard(Ok(&ok_to_stop(true, &[0, 1]))));
    assert_eq!(
        done.answer.decision,
        GateDecision::Proceed { ids: set(&[1]) }
    );
    let view = CephViewBuilder::on().answered(done.answer).build();
    let proposed = [GateSubjectBuilder::host("host-2").build()];
    let out = gate(&input(&view, None, &proposed));
    assert!(out.deletions_allowed);
    assert!(matches!(
        &out.first[..],
        [Action::RecordCephStep, Action::SetNoout { ids, covered }]
            if *ids == [OsdId(1)] && *covered == [OsdId(0), OsdId(1)]
    ));
    assert_eq!(out.step.expect("open").noout, [1]);
    assert!(
        out.condition.message.ends_with(
            "(ok to stop osd.1; asked together with osd.0, which carries noout: another step \
             on this Ceph cluster, or an admin's)"
        ),
        "{}",
        out.condition.message
    );
}

#[test]
fn a_yes_that_leaves_out_an_osd_asked_together_is_not_understood() {
    let question = [GateSubjectBuilder::host("host-2").build()];
    let mapped = vec![known("host-2:/dev/sdb", &[1])];
    let asking = asked(conversation::start(
        &question,
        &[],
        flagged(&[0]),
        mapped,
        BTreeMap::new(),
    ));
    let done = answered(asking.heard(Ok(&ok_to_stop(true, &[1]))));
    assert!(
        matches!(&done.answer.decision, GateDecision::Halt { blockers }
            if matches!(blockers[..], [Blocker::OkToStopIncomplete { .. }])),
        "{:?}",
        done.answer.decision
    );
}

#[test]
fn the_next_step_of_the_same_cephosd_is_not_asked_with_its_ended_steps_noout() {
    // osd.0 keeps the noout of this CephOSD's step that just ended (cleared at the hand-over).
    let question = [GateSubjectBuilder::host("host-2").build()];
    let mapped = vec![known("host-2:/dev/sdb", &[1])];
    let asking = asked(conversation::start_after(
        &question,
        &[],
        flagged(&[0]),
        mapped,
        BTreeMap::new(),
        set(&[0]),
        conversation::ReleaseInput::default(),
    ));
    assert_eq!(asking.ids(), &set(&[1]));
    let done = answered(asking.heard(Ok(&ok_to_stop(true, &[1]))));
    assert!(done.answer.asked_with.is_empty());

    // Its opening covers the ended step's noout: the read-back finds nothing foreign.
    let open = step(&[0]);
    let view = CephViewBuilder::on()
        .step(StepProgress::Done)
        .answered(done.answer)
        .build();
    let proposed = [GateSubjectBuilder::host("host-2").build()];
    let ended = GateInputBuilder::new(&view)
        .open(&open)
        .proposed(&proposed)
        .settled()
        .build();
    let out = gate(&ended);
    assert!(matches!(
        &out.first[..],
        [Action::RecordCephStep, Action::SetNoout { ids, covered }]
            if *ids == [OsdId(1)] && *covered == [OsdId(0), OsdId(1)]
    ));
    assert!(matches!(&out.last[..], [Action::ClearNoout { ids }] if *ids == [OsdId(0)]));
}

#[test]
fn a_step_whose_osds_are_all_down_asks_nothing_but_covers_the_flags_it_saw() {
    let question = [GateSubjectBuilder::host("host-2").build()];
    let mapped = vec![known("host-2:/dev/sdb", &[1])];
    let mut facts = flagged(&[0]);
    facts.osds.osds.get_mut(&OsdId(1)).expect("osd.1").up = false;
    let done = answered(conversation::start(
        &question,
        &[],
        facts,
        mapped,
        BTreeMap::new(),
    ));
    assert_eq!(
        done.answer.decision,
        GateDecision::Proceed { ids: set(&[1]) }
    );
    assert_eq!(done.answer.asked_with, set(&[0]));
}

#[test]
fn an_ended_steps_noout_already_gone_is_not_cleared_again() {
    // The record keeps the ids taken over from the step before (cleared at the hand-over).
    let open = step(&[3, 4]);
    let mut view = on(Some(StepProgress::Done));
    view.noout_now = Some(set(&[4, 9]));
    let ended = GateInputBuilder::new(&view).open(&open).settled().build();
    let out = gate(&ended);
    assert!(matches!(&out.first[..], [Action::ClearNoout { ids }] if *ids == [OsdId(4)]));

    // None left: no clear at all. Not looked at: all of them (clearing is idempotent).
    view.noout_now = Some(set(&[9]));
    let ended = GateInputBuilder::new(&view).open(&open).settled().build();
    assert!(gate(&ended).first.is_empty());
    view.noout_now = None;
    let ended = GateInputBuilder::new(&view).open(&open).settled().build();
    assert!(matches!(
        &gate(&ended).first[..],
        [Action::ClearNoout { ids }] if *ids == [OsdId(3), OsdId(4)]
    ));
}

#[test]
fn a_lost_lock_is_said_while_the_step_goes_on_guarded_by_its_noout() {
    let open = step(&[3]);
    let mut view = on(Some(StepProgress::Booting {
        pending: vec![OsdId(3)],
    }));
    view.lock_lost = Some("its Lease was deleted (taken back)".into());
    let out = gate(&input(&view, Some(&open), &[]));
    assert!(out.step.is_some() && !out.deletions_allowed);
    let note = "the step on h:/dev/sdb lost the Ceph cluster's step lock: its Lease was deleted \
                (taken back); its OSDs stay guarded by their noout (osd.3): every other step on \
                this Ceph cluster is asked about together with them; the lock is taken back \
                when free";
    assert_eq!(out.condition.reason, ConditionReason::StepLockLost);
    assert!(!out.condition.holds);
    assert_eq!(out.condition.message, note);
    assert!(matches!(&out.events[..], [e]
        if e.warning && e.reason == EventReason::StepLockLost && e.note == note));

    // Held again on the next look: the step's own condition.
    view.lock_lost = None;
    let out = gate(&input(&view, Some(&open), &[]));
    assert_eq!(out.condition.reason, ConditionReason::StepInProgress);
    assert!(out.events.is_empty());
}

proptest! {
    /// Whatever the flags, the step's ids and the own ended step's: the question covers the
    /// step and every flagged OSD but the own ended step's, and nothing else.
    #[test]
    fn the_question_covers_the_step_and_every_foreign_flag(
        flags in proptest::collection::btree_set(0u32..3, 0..=3),
        step in proptest::collection::btree_set(0u32..3, 1..=3),
        own in proptest::collection::btree_set(0u32..3, 0..=3),
    ) {
        let flags: Vec<u32> = flags.into_iter().collect();
        let to_ids = |s: &BTreeSet<u32>| s.iter().copied().map(OsdId).collect::<BTreeSet<_>>();
        let (step, own) = (to_ids(&step), to_ids(&own));
        let facts = flagged(&flags);
        let beside = asked_together(&facts.osds, &step, &own);
        let asked: BTreeSet<OsdId> = step.union(&beside).copied().collect();
        for id in &flags {
            let id = OsdId(*id);
            prop_assert!(asked.contains(&id) || own.contains(&id), "{id} left out");
        }
        prop_assert!(step.is_subset(&asked));
        for id in &beside {
            prop_assert!(flags.contains(&id.0) && !step.contains(id) && !own.contains(id));
        }
    }
}
