//! What the gate makes of a plan (`gate`): off or skipped, a step open, done or given up, the
//! hand-over to the next step, the `noout` it sets and clears, and Ceph's answer for some of
//! the domains proposed. Drains (`drains`) and the flags asked about together
//! (`asked_together`) are beside it.

use super::*;
use crate::ceph::test_data::ids;
use crate::crd::StepOsd;
use crate::testing::gate_inputs::{
    at, ok_to_stop, CephStepBuilder, CephViewBuilder, GateAnswerBuilder, GateInputBuilder,
    GateSubjectBuilder,
};

/// A rollout step on `h:/dev/sdb` that stopped `noout` (each `up_from` 5) and set their `noout`.
fn step(noout: &[u32]) -> CephStep {
    let osds: Vec<(u32, u64)> = noout.iter().map(|&id| (id, 5)).collect();
    CephStepBuilder::new().osds(&osds).noout(noout).build()
}

/// `h:/dev/sdb`, its pod running.
fn subjects() -> Vec<GateSubject> {
    vec![GateSubjectBuilder::new("h", "/dev/sdb")
        .pod("osd-h-sdb-x")
        .build()]
}

fn input<'a>(
    view: &'a CephView,
    open: Option<&'a CephStep>,
    proposed: &'a [GateSubject],
) -> GateInput<'a> {
    let input = GateInputBuilder::new(view).proposed(proposed);
    match open {
        Some(open) => input.open(open),
        None => input,
    }
    .build()
}

/// The gate on, Ceph not asked, the open step (if any) at `step`.
fn on(step: Option<StepProgress>) -> CephView {
    CephViewBuilder::on().step(step).build()
}

#[test]
fn off_lets_everything_through_and_says_why() {
    let view = CephViewBuilder::off().build();
    let out = gate(&input(&view, None, &subjects()));
    assert!(out.deletions_allowed && out.first.is_empty() && out.question.is_none());
    assert_eq!(out.condition.reason, ConditionReason::NotConfigured);
    assert!(!out.condition.holds);

    let on = on(None);
    let proposed = subjects();
    let skipped = GateInputBuilder::new(&on).proposed(&proposed).skipped();
    let out = gate(&skipped.build());
    assert!(out.deletions_allowed);
    assert_eq!(out.condition.reason, ConditionReason::Skipped);
}

#[test]
fn nothing_proposed_nothing_open_is_idle() {
    let view = on(None);
    let out = gate(&input(&view, None, &[]));
    assert_eq!(out.condition.reason, ConditionReason::CephIdle);
    assert!(out.condition.holds && out.question.is_none() && out.requeue_after.is_none());
}

#[test]
fn an_open_step_not_looked_at_waits_and_says_so() {
    let view = on(None);
    let open = step(&[3]);
    let out = gate(&input(&view, Some(&open), &subjects()));
    assert!(!out.deletions_allowed && out.first.is_empty() && out.question.is_none());
    assert_eq!(out.step.as_ref(), Some(&open));
    assert!(out
        .halted
        .unwrap_or_default()
        .contains("Ceph was not looked at yet"));
}

#[test]
fn each_progress_is_quoted() {
    let open = step(&[3]);
    for (progress, says) in [
        (
            StepProgress::Booting {
                pending: vec![OsdId(3)],
            },
            "the new daemon of osd.3 is not up yet",
        ),
        (
            StepProgress::Recovering {
                blockers: vec![Blocker::NoAnswer {
                    error: "timeout".into(),
                }],
            },
            "Ceph gave no usable answer: timeout",
        ),
        (
            StepProgress::Confirming {
                clean_looks: 1,
                wait_at_least: std::time::Duration::from_millis(1500),
            },
            "every PG active+clean in 1 look(s), confirming for at least 1500 ms more",
        ),
        (
            StepProgress::Done,
            "Ceph is done, its replacements are not Ready yet",
        ),
    ] {
        let view = on(Some(progress.clone()));
        let out = gate(&input(&view, Some(&open), &[]));
        let halted = out.halted.unwrap_or_default();
        assert!(halted.contains(says), "{halted}");
        assert_eq!(out.requeue_after, Some(SLOW_LOOKS));
        // Over a long-lived connection the step is looked at more often.
        let quick = CephViewBuilder::on()
            .step(progress)
            .look_every(QUICK_LOOKS)
            .build();
        let out = gate(&input(&quick, Some(&open), &[]));
        assert_eq!(out.requeue_after, Some(QUICK_LOOKS));
    }
}

#[test]
fn a_step_that_cannot_end_by_itself_says_so_false() {
    let open = step(&[3]);
    for (blocker, reason) in [
        (
            Blocker::NoAnswer {
                error: "timeout".into(),
            },
            Some("CephUnavailable"),
        ),
        (Blocker::OtherOsdDown { id: OsdId(1) }, Some("CephOsdDown")),
        (
            Blocker::PgsNotClean {
                not_clean: 3,
                num_pgs: 33,
                states: "3 peering".into(),
            },
            None,
        ),
    ] {
        let view = on(Some(StepProgress::Recovering {
            blockers: vec![blocker],
        }));
        let out = gate(&input(&view, Some(&open), &[]));
        assert!(out.step.is_some() && !out.deletions_allowed);
        if let Some(reason) = reason {
            assert!(!out.condition.holds);
            assert_eq!(out.condition.reason, ConditionReason::CephBlocked(reason));
        } else {
            assert!(
                out.condition.holds,
                "recovering PGs are a step's normal course"
            );
            assert_eq!(out.condition.reason, ConditionReason::StepInProgress);
        }
    }
}

#[test]
fn done_and_settled_clears_exactly_the_steps_noout() {
    let view = on(Some(StepProgress::Done));
    let open = step(&[3, 7]);
    let settled = GateInputBuilder::new(&view).open(&open).settled().build();
    let out = gate(&settled);
    assert!(matches!(&out.first[..], [Action::ClearNoout { ids }] if *ids == [OsdId(3), OsdId(7)]));
    assert_eq!(out.step, None);
    assert!(!out.deletions_allowed, "nothing more to take down");
    assert_eq!(out.condition.reason, ConditionReason::CephIdle);
    assert_eq!(
        out.condition.message,
        "the step on h:/dev/sdb is done; Ceph is asked before each rollout step"
    );
    assert_eq!(out.requeue_after, None);

    // A step whose noout was cleared already ends without another clear.
    let open = step(&[]);
    let settled = GateInputBuilder::new(&view).open(&open).settled().build();
    let out = gate(&settled);
    assert!(out.first.is_empty() && out.step.is_none());
}

#[test]
fn a_step_that_ends_hands_over_to_the_next_in_the_same_plan() {
    let open = step(&[3]);
    let next = vec![GateSubjectBuilder::new("i", "/dev/sdb")
        .pod("osd-i-sdb-y")
        .build()];
    // Not asked yet: the next step is asked about, the ended step's noout cleared meanwhile.
    let view = on(Some(StepProgress::Done));
    let ended = GateInputBuilder::new(&view)
        .open(&open)
        .proposed(&next)
        .settled()
        .build();
    let out = gate(&ended);
    assert_eq!(out.question.as_deref(), Some(&next[..]));
    assert!(matches!(&out.first[..], [Action::ClearNoout { ids }] if *ids == [OsdId(3)]));
    assert_eq!((out.step, out.deletions_allowed), (None, false));
    assert_eq!(out.condition.reason, ConditionReason::Asking);

    // Ceph says go: the next step's noout is set first, the ended one's cleared last (after
    // the deletions), and the record keeps both until the next step's end.
    let view = CephViewBuilder::on()
        .step(StepProgress::Done)
        .answered(
            GateAnswerBuilder::proceed(&[4])
                .key("i", "/dev/sdb", &[4])
                .up_from(&[(4, 9)])
                .build(),
        )
        .build();
    let ended = GateInputBuilder::new(&view)
        .open(&open)
        .proposed(&next)
        .settled()
        .build();
    let out = gate(&ended);
    assert!(out.deletions_allowed);
    assert!(matches!(
        &out.first[..],
        [Action::RecordCephStep, Action::SetNoout { ids, .. }] if *ids == [OsdId(4)]
    ));
    assert!(matches!(&out.last[..], [Action::ClearNoout { ids }] if *ids == [OsdId(3)]));
    let recorded = out.step.expect("the next step");
    assert_eq!(recorded.keys, ["i:/dev/sdb"]);
    assert_eq!(recorded.noout, [3, 4]);
    assert_eq!(recorded.osds, [StepOsd { id: 4, up_from: 9 }]);

    // Not done yet: nothing of the next step.
    let view = on(Some(StepProgress::Booting {
        pending: vec![OsdId(3)],
    }));
    let booting = GateInputBuilder::new(&view)
        .open(&open)
        .proposed(&next)
        .settled()
        .build();
    let out = gate(&booting);
    assert!(out.question.is_none() && !out.deletions_allowed && out.first.is_empty());
    assert_eq!(
        out.condition.message,
        "a step is under way on h:/dev/sdb: the new daemon of osd.3 is not up yet"
    );
}

#[test]
fn a_step_given_up_and_let_go_again_keeps_the_noout_of_its_osds() {
    let open = step(&[3]);
    let view = CephViewBuilder::on()
        .step(StepProgress::Booting {
            pending: vec![OsdId(3)],
        })
        .answered(
            GateAnswerBuilder::proceed(&[3])
                .key("h", "/dev/sdb", &[3])
                .up_from(&[(3, 5)])
                .build(),
        )
        .build();
    let proposed = subjects();
    let mut untouched = input(&view, Some(&open), &proposed);
    untouched.untouched = true;
    untouched.now = at(1000) + UNTOUCHED_STEP_LIMIT;
    let out = gate(&untouched);
    assert!(out.deletions_allowed);
    assert!(matches!(
        &out.first[..],
        [Action::RecordCephStep, Action::SetNoout { ids, .. }] if *ids == [OsdId(3)]
    ));
    assert!(out.last.is_empty(), "{:?}", out.last);
    assert_eq!(out.step.expect("asked again").noout, [3]);
}

#[test]
fn an_untouched_step_is_given_up_only_after_the_limit() {
    let view = on(Some(StepProgress::Booting {
        pending: vec![OsdId(3)],
    }));
    let open = step(&[3]);
    let mut untouched = input(&view, Some(&open), &[]);
    untouched.untouched = true;
    assert!(gate(&untouched).step.is_some());
    untouched.now = at(1000) + UNTOUCHED_STEP_LIMIT;
    let out = gate(&untouched);
    assert!(out.step.is_none());
    assert!(matches!(&out.first[..], [Action::ClearNoout { .. }]));
}

#[test]
fn a_wait_without_blockers_is_still_unavailable() {
    let view = CephViewBuilder::on()
        .answered(
            GateAnswerBuilder::new(GateDecision::Wait {
                blockers: Vec::new(),
            })
            .key("h", "/dev/sdb", &[])
            .build(),
        )
        .build();
    let out = gate(&input(&view, None, &subjects()));
    assert!(!out.deletions_allowed);
    assert_eq!(
        out.condition.reason,
        ConditionReason::CephBlocked("CephUnavailable")
    );
}

#[test]
fn learnt_ids_replace_recorded_ones_and_only_kept_keys_stay() {
    let previous = BTreeMap::from([
        ("a:/dev/sdb".to_owned(), vec![1]),
        ("b:/dev/sdb".to_owned(), vec![2]),
        ("c:/dev/sdb".to_owned(), vec![3]),
    ]);
    let learned = BTreeMap::from([
        (OsdKey::new("a", "/dev/sdb"), BTreeSet::from([OsdId(10)])),
        (OsdKey::new("d", "/dev/sdb"), BTreeSet::from([OsdId(4)])),
    ]);
    let keep: BTreeSet<String> = ["a:/dev/sdb", "b:/dev/sdb", "d:/dev/sdb"]
        .map(str::to_owned)
        .into();
    assert_eq!(
        osd_ids(&previous, &learned, &keep),
        BTreeMap::from([
            ("a:/dev/sdb".to_owned(), vec![10]),
            ("b:/dev/sdb".to_owned(), vec![2]),
            ("d:/dev/sdb".to_owned(), vec![4]),
        ])
    );
}

#[test]
fn an_answer_for_the_first_domains_lets_only_those_go() {
    let subject = |host: &str| {
        GateSubjectBuilder::new(host, "/dev/sdb")
            .pod(format!("osd-{host}-sdb-x"))
            .build()
    };
    let proposed = vec![subject("a"), subject("b"), subject("c")];
    let prefixes = step_sets(&proposed);
    assert_eq!(
        prefixes.iter().map(Vec::len).collect::<Vec<_>>(),
        [3, 2, 1],
        "largest first"
    );
    let answer_for = |keys: &[&str]| {
        let answer = (keys.iter()).fold(GateAnswerBuilder::proceed(&[1]), |answer, h| {
            answer.key(h, "/dev/sdb", &[1])
        });
        CephViewBuilder::on().answered(answer.build()).build()
    };
    let view = answer_for(&["a"]);
    let out = gate(&input(&view, None, &proposed));
    assert!(out.deletions_allowed);
    assert_eq!(out.allowed_domains, Some(BTreeSet::from(["a".to_owned()])));
    assert_eq!(out.step.expect("a step").keys, ["a:/dev/sdb"]);

    let view = answer_for(&["a", "b", "c"]);
    let out = gate(&input(&view, None, &proposed));
    assert!(out.deletions_allowed && out.allowed_domains.is_none());

    // Not a prefix: asked again, nothing goes.
    let view = answer_for(&["b"]);
    let out = gate(&input(&view, None, &proposed));
    assert!(!out.deletions_allowed);
    assert_eq!(out.question.as_deref(), Some(&proposed[..]));
}

/// An answer of `Proceed` for `ids` (the domain `h`), with `noout` already set on `before`.
fn proceed(ids: &[u32], before: &[u32]) -> CephView {
    let up_from: Vec<(u32, u64)> = ids.iter().map(|&id| (id, 5)).collect();
    let answer = GateAnswerBuilder::proceed(ids)
        .key("h", "/dev/sdb", ids)
        .up_from(&up_from)
        .noout_before(before);
    CephViewBuilder::on().answered(answer.build()).build()
}

#[test]
fn a_noout_set_before_the_step_is_neither_set_nor_cleared_by_it() {
    // osd.3 had noout (an admin's maintenance), osd.4 not: the step sets and records osd.4's
    // alone, and says so.
    let view = proceed(&[3, 4], &[3]);
    let out = gate(&input(&view, None, &subjects()));
    assert!(out.deletions_allowed);
    assert!(matches!(
        &out.first[..],
        [Action::RecordCephStep, Action::SetNoout { ids, .. }] if *ids == [OsdId(4)]
    ));
    let recorded = out.step.expect("a step");
    assert_eq!(recorded.noout, [4]);
    assert_eq!(recorded.osds.len(), 2);
    assert!(
        matches!(&out.events[..], [e] if e.reason == EventReason::Noout
            && e.note.starts_with("noout on osd.3 was set before this step, not by the operator")),
        "{:?}",
        out.events
    );

    // Its end clears what it recorded: osd.4's noout only.
    let done = on(Some(StepProgress::Done));
    let ended = GateInputBuilder::new(&done)
        .open(&recorded)
        .settled()
        .build();
    let out = gate(&ended);
    assert!(matches!(&out.first[..], [Action::ClearNoout { ids }] if *ids == [OsdId(4)]));
    // Held too long: the limit clears the step's own noout only, too.
    let booting = on(Some(StepProgress::Booting {
        pending: vec![OsdId(3)],
    }));
    let mut late = input(&booting, Some(&recorded), &[]);
    late.now = at(1010) + DEFAULT_MAX_NOOUT;
    let out = gate(&late);
    assert!(matches!(&out.first[..], [Action::ClearNoout { ids }] if *ids == [OsdId(4)]));
}

#[test]
fn every_noout_set_before_means_no_noout_action_at_all() {
    let view = proceed(&[3], &[3]);
    let out = gate(&input(&view, None, &subjects()));
    assert!(out.deletions_allowed);
    assert!(
        matches!(&out.first[..], [Action::RecordCephStep]),
        "{:?}",
        out.first
    );
    assert!(out.step.expect("a step").noout.is_empty());
}

#[test]
fn the_noout_of_the_step_before_is_ours_not_an_admins() {
    // The step on osd.3 ended and the next one stops osd.3 again (given up and asked again):
    // Ceph shows noout on osd.3, set by the operator; the next step keeps it as its own.
    let open = step(&[3]);
    let view = proceed(&[3], &[3]);
    let proposed = subjects();
    let mut again = input(&view, Some(&open), &proposed);
    again.untouched = true;
    again.now = at(1000) + UNTOUCHED_STEP_LIMIT;
    let out = gate(&again);
    assert_eq!(out.step.expect("asked again").noout, [3]);
    assert!(out.events.iter().all(|e| e.reason != EventReason::Noout));
}

#[test]
fn ceph_letting_part_of_a_failure_domain_go_starts_a_step_on_that_part_only() {
    let proposed = vec![
        GateSubjectBuilder::host("a").domain("r1").build(),
        GateSubjectBuilder::host("b").domain("r1").build(),
        GateSubjectBuilder::host("c").domain("r1").build(),
        GateSubjectBuilder::host("d").domain("r2").build(),
    ];
    let refusal = GateDecision::Wait {
        blockers: vec![Blocker::NotOkToStop {
            answer: ok_to_stop(false, &[1, 2, 3]),
        }],
    };
    let answer = GateAnswerBuilder::proceed(&[1, 2])
        .key("a", "/dev/sdb", &[1])
        .key("b", "/dev/sdb", &[2])
        .refused_whole("r1", refusal);
    let view = CephViewBuilder::on().answered(answer.build()).build();
    let out = gate(&input(&view, None, &proposed));
    assert!(out.deletions_allowed);
    assert_eq!(out.allowed_domains, None);
    assert_eq!(
        out.allowed_keys,
        Some(BTreeSet::from([
            "a:/dev/sdb".to_owned(),
            "b:/dev/sdb".to_owned()
        ]))
    );
    assert_eq!(out.step.expect("a step").keys, ["a:/dev/sdb", "b:/dev/sdb"]);
    let message = &out.condition.message;
    assert!(
        message.starts_with("Ceph does not let all of r1 stop at once (Ceph says stopping osd.1, osd.2, osd.3 is not safe: 8 PGs not ok"),
        "{message}"
    );
    assert!(
        message.ends_with("Ceph says a:/dev/sdb, b:/dev/sdb may stop (ok to stop osd.1, osd.2)"),
        "{message}"
    );
    // The condition says it until the step's next look; a Normal event keeps it.
    let notes: Vec<(bool, &str)> = (out.events.iter())
        .filter(|e| e.reason == EventReason::CephGate)
        .map(|e| (e.warning, e.note.as_str()))
        .collect();
    assert_eq!(notes, [(false, message.as_str())]);
}

mod asked_together;
mod drains;
