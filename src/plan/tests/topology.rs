//! Planner tests of `updateDomain: Topology`: whole failure domains replaced together, in
//! order of their names and hosts within them; a host in no known failure domain halts every
//! step, named; the budget counts the same domains.

use super::*;
use crate::crd::topology::TopologySpec;
use crate::plan::topology::{CrushPlacement, TopologyView};

const HOSTS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const ZONE: &str = "topology.kubernetes.io/zone";

/// Hosts a–f under `zone` label values: a, d in z1; b, e in z2; c, f in z3.
fn zones() -> TopologyView {
    TopologyView {
        crush: None,
        labels: HOSTS
            .iter()
            .enumerate()
            .map(|(i, h)| ((*h).to_owned(), Some(format!("z{}", i % 3 + 1))))
            .collect(),
    }
}

fn zones_cr(marker: &str) -> CephOsd {
    let mut cr = cr(
        UpdateDomain::Topology,
        &HOSTS,
        &["/dev/sdb", "/dev/sdc"],
        marker,
    );
    cr.spec.topology = Some(TopologySpec {
        bucket_type: "zone".into(),
        topology_key: Some(ZONE.into()),
    });
    cr
}

fn cluster_on(cr: &CephOsd, topology: TopologyView) -> Cluster {
    let mut cluster = Cluster {
        topology,
        ..Cluster::default()
    };
    cluster.settle(cr);
    cluster
}

fn hosts_of(plan: &Plan) -> BTreeSet<String> {
    plan.replacing.iter().map(|k| k.host.clone()).collect()
}

#[test]
fn a_rollout_replaces_whole_failure_domains_in_order() {
    let mut cluster = cluster_on(&zones_cr("a"), zones());
    let next = zones_cr("b");
    let plans = cluster.settle(&next);
    let steps: Vec<BTreeSet<String>> = (plans.iter())
        .map(hosts_of)
        .filter(|h| !h.is_empty())
        .collect();
    let set = |hosts: &[&str]| {
        hosts
            .iter()
            .map(|h| (*h).to_owned())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        steps,
        [set(&["a", "d"]), set(&["b", "e"]), set(&["c", "f"])]
    );
    let starts: Vec<String> = plans.iter().flat_map(|p| p.starting.clone()).collect();
    assert_eq!(starts, ["z1", "z2", "z3"]);
    // Each step takes all four OSDs of its zone at once.
    assert!(plans
        .iter()
        .all(|p| p.replacing.is_empty() || p.replacing.len() == 4));
    let status = cluster.status.clone().expect("status");
    let domains = status.failure_domains.expect("failureDomains");
    assert_eq!(domains.bucket_type.as_deref(), Some("zone"));
    assert_eq!(domains.buckets["z2"], ["b", "e"]);
    assert!(domains.unplaced.is_empty());
    assert_eq!(status.updated, 12);
}

#[test]
fn max_unavailable_counts_failure_domains() {
    let mut cluster = cluster_on(&zones_cr("a"), zones());
    let mut next = zones_cr("b");
    next.spec.max_unavailable = Some(2);
    let plan = cluster.reconcile(&next);
    assert_eq!(plan.starting, ["z1", "z2"]);
    assert_eq!(hosts_of(&plan).len(), 4);
}

#[test]
fn a_host_in_no_known_failure_domain_halts_every_step_naming_it() {
    let mut cluster = cluster_on(&zones_cr("a"), zones());
    cluster.topology.labels.insert("e".into(), None);
    let plan = cluster.reconcile(&zones_cr("b"));
    assert!(plan.replacing.is_empty(), "{:?}", plan.replacing);
    let halted = plan.halted.clone().expect("halted");
    assert!(
        halted.starts_with("host e is in no known failure domain: its Node has no label"),
        "{halted}"
    );
    assert_says(
        &plan,
        "Progressing",
        "Halted",
        "host e is in no known failure domain",
    );
    let domains = plan.status.failure_domains.clone().expect("failureDomains");
    assert_eq!(
        domains.unplaced["e"],
        format!("its Node has no label {ZONE}")
    );
    // Labelled again: the rollout goes on.
    cluster.topology = zones();
    let plan = cluster.reconcile(&zones_cr("b"));
    assert_eq!(plan.starting, ["z1"]);
}

#[test]
fn ceph_and_the_label_disagreeing_halts_naming_the_host() {
    let crush = CrushPlacement {
        auto_type: Ok("zone".into()),
        ancestors: HOSTS
            .iter()
            .enumerate()
            .map(|(i, h)| {
                // Ceph has f in z1, its label says z3.
                let zone = if *h == "f" { 1 } else { i % 3 + 1 };
                let above = BTreeMap::from([("zone".to_owned(), format!("z{zone}"))]);
                ((*h).to_owned(), above)
            })
            .collect(),
    };
    let mut view = zones();
    view.crush = Some(Ok(crush));
    let mut cluster = cluster_on(&zones_cr("a"), view);
    let plan = cluster.reconcile(&zones_cr("b"));
    assert!(plan.replacing.is_empty());
    let halted = plan.halted.expect("halted");
    assert!(
        halted.contains("host f is in no known failure domain: Ceph's CRUSH map has it in zone z1 but its label topology.kubernetes.io/zone says z3"),
        "{halted}"
    );
}

#[test]
fn the_budget_labels_pods_with_their_failure_domain() {
    let mut cluster = Cluster {
        topology: zones(),
        disruption: Some(SimulatedDisruption::default()),
        ..Cluster::default()
    };
    cluster.settle(&zones_cr("a"));
    let values: BTreeSet<String> = (cluster.live().into_iter())
        .filter_map(|p| p.labels().get(labels::UPDATE_DOMAIN).cloned())
        .collect();
    let expected: BTreeSet<String> = ["z1", "z2", "z3"]
        .iter()
        .map(|z| labels::update_domain_label_value(z))
        .collect();
    assert_eq!(values, expected);
}

/// CRUSH with a, d in z1; b, e in z2; c, f in z3 (and `moved` hosts in the zones given).
fn crush_zones(moved: &[(&str, &str)]) -> TopologyView {
    let ancestors = HOSTS
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let zone = (moved.iter())
                .find(|(m, _)| m == h)
                .map_or(format!("z{}", i % 3 + 1), |(_, z)| (*z).to_owned());
            ((*h).to_owned(), BTreeMap::from([("zone".to_owned(), zone)]))
        })
        .collect();
    TopologyView {
        crush: Some(Ok(CrushPlacement {
            auto_type: Ok("zone".into()),
            ancestors,
        })),
        labels: BTreeMap::new(),
    }
}

fn crush_cr(marker: &str) -> CephOsd {
    let mut cr = zones_cr(marker);
    if let Some(topology) = cr.spec.topology.as_mut() {
        topology.topology_key = None;
    }
    cr
}

#[test]
fn ceph_refusing_a_whole_failure_domain_steps_part_of_it_and_a_host_moved_meanwhile_halts() {
    use crate::ceph::OsdId;
    use crate::plan::gate::{Blocker, CephInput, GateAnswer, GateDecision, RefusedWhole};
    let mut cluster = cluster_on(&crush_cr("a"), crush_zones(&[]));
    cluster.ceph = CephView {
        input: CephInput::NotAsked,
        ..CephView::default()
    };
    let next = crush_cr("b");
    let asked = cluster.reconcile(&next);
    let question = asked.gate_question.clone().expect("asks Ceph");
    let hosts: BTreeSet<&str> = question.iter().map(|s| s.key.host.as_str()).collect();
    assert_eq!(hosts, BTreeSet::from(["a", "d"]), "the whole of z1");
    assert!(question.iter().all(|s| s.domain == "z1"));
    // Ceph refused z1 whole and let a's two OSDs go.
    let part: Vec<&GateSubject> = question.iter().filter(|s| s.key.host == "a").collect();
    let ids: BTreeSet<OsdId> = (1..=2).map(OsdId).collect();
    cluster.ceph.input = CephInput::Answered(GateAnswer {
        keys: (part.iter().zip(1..))
            .map(|(s, id)| (s.key.clone(), BTreeSet::from([OsdId(id)])))
            .collect(),
        decision: GateDecision::Proceed { ids: ids.clone() },
        refused_whole: Some(Box::new(RefusedWhole {
            domain: "z1".into(),
            decision: GateDecision::Wait {
                blockers: vec![Blocker::NoAnswer {
                    error: "4 PGs not ok".into(),
                }],
            },
        })),
        ..GateAnswer::default()
    });
    let plan = cluster.reconcile(&next);
    assert_eq!(hosts_of(&plan), BTreeSet::from(["a".to_owned()]));
    let step = plan.status.ceph_step.clone().expect("a step");
    assert_eq!(
        step.domains,
        BTreeMap::from([("z1".into(), vec!["a".into()])])
    );
    assert_says(
        &plan,
        "CephGate",
        "StepInProgress",
        "Ceph does not let all of z1 stop at once",
    );

    // a moved to z2 in CRUSH while its step is open: halted, named.
    cluster.ceph.input = CephInput::NotAsked;
    cluster.topology = crush_zones(&[("a", "z2")]);
    let plan = cluster.reconcile(&next);
    assert!(plan.replacing.is_empty());
    let halted = plan.halted.clone().expect("halted");
    assert!(
        halted.starts_with("host a moved from z1 to z2 while the step on"),
        "{halted}"
    );
    assert_says(
        &plan,
        "CephGate",
        "FailureDomainChanged",
        "host a moved from z1 to z2",
    );
}
