//! Ceph's answers read as Proceed / Wait / Halt: a look at the cluster (`precheck`), an
//! `ok-to-stop` answer (`confirm`), and the severity and category of every blocker.

use super::*;
use crate::ceph::test_data::{fixture, ids};
use crate::ceph::{
    parse_ok_to_stop, parse_osd_dump, parse_pg_stat, KeyIds, MappedKey, OkToStop, PgStateCount,
    UnknownReason,
};
use crate::testing::gate_inputs::{known, CephFactsBuilder};

fn messages(d: &GateDecision) -> Vec<String> {
    d.blockers().iter().map(ToString::to_string).collect()
}

#[test]
fn a_healthy_cluster_proceeds_with_the_domains_ids() {
    let d = precheck(
        &CephFactsBuilder::healthy().build(),
        &[known("host-1:/dev/sdb", &[1])],
    );
    assert_eq!(d, GateDecision::Proceed { ids: ids(&[1]) });
    assert_eq!(d.to_string(), "ok to stop osd.1");
    let d = precheck(
        &CephFactsBuilder::healthy().build(),
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
    let d = precheck(&CephFactsBuilder::healthy().build(), &[]);
    assert_eq!(d, GateDecision::Proceed { ids: ids(&[]) });
    assert_eq!(d.to_string(), "nothing to stop");
}

#[test]
fn no_quorum_waits() {
    let mut facts = CephFactsBuilder::healthy().build();
    facts.status.quorum.clear();
    let d = precheck(&facts, &[known("a", &[1])]);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(messages(&d), ["the mons have no quorum"]);
    assert_eq!(d.blockers()[0].category(), "CephUnavailable");
}

#[test]
fn no_mgr_waits_and_its_stale_pg_states_are_not_judged() {
    let mut facts = CephFactsBuilder::healthy().pgs("pg_stat_peering").build();
    facts.status = parse_status(&fixture("status_mgr_down")).unwrap();
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
    let mut facts = CephFactsBuilder::healthy().build();
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
        let facts = CephFactsBuilder::healthy().pgs(pg_stat).build();
        let d = precheck(&facts, &[known("a", &[1])]);
        assert!(matches!(d, GateDecision::Wait { .. }), "{pg_stat}");
        assert_eq!(messages(&d), [expected]);
        assert_eq!(d.blockers()[0].category(), "CephPgsNotClean");
    }
}

#[test]
fn inconsistent_pg_counts_wait() {
    let mut facts = CephFactsBuilder::healthy().build();
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
    let d = precheck(
        &CephFactsBuilder::healthy().build(),
        &[known("a", &[0]), unknown],
    );
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
    let d = precheck(&CephFactsBuilder::healthy().build(), &[known("a", &[1, 9])]);
    assert!(matches!(d, GateDecision::Halt { .. }));
    assert_eq!(messages(&d), ["osd.9 (of a) is not in the osdmap"]);
}

#[test]
fn a_down_osd_of_the_domain_waits_while_others_of_it_are_up() {
    let mut facts = CephFactsBuilder::healthy().build();
    facts.osds = parse_osd_dump(&fixture("osd_dump_1_down")).unwrap();
    let d = precheck(&facts, &[known("host-1:/dev/sdb", &[1, 2])]);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(messages(&d), ["osd.1 (of host-1:/dev/sdb) is down"]);
    assert_eq!(d.blockers()[0].category(), "CephOsdDown");
}

#[test]
fn a_domain_already_down_proceeds_without_clean_pgs_but_not_without_a_mgr() {
    let mut facts = CephFactsBuilder::healthy().build();
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
    let mut facts = CephFactsBuilder::healthy().build();
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
    let facts = CephFactsBuilder::healthy()
        .osds("osd_dump_1_down")
        .pgs("pg_stat_one_osd_down")
        .build();
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

#[test]
fn clean_pg_states_that_may_trail_a_placement_change_wait() {
    let mut facts = CephFactsBuilder::healthy().build();
    facts.pgs_trail_placement = Some(std::time::Duration::from_millis(4200));
    let d = precheck(&facts, &[known("a", &[1])]);
    assert!(matches!(d, GateDecision::Wait { .. }));
    assert_eq!(
        messages(&d),
        [
            "CRUSH, an OSD's in or weight, or the upmaps changed just now: the PG states may not \
          show the remapping yet (trusted in 5s)"
        ]
    );
    assert_eq!(d.blockers()[0].category(), "CephPgsNotClean");
    // PGs already not clean say so, and only that.
    let mut facts = CephFactsBuilder::healthy().pgs("pg_stat_peering").build();
    facts.pgs_trail_placement = Some(std::time::Duration::from_secs(5));
    let d = precheck(&facts, &[known("a", &[1])]);
    assert_eq!(
        messages(&d),
        ["33 of 33 PGs are not active+clean: 33 peering"]
    );
}
