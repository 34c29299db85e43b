//! Removal with the gate on, in whole plans: a host that left the spec is drained (marked
//! out, its pod deleted only once Ceph says no PG needs it, no `noout`), the drain is a step
//! that holds the rollout, and a host back in the spec before its pod stopped is marked in.

use super::*;
use crate::ceph::OsdId;
use crate::plan::gate::{CephInput, DrainProgress, GateAnswer, GateDecision, StepProgress};

const HOSTS: [&str; 3] = ["w1", "w2", "w3"];

fn spec(hosts: &[&str], marker: &str) -> CephOsd {
    cr(UpdateDomain::Host, hosts, &["/dev/sdb"], marker)
}

fn view(input: CephInput, step: Option<StepProgress>) -> CephView {
    CephView {
        input,
        step,
        ..CephView::default()
    }
}

/// A converged cluster of three hosts with the gate on, not asked.
fn gated() -> Cluster {
    let mut cluster = converged(&spec(&HOSTS, "a"));
    cluster.ceph = view(CephInput::NotAsked, None);
    cluster
}

/// Ceph's answer letting the question of `plan` go, each key mapped to `id`, `id + 1`, …;
/// `out`: the ids Ceph has out already.
pub(super) fn letting_go(plan: &Plan, id: u32, out: &[u32]) -> CephInput {
    let question = plan.gate_question.clone().expect("a question");
    let keys: BTreeMap<_, _> = (question.iter().zip(id..))
        .map(|(s, id)| (s.key.clone(), BTreeSet::from([OsdId(id)])))
        .collect();
    let ids = keys.values().flatten().copied().collect();
    CephInput::Answered(GateAnswer {
        keys,
        decision: GateDecision::Proceed { ids },
        out: out.iter().copied().map(OsdId).collect(),
        ..GateAnswer::default()
    })
}

/// Ceph lets the question of `plan` go (see `letting_go`).
fn proceed(plan: &Plan, id: u32, out: &[u32]) -> CephView {
    view(letting_go(plan, id, out), None)
}

fn draining(progress: DrainProgress) -> CephView {
    view(CephInput::NotAsked, Some(StepProgress::Draining(progress)))
}

fn moving() -> DrainProgress {
    DrainProgress::Moving {
        why: "24 PGs still map to osd.5".into(),
    }
}

/// w3 left the spec; the drain of its osd.5 started (`out`: ids Ceph had out already).
fn drain_started(out: &[u32]) -> (Cluster, CephOsd, Plan) {
    let mut cluster = gated();
    let two = spec(&HOSTS[..2], "a");
    let asked = cluster.reconcile(&two);
    cluster.ceph = proceed(&asked, 5, out);
    let started = cluster.reconcile(&two);
    (cluster, two, started)
}

pub(super) fn kinds(plan: &Plan) -> Vec<&'static str> {
    plan.actions
        .iter()
        .map(|a| match a {
            Action::Delete { .. } => "Delete",
            Action::RecordCephStep => "RecordCephStep",
            Action::MarkOut { .. } => "MarkOut",
            Action::MarkIn { .. } => "MarkIn",
            Action::SetNoout { .. } => "SetNoout",
            Action::ClearNoout { .. } => "ClearNoout",
            Action::LetGo { .. } => "LetGo",
            _ => "other",
        })
        .collect()
}

#[test]
fn a_host_that_left_the_spec_is_asked_about_as_a_drain() {
    let mut cluster = gated();
    let plan = cluster.reconcile(&spec(&HOSTS[..2], "a"));
    assert!(deletes(&plan).is_empty(), "nothing stops unasked");
    let question = plan.gate_question.clone().expect("a question");
    assert_eq!(question.len(), 1);
    assert_eq!(question[0].key.to_string(), "w3:/dev/sdb");
    assert!(question[0].leaving);
    assert_says(
        &plan,
        "CephGate",
        "Asking",
        "whether w3:/dev/sdb may be drained",
    );
}

#[test]
fn the_drain_is_recorded_then_its_osds_marked_out_and_nothing_stops() {
    let (_, _, plan) = drain_started(&[]);
    assert_eq!(kinds(&plan), ["RecordCephStep", "MarkOut"]);
    assert!(matches!(&plan.actions[1], Action::MarkOut { ids } if *ids == [OsdId(5)]));
    let step = plan
        .status
        .ceph_step
        .clone()
        .expect("the drain is recorded");
    assert_eq!(step.keys, ["w3:/dev/sdb"]);
    assert!(step.noout.is_empty(), "no noout on an OSD that is leaving");
    let drain = step.drain.expect("a drain");
    assert_eq!(drain.ids["w3:/dev/sdb"], [5]);
    assert_eq!(drain.marked_out, [5]);
    assert!(!plan.disrupts());
    assert_condition(
        &plan,
        "CephGate",
        "True",
        "StepInProgress",
        "draining osd.5",
    );

    // An OSD an admin had out already is not marked out, and not recorded as ours.
    let (_, _, plan) = drain_started(&[5]);
    assert_eq!(kinds(&plan), ["RecordCephStep"]);
    let drain = plan
        .status
        .ceph_step
        .and_then(|s| s.drain)
        .expect("a drain");
    assert!(drain.marked_out.is_empty());
}

#[test]
fn the_pod_waits_while_data_moves_or_cannot_be_placed_and_the_condition_says_why() {
    let (mut cluster, two, _) = drain_started(&[]);
    cluster.ceph = draining(moving());
    let plan = cluster.reconcile(&two);
    assert!(plan.actions.is_empty(), "{:?}", kinds(&plan));
    assert_condition(
        &plan,
        "CephGate",
        "True",
        "StepInProgress",
        "draining osd.5 (w3:/dev/sdb) before their pods stop: 24 PGs still map to osd.5",
    );
    assert!(plan
        .requeue_after
        .is_some_and(|r| r >= SignedDuration::from_secs(2)));

    cluster.ceph = draining(DrainProgress::Stuck {
        why: "33 PGs still map to osd.5; Ceph cannot place the data of osd.5 elsewhere".into(),
    });
    let plan = cluster.reconcile(&two);
    assert!(plan.actions.is_empty());
    assert_condition(
        &plan,
        "CephGate",
        "False",
        "CephDrainBlocked",
        "Ceph cannot place the data of osd.5 elsewhere",
    );
    assert!(plan.status.ceph_step.is_some(), "the drain stays open");
    let progressing = condition(&plan, "Progressing");
    assert!(
        progressing.message.contains("draining osd.5"),
        "{}",
        progressing.message
    );
}

#[test]
fn once_safe_only_the_leaving_pod_stops_and_the_drain_ends_when_it_is_gone() {
    let (mut cluster, two, _) = drain_started(&[]);
    // A template change meanwhile: the other hosts wait for the drain.
    let rolled = spec(&HOSTS[..2], "b");
    cluster.ceph = draining(moving());
    let plan = cluster.reconcile(&rolled);
    assert!(deletes(&plan).is_empty(), "{:?}", deletes(&plan));
    assert!(plan.gate_question.is_none());

    cluster.ceph = draining(DrainProgress::Safe);
    let plan = cluster.reconcile(&rolled);
    assert_eq!(
        deletes(&plan),
        [("w3:/dev/sdb".to_owned(), DeleteReason::Superfluous)]
    );
    assert!(!kinds(&plan).contains(&"SetNoout"));
    assert!(plan.disrupts());
    assert_says(
        &plan,
        "CephGate",
        "StepInProgress",
        "osd.5 (w3:/dev/sdb) drained",
    );
    assert!(
        plan.status.ceph_step.is_some(),
        "open until the pod is gone"
    );

    // Terminating: still open, nothing else stops.
    let plan = cluster.reconcile(&rolled);
    assert!(deletes(&plan).is_empty());
    assert!(plan.status.ceph_step.is_some());

    // Gone: the drain ends, said with how to purge; the rollout asks about its next step.
    cluster.finish_terminations();
    cluster.ceph = view(CephInput::NotAsked, None);
    let plan = cluster.reconcile(&rolled);
    assert!(plan.status.ceph_step.is_none());
    let note = (plan.events.iter())
        .find(|e| e.note.contains("drained and stopped"))
        .map(|e| e.note.clone())
        .expect("an event");
    assert!(note.contains("ceph osd purge"), "{note}");
    let question = plan.gate_question.expect("the rollout goes on");
    assert!(question.iter().all(|s| !s.leaving && s.key.host == "w1"));
    drop(two);
}

#[test]
fn a_host_back_in_the_spec_before_its_pod_stopped_is_marked_in_again() {
    let (mut cluster, _, _) = drain_started(&[]);
    cluster.ceph = draining(moving());
    let all = spec(&HOSTS, "a");
    let plan = cluster.reconcile(&all);
    assert_eq!(kinds(&plan), ["MarkIn"]);
    assert!(matches!(&plan.actions[0], Action::MarkIn { ids } if *ids == [OsdId(5)]));
    assert!(plan.status.ceph_step.is_none());
    assert!(plan
        .events
        .iter()
        .any(|e| e.note.contains("w3:/dev/sdb back in the spec") && e.note.contains("osd.5")));
    assert!(deletes(&plan).is_empty());

    // Out by an admin before the drain: left out.
    let (mut cluster, _, _) = drain_started(&[5]);
    cluster.ceph = draining(moving());
    let plan = cluster.reconcile(&all);
    assert!(plan.actions.is_empty(), "{:?}", kinds(&plan));
    assert!(plan.status.ceph_step.is_none());
}

#[test]
fn a_drain_counts_in_the_disruption_budget_from_its_start() {
    let mut cluster = Cluster {
        disruption: Some(SimulatedDisruption::default()),
        ..Cluster::default()
    };
    cluster.settle(&spec(&HOSTS, "a"));
    let pods = cluster.pods.clone();
    (cluster.disruption.as_mut().expect("simulated")).run_controller(&pods);
    cluster.ceph = view(CephInput::NotAsked, None);
    let two = spec(&HOSTS[..2], "a");
    let asked = cluster.reconcile(&two);
    cluster.ceph = proceed(&asked, 5, &[]);
    cluster.reconcile(&two);
    cluster.ceph = draining(moving());
    let plan = cluster.reconcile(&two);
    let said = plan.status.budget.expect("a budget status");
    assert_eq!(said.unavailable_domains, ["w3"]);
    assert_eq!(said.allowed_domains, 0, "no node drain during the drain");
}
