//! The gate's rules one by one, without a plan around them.

use super::*;
use crate::ceph::Blocker;
use k8s_openapi::jiff::Timestamp;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("time")
}

fn step(noout: &[u32]) -> CephStep {
    CephStep {
        keys: vec!["h:/dev/sdb".into()],
        osds: noout.iter().map(|&id| StepOsd { id, up_from: 5 }).collect(),
        noout: noout.to_vec(),
        started: Time(at(1000)),
        drain: None,
    }
}

fn subjects() -> Vec<GateSubject> {
    vec![GateSubject {
        key: OsdKey::new("h", "/dev/sdb"),
        pod: Some("osd-h-sdb-x".into()),
        domain: "h".into(),
        leaving: false,
    }]
}

fn input<'a>(
    view: &'a CephView,
    open: Option<&'a CephStep>,
    proposed: &'a [GateSubject],
) -> GateInput<'a> {
    GateInput {
        view,
        skipped: false,
        open,
        proposed,
        settled: false,
        untouched: false,
        returned: BTreeSet::new(),
        now: at(1010),
    }
}

fn on(step: Option<StepProgress>) -> CephView {
    CephView {
        input: CephInput::NotAsked,
        step,
        ..CephView::default()
    }
}

#[test]
fn off_lets_everything_through_and_says_why() {
    let view = CephView::default();
    let out = gate(&input(&view, None, &subjects()));
    assert!(out.deletions_allowed && out.first.is_empty() && out.question.is_none());
    assert_eq!(out.condition.reason, ConditionReason::NotConfigured);
    assert!(!out.condition.holds);

    let on = on(None);
    let proposed = subjects();
    let mut skipped = input(&on, None, &proposed);
    skipped.skipped = true;
    let out = gate(&skipped);
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
        let quick = CephView {
            look_every: QUICK_LOOKS,
            ..on(Some(progress))
        };
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
    let mut settled = input(&view, Some(&open), &[]);
    settled.settled = true;
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
    let mut settled = input(&view, Some(&open), &[]);
    settled.settled = true;
    let out = gate(&settled);
    assert!(out.first.is_empty() && out.step.is_none());
}

#[test]
fn a_step_that_ends_hands_over_to_the_next_in_the_same_plan() {
    let open = step(&[3]);
    let next = vec![GateSubject {
        key: OsdKey::new("i", "/dev/sdb"),
        pod: Some("osd-i-sdb-y".into()),
        domain: "i".into(),
        leaving: false,
    }];
    // Not asked yet: the next step is asked about, the ended step's noout cleared meanwhile.
    let view = on(Some(StepProgress::Done));
    let mut ended = input(&view, Some(&open), &next);
    ended.settled = true;
    let out = gate(&ended);
    assert_eq!(out.question.as_deref(), Some(&next[..]));
    assert!(matches!(&out.first[..], [Action::ClearNoout { ids }] if *ids == [OsdId(3)]));
    assert_eq!((out.step, out.deletions_allowed), (None, false));
    assert_eq!(out.condition.reason, ConditionReason::Asking);

    // Ceph says go: the next step's noout is set first, the ended one's cleared last (after
    // the deletions), and the record keeps both until the next step's end.
    let view = CephView {
        input: CephInput::Answered(GateAnswer {
            keys: BTreeMap::from([(OsdKey::new("i", "/dev/sdb"), BTreeSet::from([OsdId(4)]))]),
            decision: GateDecision::Proceed {
                ids: BTreeSet::from([OsdId(4)]),
            },
            up_from: BTreeMap::from([(OsdId(4), 9)]),
            learned: BTreeMap::new(),
            noout_before: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
        }),
        ..on(Some(StepProgress::Done))
    };
    let mut ended = input(&view, Some(&open), &next);
    ended.settled = true;
    let out = gate(&ended);
    assert!(out.deletions_allowed);
    assert!(matches!(
        &out.first[..],
        [Action::RecordCephStep, Action::SetNoout { ids }] if *ids == [OsdId(4)]
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
    let mut booting = input(&view, Some(&open), &next);
    booting.settled = true;
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
    let view = CephView {
        input: CephInput::Answered(GateAnswer {
            keys: BTreeMap::from([(OsdKey::new("h", "/dev/sdb"), BTreeSet::from([OsdId(3)]))]),
            decision: GateDecision::Proceed {
                ids: BTreeSet::from([OsdId(3)]),
            },
            up_from: BTreeMap::from([(OsdId(3), 5)]),
            learned: BTreeMap::new(),
            noout_before: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
        }),
        ..on(Some(StepProgress::Booting {
            pending: vec![OsdId(3)],
        }))
    };
    let proposed = subjects();
    let mut untouched = input(&view, Some(&open), &proposed);
    untouched.untouched = true;
    untouched.now = at(1000) + UNTOUCHED_STEP_LIMIT;
    let out = gate(&untouched);
    assert!(out.deletions_allowed);
    assert!(matches!(
        &out.first[..],
        [Action::RecordCephStep, Action::SetNoout { ids }] if *ids == [OsdId(3)]
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
    let view = CephView {
        input: CephInput::Answered(GateAnswer {
            keys: BTreeMap::from([(OsdKey::new("h", "/dev/sdb"), BTreeSet::new())]),
            decision: GateDecision::Wait {
                blockers: Vec::new(),
            },
            up_from: BTreeMap::new(),
            learned: BTreeMap::new(),
            noout_before: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
        }),
        ..on(None)
    };
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
    let subject = |host: &str| GateSubject {
        key: OsdKey::new(host, "/dev/sdb"),
        pod: Some(format!("osd-{host}-sdb-x")),
        domain: host.into(),
        leaving: false,
    };
    let proposed = vec![subject("a"), subject("b"), subject("c")];
    let prefixes = domain_prefixes(&proposed);
    assert_eq!(
        prefixes.iter().map(Vec::len).collect::<Vec<_>>(),
        [3, 2, 1],
        "largest first"
    );
    let answer_for = |keys: &[&str]| CephView {
        input: CephInput::Answered(GateAnswer {
            keys: keys
                .iter()
                .map(|h| (OsdKey::new(*h, "/dev/sdb"), BTreeSet::from([OsdId(1)])))
                .collect(),
            decision: GateDecision::Proceed {
                ids: BTreeSet::from([OsdId(1)]),
            },
            up_from: BTreeMap::new(),
            learned: BTreeMap::new(),
            noout_before: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
        }),
        ..on(None)
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
    CephView {
        input: CephInput::Answered(GateAnswer {
            keys: BTreeMap::from([(
                OsdKey::new("h", "/dev/sdb"),
                ids.iter().copied().map(OsdId).collect(),
            )]),
            decision: GateDecision::Proceed {
                ids: ids.iter().copied().map(OsdId).collect(),
            },
            up_from: ids.iter().map(|&id| (OsdId(id), 5)).collect(),
            learned: BTreeMap::new(),
            noout_before: before.iter().copied().map(OsdId).collect(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
        }),
        ..on(None)
    }
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
        [Action::RecordCephStep, Action::SetNoout { ids }] if *ids == [OsdId(4)]
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
    let mut ended = input(&done, Some(&recorded), &[]);
    ended.settled = true;
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
