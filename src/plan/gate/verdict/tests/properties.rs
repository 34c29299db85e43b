//! Properties over any facts, domain and answer: `precheck` proceeds exactly when all it
//! requires holds, and the gate never proceeds unless all is well.

use super::*;
use crate::ceph::test_data::healthy_status;
use crate::ceph::{
    IdSource, KeyIds, MappedKey, OkToStop, OsdDump, OsdInfo, PgStateCount, PgStates, UnknownReason,
};
use proptest::prelude::*;

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
        require_osd_release: None,
        placement: crate::ceph::Placement::default(),
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
            CephFacts {
                status,
                osds,
                pgs,
                pgs_trail_placement: None,
            }
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
