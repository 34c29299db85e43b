//! The gate's rules one by one, without a plan around them: what the gate makes of a plan
//! (`gate`), a removal's drain (`drain`), Ceph's answers read as Proceed / Wait / Halt
//! (`precheck`, `confirm`), the order of the questions (`DomainChoice`, `after_precheck`) and
//! the conversation that asks them in turn (`conversation`).

use super::asking::{after_precheck, is_part_of_a_domain, AfterPrecheck, DomainChoice, Prechecked};
use super::drain::next_subjects;
use super::io::RefusedWhole;
use super::*;
use crate::ceph::test_data::{fixture, healthy_status, ids};
use crate::ceph::{
    parse_ok_to_stop, parse_osd_dump, parse_pg_stat, parse_status, CephFacts, IdSource, KeyIds,
    MappedKey, OkToStop, OsdDump, OsdInfo, PgStateCount, PgStates, PodRef, UnknownReason,
};
use crate::crd::StepDrain;
use crate::crd::StepOsd;
use k8s_openapi::jiff::Timestamp;
use proptest::prelude::*;

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
        domains: std::collections::BTreeMap::new(),
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
            asked_with: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
            refused_whole: None,
        }),
        ..on(Some(StepProgress::Done))
    };
    let mut ended = input(&view, Some(&open), &next);
    ended.settled = true;
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
            asked_with: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
            refused_whole: None,
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
    let view = CephView {
        input: CephInput::Answered(GateAnswer {
            keys: BTreeMap::from([(OsdKey::new("h", "/dev/sdb"), BTreeSet::new())]),
            decision: GateDecision::Wait {
                blockers: Vec::new(),
            },
            up_from: BTreeMap::new(),
            learned: BTreeMap::new(),
            noout_before: BTreeSet::new(),
            asked_with: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
            refused_whole: None,
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
    let prefixes = step_sets(&proposed);
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
            asked_with: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
            refused_whole: None,
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
            asked_with: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
            refused_whole: None,
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

// Ceph's answers read as Proceed / Wait / Halt.

fn known(key: &str, of: &[u32]) -> MappedKey {
    MappedKey {
        key: key.into(),
        pod: None,
        ids: KeyIds::Known {
            ids: ids(of),
            source: IdSource::Metadata,
        },
    }
}

/// The real 3-OSD cluster, healthy.
fn healthy() -> CephFacts {
    CephFacts {
        status: parse_status(&fixture("status_healthy")).unwrap(),
        osds: parse_osd_dump(&fixture("osd_dump_all_up")).unwrap(),
        pgs: Some(parse_pg_stat(&fixture("pg_stat_clean")).unwrap()),
    }
}

fn messages(d: &GateDecision) -> Vec<String> {
    d.blockers().iter().map(ToString::to_string).collect()
}

#[test]
fn a_healthy_cluster_proceeds_with_the_domains_ids() {
    let d = precheck(&healthy(), &[known("host-1:/dev/sdb", &[1])]);
    assert_eq!(d, GateDecision::Proceed { ids: ids(&[1]) });
    assert_eq!(d.to_string(), "ok to stop osd.1");
    let d = precheck(
        &healthy(),
        &[
            known("host-1:/dev/sdb", &[1]),
            known("host-2:/dev/sdb", &[0, 2]),
        ],
    );
    assert_eq!(
        d,
        GateDecision::Proceed {
            ids: ids(&[0, 1, 2])
        }
    );
}

#[test]
fn an_empty_domain_proceeds_with_nothing_to_stop() {
    let d = precheck(&healthy(), &[]);
    assert_eq!(d, GateDecision::Proceed { ids: ids(&[]) });
    assert_eq!(d.to_string(), "nothing to stop");
}

#[test]
fn no_quorum_waits() {
    let mut facts = healthy();
    facts.status.quorum.clear();
    let d = precheck(&facts, &[known("a", &[1])]);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(messages(&d), ["the mons have no quorum"]);
    assert_eq!(d.blockers()[0].category(), "CephUnavailable");
}

#[test]
fn no_mgr_waits_and_its_stale_pg_states_are_not_judged() {
    let mut facts = healthy();
    facts.status = parse_status(&fixture("status_mgr_down")).unwrap();
    facts.pgs = Some(parse_pg_stat(&fixture("pg_stat_peering")).unwrap());
    let d = precheck(&facts, &[known("a", &[1])]);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(
        messages(&d),
        ["no mgr is available (MGR_DOWN: no active mgr): PG states and ok-to-stop cannot be asked"]
    );
    facts.status.health_checks.clear();
    facts.pgs = None;
    assert_eq!(
        messages(&precheck(&facts, &[])),
        ["no mgr is available: PG states and ok-to-stop cannot be asked"]
    );
}

#[test]
fn pg_states_not_known_wait() {
    let mut facts = healthy();
    facts.pgs = None;
    let d = precheck(&facts, &[known("a", &[1])]);
    assert_eq!(messages(&d), ["the mgr does not know the PG states yet"]);
    facts.pgs = Some(PgStates {
        ready: false,
        ..parse_pg_stat(&fixture("pg_stat_clean")).unwrap()
    });
    let d = precheck(&facts, &[known("a", &[1])]);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(messages(&d), ["the mgr does not know the PG states yet"]);
    assert_eq!(d.blockers()[0].category(), "CephPgStatesUnknown");
}

#[test]
fn pgs_not_clean_wait_with_cephs_numbers() {
    for (pg_stat, expected) in [
        (
            "pg_stat_one_osd_down",
            "33 of 33 PGs are not active+clean: 5 active+undersized, 28 active+undersized+degraded",
        ),
        (
            "pg_stat_stale_after_stop",
            "11 of 33 PGs are not active+clean: 11 stale+active+clean",
        ),
        (
            "pg_stat_peering",
            "33 of 33 PGs are not active+clean: 33 peering",
        ),
    ] {
        let mut facts = healthy();
        facts.pgs = Some(parse_pg_stat(&fixture(pg_stat)).unwrap());
        let d = precheck(&facts, &[known("a", &[1])]);
        assert!(matches!(d, GateDecision::Wait { .. }), "{pg_stat}");
        assert_eq!(messages(&d), [expected]);
        assert_eq!(d.blockers()[0].category(), "CephPgsNotClean");
    }
}

#[test]
fn inconsistent_pg_counts_wait() {
    let mut facts = healthy();
    facts.pgs = Some(PgStates {
        ready: true,
        num_pgs: 34,
        by_state: vec![PgStateCount {
            state: "active+clean".into(),
            count: 33,
        }],
    });
    let d = precheck(&facts, &[]);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(
        messages(&d),
        ["pg stat counts 33 PGs by state but 34 in all"]
    );
}

#[test]
fn an_unknown_id_halts_and_names_the_pod_and_why() {
    let unknown = MappedKey {
        key: "node-1:/dev/sdb".into(),
        pod: Some(PodRef {
            namespace: "ceph".into(),
            name: "osd-node-1-sdb-x7k2q".into(),
            node: "node-1".into(),
        }),
        ids: KeyIds::Unknown(UnknownReason::NoEvidence {
            pod: None,
            reported_by_down: vec![],
            node: crate::ceph::NodeEvidence::NotLooked,
            unreadable_statement: None,
        }),
    };
    let d = precheck(&healthy(), &[known("a", &[0]), unknown]);
    assert!(matches!(d, GateDecision::Halt { .. }));
    assert_eq!(
        messages(&d),
        ["the OSD id of node-1:/dev/sdb (pod ceph/osd-node-1-sdb-x7k2q) is unknown: no pod runs, no OSD id is recorded for it and none is stated by annotation"]
    );
    assert_eq!(d.blockers()[0].category(), "CephOsdIdUnknown");
}

#[test]
fn an_id_not_in_the_osdmap_halts() {
    // ok-to-stop would say yes for it.
    let d = precheck(&healthy(), &[known("a", &[1, 9])]);
    assert!(matches!(d, GateDecision::Halt { .. }));
    assert_eq!(messages(&d), ["osd.9 (of a) is not in the osdmap"]);
}

#[test]
fn a_down_osd_of_the_domain_waits_while_others_of_it_are_up() {
    let mut facts = healthy();
    facts.osds = parse_osd_dump(&fixture("osd_dump_1_down")).unwrap();
    let d = precheck(&facts, &[known("host-1:/dev/sdb", &[1, 2])]);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(messages(&d), ["osd.1 (of host-1:/dev/sdb) is down"]);
    assert_eq!(d.blockers()[0].category(), "CephOsdDown");
}

#[test]
fn a_domain_already_down_proceeds_without_clean_pgs_but_not_without_a_mgr() {
    let mut facts = healthy();
    facts.osds = parse_osd_dump(&fixture("osd_dump_1_down")).unwrap();
    let degraded = PgStates {
        ready: true,
        num_pgs: 33,
        by_state: vec![PgStateCount {
            state: "active+undersized+degraded".into(),
            count: 33,
        }],
    };
    facts.pgs = Some(degraded);
    let domain = [known("host-1:/dev/sdb", &[1])];
    assert_eq!(
        precheck(&facts, &domain),
        GateDecision::Proceed { ids: ids(&[1]) }
    );
    facts.status.mgr_available = false;
    assert!(matches!(
        precheck(&facts, &domain),
        GateDecision::Wait { .. }
    ));
}

#[test]
fn another_osd_down_and_in_waits_down_and_out_does_not() {
    let mut facts = healthy();
    facts.osds = parse_osd_dump(&fixture("osd_dump_1_down")).unwrap();
    let d = precheck(&facts, &[known("host-2:/dev/sdb", &[2])]);
    assert_eq!(messages(&d), ["osd.1 is down and still in"]);
    // Its PGs degraded too: the condition names the down OSD, the cause.
    let mut degraded = facts.clone();
    degraded.pgs = Some(parse_pg_stat(&fixture("pg_stat_one_osd_down")).unwrap());
    let d = precheck(&degraded, &[known("host-2:/dev/sdb", &[2])]);
    assert_eq!(d.blockers()[0].category(), "CephOsdDown");
    assert_eq!(d.blockers().len(), 2);
    facts.osds.osds.get_mut(&OsdId(1)).unwrap().is_in = false;
    assert_eq!(
        precheck(&facts, &[known("host-2:/dev/sdb", &[2])]),
        GateDecision::Proceed { ids: ids(&[2]) }
    );
}

#[test]
fn every_blocker_is_listed_halting_first() {
    let mut facts = healthy();
    facts.osds = parse_osd_dump(&fixture("osd_dump_1_down")).unwrap();
    facts.pgs = Some(parse_pg_stat(&fixture("pg_stat_one_osd_down")).unwrap());
    let d = precheck(&facts, &[known("a", &[0]), known("b", &[7])]);
    assert!(matches!(d, GateDecision::Halt { .. }));
    assert_eq!(
        messages(&d),
        [
            "osd.7 (of b) is not in the osdmap",
            "osd.1 is down and still in",
            "33 of 33 PGs are not active+clean: 5 active+undersized, 28 active+undersized+degraded",
        ]
    );
    assert_eq!(
        d.to_string(),
        "osd.7 (of b) is not in the osdmap; osd.1 is down and still in; 33 of 33 PGs are not active+clean: 5 active+undersized, 28 active+undersized+degraded"
    );
}

#[test]
fn confirm_proceeds_when_ceph_says_ok_for_all_asked() {
    let answer = parse_ok_to_stop(&fixture("ok_to_stop_one_osd")).unwrap();
    assert_eq!(
        confirm(&ids(&[0]), &answer),
        GateDecision::Proceed { ids: ids(&[0]) }
    );
}

#[test]
fn confirm_waits_when_ceph_says_no_quoting_its_numbers() {
    let answer = parse_ok_to_stop(&fixture("ok_to_stop_all_osds")).unwrap();
    let d = confirm(&ids(&[0, 1, 2]), &answer);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(
        messages(&d),
        ["Ceph says stopping osd.0, osd.1, osd.2 is not safe: 33 PGs not ok, 0 ok; 33 would become inactive (1.0, 1.1, 1.2, 1.3, 1.4, …)"]
    );
    assert_eq!(d.blockers()[0].category(), "CephNotOkToStop");

    let answer = OkToStop {
        ok_to_stop: false,
        osds: ids(&[3]),
        num_ok_pgs: 10,
        num_not_ok_pgs: 3,
        bad_already_inactive: vec!["2.1".into()],
        bad_become_inactive: vec!["2.4".into(), "2.7".into()],
        bad_no_pool: vec!["9.0".into()],
        ..OkToStop::default()
    };
    assert_eq!(
        messages(&confirm(&ids(&[3]), &answer)),
        ["Ceph says stopping osd.3 is not safe: 3 PGs not ok, 10 ok; 2 would become inactive (2.4, 2.7); 1 are already inactive (2.1); 1 have no pool (9.0)"]
    );
}

#[test]
fn confirm_waits_when_ceph_does_not_know_pg_states() {
    let answer = parse_ok_to_stop(&fixture("ok_to_stop_after_mgr_start")).unwrap();
    let d = confirm(&ids(&[0]), &answer);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(
        messages(&d),
        ["Ceph cannot tell whether stopping osd.0 is safe: 33 PGs have an unknown state"]
    );
}

#[test]
fn confirm_halts_when_the_answer_is_about_other_osds() {
    let answer = parse_ok_to_stop(&fixture("ok_to_stop_one_osd")).unwrap();
    let d = confirm(&ids(&[0, 1]), &answer);
    assert!(matches!(d, GateDecision::Halt { .. }));
    assert_eq!(
        messages(&d),
        ["ok-to-stop was asked about osd.0, osd.1 but answered about osd.0"]
    );
}

#[test]
fn severities_and_categories_of_every_blocker() {
    let answer = OkToStop::default();
    let all = [
        (Blocker::NoQuorum, Severity::Wait),
        (
            Blocker::MgrUnavailable { health_check: None },
            Severity::Wait,
        ),
        (Blocker::PgStatesNotKnown, Severity::Wait),
        (
            Blocker::PgCountsInconsistent {
                counted: 1,
                num_pgs: 2,
            },
            Severity::Wait,
        ),
        (
            Blocker::PgsNotClean {
                not_clean: 1,
                num_pgs: 2,
                states: "1 peering".into(),
            },
            Severity::Wait,
        ),
        (Blocker::OtherOsdDown { id: OsdId(1) }, Severity::Wait),
        (
            Blocker::IdUnknown {
                key: "a".into(),
                pod: None,
                reason: UnknownReason::IdSharedWith {
                    id: OsdId(1),
                    other_key: "b".into(),
                },
            },
            Severity::Halt,
        ),
        (
            Blocker::OsdNotInOsdmap {
                id: OsdId(1),
                key: "a".into(),
            },
            Severity::Halt,
        ),
        (
            Blocker::OsdDown {
                id: OsdId(1),
                key: "a".into(),
            },
            Severity::Wait,
        ),
        (
            Blocker::NotOkToStop {
                answer: answer.clone(),
            },
            Severity::Wait,
        ),
        (Blocker::OkToStopNotKnown { answer }, Severity::Wait),
        (
            Blocker::OkToStopIncomplete {
                asked: ids(&[1]),
                answered: ids(&[]),
            },
            Severity::Halt,
        ),
    ];
    for (b, severity) in all {
        assert_eq!(b.severity(), severity, "{b}");
        assert!(b.category().starts_with("Ceph"), "{b}");
        assert!(!b.to_string().is_empty());
    }
}

// ---------------------------------------------------------------------------------------------
// Properties over any facts, domain and answer.

const STATES: [&str; 8] = [
    "active+clean",
    "active+clean+scrubbing+deep",
    "stale+active+clean",
    "active+undersized+degraded",
    "peering",
    "unknown",
    "active",
    "active+clean+remapped",
];

fn arb_pgs() -> impl Strategy<Value = Option<PgStates>> {
    proptest::option::weighted(
        0.9,
        (
            proptest::bool::weighted(0.9),
            proptest::collection::vec(
                (prop_oneof![3 => 0..2usize, 1 => 0..STATES.len()], 0..40u64),
                0..4,
            ),
            prop_oneof![4 => Just(0i64), 1 => -2..3i64],
        )
            .prop_map(|(ready, states, skew)| {
                let by_state: Vec<PgStateCount> = states
                    .into_iter()
                    .map(|(i, count)| PgStateCount {
                        state: STATES[i].to_owned(),
                        count,
                    })
                    .collect();
                let counted: u64 = by_state.iter().map(|s| s.count).sum();
                PgStates {
                    ready,
                    num_pgs: counted.saturating_add_signed(skew),
                    by_state,
                }
            }),
    )
}

fn arb_osds() -> impl Strategy<Value = OsdDump> {
    proptest::collection::vec(
        proptest::option::weighted(
            0.9,
            (
                proptest::bool::weighted(0.9),
                proptest::bool::weighted(0.9),
                1..50u64,
            ),
        ),
        9,
    )
    .prop_map(|osds| OsdDump {
        epoch: 60,
        osds: (0..)
            .zip(osds)
            .filter_map(|(id, osd)| {
                let (up, is_in, up_from) = osd?;
                let info = OsdInfo {
                    id: OsdId(id),
                    up,
                    is_in,
                    up_from,
                    noout: false,
                    state: vec!["exists".into()],
                };
                Some((OsdId(id), info))
            })
            .collect(),
    })
}

fn arb_facts() -> impl Strategy<Value = CephFacts> {
    (
        proptest::bool::weighted(0.9),
        proptest::bool::weighted(0.9),
        arb_osds(),
        arb_pgs(),
    )
        .prop_map(|(quorum, mgr_available, osds, pgs)| {
            let mut status = healthy_status();
            if !quorum {
                status.quorum.clear();
            }
            status.mgr_available = mgr_available;
            CephFacts { status, osds, pgs }
        })
}

fn arb_domain() -> impl Strategy<Value = Vec<MappedKey>> {
    proptest::collection::vec(
        prop_oneof![
            8 => proptest::collection::btree_set(0..10u32, 1..3).prop_map(|ids| KeyIds::Known {
                ids: ids.into_iter().map(OsdId).collect(),
                source: IdSource::Recorded,
            }),
            1 => Just(KeyIds::Unknown(UnknownReason::NoEvidence {
                pod: None,
                reported_by_down: vec![],
                node: crate::ceph::NodeEvidence::NotLooked,
                unreadable_statement: None,
            })),
        ],
        0..3,
    )
    .prop_map(|keys| {
        keys.into_iter()
            .enumerate()
            .map(|(i, ids)| MappedKey {
                key: format!("host-{i}:/dev/sdb"),
                pod: None,
                ids,
            })
            .collect()
    })
}

fn arb_answer() -> impl Strategy<Value = (bool, Option<BTreeSet<u32>>, bool)> {
    (
        any::<bool>(),
        proptest::option::of(proptest::collection::btree_set(0..10u32, 0..4)),
        any::<bool>(),
    )
}

/// Everything `precheck` requires, spelled out independently.
fn safe_to_ask(facts: &CephFacts, domain: &[MappedKey]) -> bool {
    let mut ids = BTreeSet::new();
    for m in domain {
        match &m.ids {
            KeyIds::Known { ids: known, .. } => ids.extend(known.iter().copied()),
            KeyIds::Unknown(_) => return false,
        }
    }
    let cluster_reachable = !facts.status.quorum.is_empty() && facts.status.mgr_available;
    let all_down = !ids.is_empty()
        && ids
            .iter()
            .all(|id| facts.osds.osds.get(id).is_some_and(|o| !o.up));
    if all_down {
        return cluster_reachable;
    }
    cluster_reachable
        && facts.pgs.as_ref().is_some_and(PgStates::all_clean)
        && ids
            .iter()
            .all(|id| facts.osds.osds.get(id).is_some_and(|o| o.up))
        && facts
            .osds
            .osds
            .values()
            .all(|o| o.up || !o.is_in || ids.contains(&o.id))
}

#[test]
fn the_generators_often_reach_proceed() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (arb_facts(), arb_domain());
    let proceeds = (0..2000)
        .filter(|_| {
            let (facts, domain) = strategy.new_tree(&mut runner).unwrap().current();
            matches!(precheck(&facts, &domain), GateDecision::Proceed { .. })
        })
        .count();
    assert!(proceeds >= 150, "only {proceeds} of 2000 proceed");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn precheck_proceeds_exactly_when_safe_to_ask(facts in arb_facts(), domain in arb_domain()) {
        let decision = precheck(&facts, &domain);
        let _ = decision.to_string();
        prop_assert_eq!(matches!(decision, GateDecision::Proceed { .. }), safe_to_ask(&facts, &domain));
        match &decision {
            GateDecision::Proceed { ids } => {
                let all: BTreeSet<OsdId> = domain
                    .iter()
                    .flat_map(|m| match &m.ids {
                        KeyIds::Known { ids, .. } => ids.clone(),
                        KeyIds::Unknown(_) => BTreeSet::new(),
                    })
                    .collect();
                prop_assert_eq!(ids, &all);
            }
            GateDecision::Wait { blockers } => {
                prop_assert!(!blockers.is_empty());
                prop_assert!(blockers.iter().all(|b| b.severity() == Severity::Wait));
            }
            GateDecision::Halt { blockers } => {
                prop_assert_eq!(blockers[0].severity(), Severity::Halt);
                let first_wait = blockers.iter().position(|b| b.severity() == Severity::Wait);
                if let Some(i) = first_wait {
                    prop_assert!(blockers[i..].iter().all(|b| b.severity() == Severity::Wait));
                }
            }
        }
    }

    #[test]
    fn the_gate_never_proceeds_unless_all_is_well(
        facts in arb_facts(),
        domain in arb_domain(),
        (ok, answered, unknown) in arb_answer(),
    ) {
        let GateDecision::Proceed { ids } = precheck(&facts, &domain) else {
            return Ok(());
        };
        let answer = OkToStop {
            ok_to_stop: ok,
            osds: answered.map_or_else(|| ids.clone(), |a| a.into_iter().map(OsdId).collect()),
            unknown_pgs: if unknown { vec!["1.0".into()] } else { vec![] },
            ..OkToStop::default()
        };
        let decision = confirm(&ids, &answer);
        let _ = decision.to_string();
        if let GateDecision::Proceed { ids: to_stop } = decision {
            prop_assert_eq!(&to_stop, &ids);
            prop_assert!(answer.ok_to_stop);
            prop_assert!(ids.is_subset(&answer.osds));
            prop_assert!(!facts.status.quorum.is_empty());
            prop_assert!(facts.status.mgr_available);
            let all_known = domain.iter().all(|m| matches!(m.ids, KeyIds::Known { .. }));
            prop_assert!(all_known);
            // Either the domain is down already (it stops nothing more), or the PGs are clean
            // and every OSD to stop is up.
            let all_down = ids.iter().all(|id| facts.osds.osds.get(id).is_some_and(|o| !o.up));
            if !all_down {
                prop_assert!(facts.pgs.as_ref().is_some_and(PgStates::all_clean));
                for id in &ids {
                    prop_assert!(facts.osds.osds.get(id).is_some_and(|o| o.up));
                }
            }
        } else {
            prop_assert!(!answer.ok_to_stop || !ids.is_subset(&answer.osds));
        }
    }
}

// The order of the questions.

#[test]
fn domains_are_asked_about_all_together_then_fewer_until_ceph_lets_a_set_go() {
    let subject = |host: &str| GateSubject {
        key: OsdKey::new(host, "/dev/sdb"),
        pod: None,
        domain: host.into(),
        leaving: false,
    };
    let hosts = |set: &[GateSubject]| set.iter().map(|s| s.domain.clone()).collect::<Vec<_>>();
    let proposed = vec![subject("a"), subject("b"), subject("c")];
    let refused = GateDecision::no_answer(&"not now");
    let mut choice = DomainChoice::new(&proposed);
    assert_eq!(hosts(&choice.next(None).expect("all")), ["a", "b", "c"]);
    assert_eq!(
        hosts(&choice.next(Some(&refused)).expect("two")),
        ["a", "b"]
    );
    let proceed = GateDecision::Proceed { ids: ids(&[1, 2]) };
    assert!(choice.next(Some(&proceed)).is_none(), "a set Ceph let go");

    // Refused down to the first alone: its answer stands.
    let mut choice = DomainChoice::new(&proposed);
    let mut asked = Vec::new();
    let mut last = None;
    while let Some(set) = choice.next(last.as_ref()) {
        asked.push(set.len());
        last = Some(refused.clone());
    }
    assert_eq!(asked, [3, 2, 1]);
    assert!(
        DomainChoice::new(&[]).next(None).is_none(),
        "nothing proposed"
    );
}

#[test]
fn ok_to_stop_confirms_a_passed_precheck_of_up_osds_only() {
    let domain = [known("host-1:/dev/sdb", &[1])];
    let up = after_precheck(&healthy(), &domain, false);
    assert_eq!(up.next, AfterPrecheck::AskOkToStop(ids(&[1])));
    assert_eq!(up.up_from.len(), 1, "{up:?}");
    assert!(up.up_from.contains_key(&OsdId(1)));
    // A drain stops nothing: no ok-to-stop.
    let drain = after_precheck(&healthy(), &domain, true);
    assert_eq!(
        drain.next,
        AfterPrecheck::Decided(GateDecision::Proceed { ids: ids(&[1]) })
    );
    assert_eq!(drain.up_from, up.up_from);
    // Every id down already: nothing up to stop.
    let mut down = healthy();
    down.osds = parse_osd_dump(&fixture("osd_dump_1_down")).unwrap();
    assert_eq!(
        after_precheck(&down, &domain, false).next,
        AfterPrecheck::Decided(GateDecision::Proceed { ids: ids(&[1]) })
    );
    // A refused precheck, or nothing to stop, is the verdict, without up_from.
    let mut no_quorum = healthy();
    no_quorum.status.quorum.clear();
    let refused = after_precheck(&no_quorum, &domain, false);
    assert!(
        matches!(
            &refused.next,
            AfterPrecheck::Decided(GateDecision::Wait { .. })
        ),
        "{refused:?}"
    );
    assert!(refused.up_from.is_empty());
    assert_eq!(
        after_precheck(&healthy(), &[], false),
        Prechecked {
            next: AfterPrecheck::Decided(GateDecision::Proceed { ids: ids(&[]) }),
            up_from: BTreeMap::new(),
        }
    );
}

// The conversation: the questions asked in turn and the answer they reach.

fn host_subject(host: &str, leaving: bool) -> GateSubject {
    GateSubject {
        key: OsdKey::new(host, "/dev/sdb"),
        pod: Some(format!("osd-{host}-sdb")),
        domain: host.into(),
        leaving,
    }
}

fn reply(ok: bool, of: &[u32]) -> OkToStop {
    OkToStop {
        ok_to_stop: ok,
        osds: ids(of),
        num_not_ok_pgs: if ok { 0 } else { 8 },
        ..OkToStop::default()
    }
}

fn asked(turn: conversation::Turn) -> conversation::Asking {
    match turn {
        conversation::Turn::Ask(asking) => asking,
        conversation::Turn::Answered(answered) => panic!("answered without asking: {answered:?}"),
    }
}

fn answered(turn: conversation::Turn) -> conversation::Answered {
    match turn {
        conversation::Turn::Answered(answered) => answered,
        conversation::Turn::Ask(asking) => panic!("asks again: {:?}", asking.ids()),
    }
}

#[test]
fn a_conversation_asks_ok_to_stop_for_exactly_the_domains_ids_and_proceeds_on_its_yes() {
    let question = [host_subject("host-1", false)];
    let mut facts = healthy();
    facts.osds.osds.get_mut(&OsdId(1)).expect("osd.1").noout = true;
    let mapped = vec![
        known("host-1:/dev/sdb", &[1]),
        known("host-2:/dev/sdb", &[2]),
    ];
    let runs = [OsdKey::new("host-2", "/dev/sdb")];
    let unreadable = BTreeMap::from([("osd-host-3-sdb".to_owned(), "three".to_owned())]);
    let turn = conversation::start(&question, &runs, facts, mapped, unreadable.clone());
    let asking = asked(turn);
    assert_eq!(asking.ids(), &ids(&[1]));
    let done = answered(asking.heard(Ok(&reply(true, &[1]))));
    let answer = done.answer;
    assert_eq!(answer.decision, GateDecision::Proceed { ids: ids(&[1]) });
    assert_eq!(
        answer.keys,
        BTreeMap::from([(OsdKey::new("host-1", "/dev/sdb"), ids(&[1]))])
    );
    assert_eq!(
        answer.up_from.keys().copied().collect::<Vec<_>>(),
        [OsdId(1)]
    );
    assert_eq!(answer.noout_before, ids(&[1]), "the admin's noout");
    assert!(answer.out.is_empty(), "{answer:?}");
    // Learnt from metadata: the asked key and the other key the operator runs.
    assert_eq!(
        answer
            .learned
            .keys()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["host-1:/dev/sdb", "host-2:/dev/sdb"]
    );
    assert_eq!(answer.unreadable_statements, unreadable);
    assert!(done.refused_together.is_empty());
}

#[test]
fn a_conversation_asks_about_fewer_domains_when_ceph_refuses_them_together() {
    let question = [host_subject("host-1", false), host_subject("host-2", false)];
    let mapped = vec![
        known("host-1:/dev/sdb", &[1]),
        known("host-2:/dev/sdb", &[2]),
    ];
    let turn = conversation::start(&question, &[], healthy(), mapped, BTreeMap::new());
    let both = asked(turn);
    assert_eq!(both.ids(), &ids(&[1, 2]));
    let first = asked(both.heard(Ok(&reply(false, &[1, 2]))));
    assert_eq!(first.ids(), &ids(&[1]), "the first domain alone");
    let done = answered(first.heard(Ok(&reply(true, &[1]))));
    assert_eq!(
        done.answer.decision,
        GateDecision::Proceed { ids: ids(&[1]) }
    );
    assert_eq!(
        done.answer
            .keys
            .keys()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["host-1:/dev/sdb"],
        "the step is the first domain"
    );
    assert_eq!(
        done.refused_together.len(),
        1,
        "{:?}",
        done.refused_together
    );
    assert_eq!(done.refused_together[0].domains, 2);
    assert!(matches!(
        done.refused_together[0].decision,
        GateDecision::Wait { .. }
    ));

    // Refused alone too: Ceph's answer about the first domain stands.
    let mapped = vec![
        known("host-1:/dev/sdb", &[1]),
        known("host-2:/dev/sdb", &[2]),
    ];
    let both = asked(conversation::start(
        &question,
        &[],
        healthy(),
        mapped,
        BTreeMap::new(),
    ));
    let first = asked(both.heard(Ok(&reply(false, &[1, 2]))));
    let done = answered(first.heard(Ok(&reply(false, &[1]))));
    assert!(
        matches!(done.answer.decision, GateDecision::Wait { .. }),
        "{:?}",
        done.answer.decision
    );
    assert_eq!(done.answer.keys.len(), 1);
}

#[test]
fn no_reply_is_a_wait_that_says_why() {
    let question = [host_subject("host-1", false)];
    let mapped = vec![known("host-1:/dev/sdb", &[1])];
    let asking = asked(conversation::start(
        &question,
        &[],
        healthy(),
        mapped,
        BTreeMap::new(),
    ));
    let done = answered(asking.heard(Err(&"ceph timed out after 5s")));
    assert_eq!(
        messages(&done.answer.decision),
        [Blocker::NoAnswer {
            error: "ceph timed out after 5s".into()
        }
        .to_string()]
    );
    assert!(done.answer.noout_before.is_empty() && done.answer.out.is_empty());

    let unanswered = conversation::unanswered(&question, BTreeMap::new(), &"no mon answered");
    assert_eq!(
        unanswered.keys,
        BTreeMap::from([(OsdKey::new("host-1", "/dev/sdb"), BTreeSet::new())])
    );
    assert_eq!(
        unanswered.decision,
        GateDecision::no_answer(&"no mon answered")
    );
}

#[test]
fn a_drain_is_answered_without_ok_to_stop_and_says_which_ids_are_out() {
    let question = [host_subject("host-1", true)];
    let mut facts = healthy();
    facts.osds.osds.get_mut(&OsdId(1)).expect("osd.1").is_in = false;
    let mapped = vec![known("host-1:/dev/sdb", &[1])];
    let done = answered(conversation::start(
        &question,
        &[],
        facts,
        mapped,
        BTreeMap::new(),
    ));
    assert_eq!(
        done.answer.decision,
        GateDecision::Proceed { ids: ids(&[1]) }
    );
    assert_eq!(done.answer.out, ids(&[1]));

    // A key Ceph cannot map is refused by the precheck: nothing is asked.
    let question = [host_subject("host-1", false)];
    let unmapped = vec![MappedKey {
        key: "host-1:/dev/sdb".into(),
        pod: None,
        ids: KeyIds::Unknown(UnknownReason::NoEvidence {
            pod: None,
            reported_by_down: vec![],
            node: crate::ceph::NodeEvidence::NotLooked,
            unreadable_statement: None,
        }),
    }];
    let done = answered(conversation::start(
        &question,
        &[],
        healthy(),
        unmapped,
        BTreeMap::new(),
    ));
    assert!(
        matches!(done.answer.decision, GateDecision::Halt { .. }),
        "{:?}",
        done.answer.decision
    );
}

// A removal's drain.

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
        domains: std::collections::BTreeMap::new(),
    }
}

fn drain_input<'a>(view: &'a CephView, open: &'a CephStep, returned: &[&str]) -> GateInput<'a> {
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
            decision: crate::plan::gate::GateDecision::Proceed {
                ids: BTreeSet::new(),
            },
            up_from: BTreeMap::new(),
            learned: BTreeMap::new(),
            noout_before: BTreeSet::new(),
            asked_with: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
            refused_whole: None,
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

fn rack_subject(host: &str, rack: &str) -> GateSubject {
    GateSubject {
        domain: rack.into(),
        ..host_subject(host, false)
    }
}

#[test]
fn a_failure_domain_shrinks_by_hosts_and_never_reaches_into_the_next() {
    let proposed = [
        rack_subject("a", "r1"),
        rack_subject("b", "r1"),
        rack_subject("c", "r1"),
        rack_subject("d", "r2"),
    ];
    let hosts = |set: &Vec<GateSubject>| set.iter().map(|s| s.key.host.clone()).collect::<Vec<_>>();
    let sets: Vec<Vec<String>> = step_sets(&proposed).iter().map(hosts).collect();
    assert_eq!(
        sets,
        [
            vec!["a", "b", "c", "d"],
            vec!["a", "b", "c"],
            vec!["a", "b"],
            vec!["a"]
        ]
    );
    assert!(is_part_of_a_domain(&proposed[..2], &proposed));
    assert!(!is_part_of_a_domain(&proposed[..3], &proposed), "all of r1");
    assert!(!is_part_of_a_domain(&proposed, &proposed));
    // One host per domain (updateDomain: Host): never split below a domain.
    let by_host = [host_subject("a", false), host_subject("b", false)];
    assert_eq!(step_sets(&by_host).len(), 2);
    // The OSDs of one host go together, whatever the domain.
    let two_disks = [
        rack_subject("a", "r1"),
        GateSubject {
            key: OsdKey::new("a", "/dev/sdc"),
            ..rack_subject("a", "r1")
        },
    ];
    assert_eq!(step_sets(&two_disks).len(), 1);
}

#[test]
fn a_conversation_asks_about_part_of_a_failure_domain_ceph_refuses_whole() {
    let question = [rack_subject("host-1", "r1"), rack_subject("host-2", "r1")];
    let mapped = vec![
        known("host-1:/dev/sdb", &[1]),
        known("host-2:/dev/sdb", &[2]),
    ];
    let turn = conversation::start(&question, &[], healthy(), mapped, BTreeMap::new());
    let whole = asked(turn);
    assert_eq!(whole.ids(), &ids(&[1, 2]), "the whole rack first");
    let part = asked(whole.heard(Ok(&reply(false, &[1, 2]))));
    assert_eq!(part.ids(), &ids(&[1]), "then its first host");
    let done = answered(part.heard(Ok(&reply(true, &[1]))));
    assert_eq!(
        done.answer.decision,
        GateDecision::Proceed { ids: ids(&[1]) }
    );
    let refused = done.answer.refused_whole.expect("the rack's refusal kept");
    assert_eq!(refused.domain, "r1");
    assert!(
        refused.decision.to_string().contains("8 PGs not ok"),
        "Ceph's numbers: {}",
        refused.decision
    );
    assert!(done.refused_together.is_empty(), "one domain, not several");
}

#[test]
fn ceph_letting_part_of_a_failure_domain_go_starts_a_step_on_that_part_only() {
    let proposed = vec![
        rack_subject("a", "r1"),
        rack_subject("b", "r1"),
        rack_subject("c", "r1"),
        rack_subject("d", "r2"),
    ];
    let refusal = GateDecision::Wait {
        blockers: vec![Blocker::NotOkToStop {
            answer: reply(false, &[1, 2, 3]),
        }],
    };
    let view = CephView {
        input: CephInput::Answered(GateAnswer {
            keys: ["a", "b"]
                .iter()
                .zip([1, 2])
                .map(|(h, id)| (OsdKey::new(*h, "/dev/sdb"), BTreeSet::from([OsdId(id)])))
                .collect(),
            decision: GateDecision::Proceed { ids: ids(&[1, 2]) },
            refused_whole: Some(Box::new(RefusedWhole {
                domain: "r1".into(),
                decision: refusal,
            })),
            ..GateAnswer::default()
        }),
        ..on(None)
    };
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
}

mod asked_together;
