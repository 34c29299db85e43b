use super::*;
use crate::ceph::answers::{
    parse_ok_to_stop, parse_osd_dump, parse_pg_stat, parse_status, OsdDump, OsdInfo, PgStateCount,
};
use crate::ceph::key_ids::IdSource;
use crate::ceph::test_data::{fixture, healthy_status, ids};
use proptest::prelude::*;

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
