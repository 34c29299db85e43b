//! Deletion in whole plans: the finalizer is added, a deleted CephOSD's pods go one update
//! domain at a time as removals do (drained with the gate on), a step open at deletion ends
//! with its own `noout` cleared, orphaned pods are left alone, pods Kubernetes deletes at
//! once are said, and the finalizer goes only once no pod and no step is left.

use super::removal::kinds;
use super::*;
use crate::ceph::OsdId;
use crate::plan::gate::{CephInput, DrainProgress, StepProgress};
use crate::plan::rules::deletion::{deletion_of, finalizer_write, FINALIZER};

const HOSTS: [&str; 3] = ["w1", "w2", "w3"];

fn spec(marker: &str) -> CephOsd {
    let mut cr = cr(UpdateDomain::Host, &HOSTS, &["/dev/sdb"], marker);
    cr.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    cr
}

/// `cr` deleted, with the garbage collector's `extra` finalizer if any.
fn deleted(cr: &CephOsd, extra: Option<&str>) -> CephOsd {
    let mut cr = cr.clone();
    cr.metadata.deletion_timestamp = Some(Time(at(0)));
    if let Some(extra) = extra {
        cr.metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(extra.to_owned());
    }
    cr
}

fn view(input: CephInput, step: Option<StepProgress>) -> CephView {
    CephView {
        input,
        step,
        ..CephView::default()
    }
}

/// Ceph lets the question of `plan` go, each key mapped to `id`, `id + 1`, ….
fn proceed(plan: &Plan, id: u32) -> CephView {
    view(super::removal::letting_go(plan, id, &[]), None)
}

/// A converged cluster, gate on, whose template changed: the step on w1 (osd.7) is open,
/// its pod deleted, with our `noout` on osd.7.
fn step_open() -> (Cluster, CephOsd) {
    let mut cluster = converged(&spec("a"));
    cluster.ceph = view(CephInput::NotAsked, None);
    let rolled = spec("b");
    let asked = cluster.reconcile(&rolled);
    cluster.ceph = proceed(&asked, 7);
    let plan = cluster.reconcile(&rolled);
    assert_eq!(kinds(&plan), ["RecordCephStep", "SetNoout", "Delete"]);
    cluster.ceph = view(CephInput::NotAsked, None);
    (cluster, rolled)
}

#[test]
fn the_finalizer_is_added_once_and_the_deletion_read_from_the_metadata() {
    let bare = cr(UpdateDomain::Host, &HOSTS, &["/dev/sdb"], "a");
    assert_eq!(
        finalizer_write(&bare, None, true, true),
        Some(FinalizerWrite::Add)
    );
    let held = spec("a");
    assert_eq!(finalizer_write(&held, None, true, true), None);
    assert_eq!(deletion_of(&held, false), None);
    assert_eq!(
        deletion_of(&deleted(&held, None), false),
        Some(Deletion::Rollout)
    );
    assert_eq!(
        deletion_of(&deleted(&held, Some("orphan")), false),
        Some(Deletion::Orphaning)
    );
    assert!(matches!(
        deletion_of(&deleted(&held, Some("foregroundDeletion")), false),
        Some(Deletion::AtOnce(why)) if why.contains("foreground")
    ));
    assert!(matches!(
        deletion_of(&deleted(&held, None), true),
        Some(Deletion::AtOnce(why)) if why.contains("namespace")
    ));
    // Orphaning: nothing happens until the garbage collector is through.
    let orphaning = deleted(&held, Some("orphan"));
    assert_eq!(
        finalizer_write(&orphaning, Some(Deletion::Orphaning), false, false),
        None
    );
}

#[test]
fn deleted_without_ceph_the_pods_go_one_domain_at_a_time_then_the_finalizer() {
    let mut cluster = converged(&spec("a"));
    let gone = deleted(&spec("a"), None);
    let mut deleted_pods = 0;
    for _ in 0..20 {
        let terminating = cluster.pods.len() - cluster.live().len();
        let plan = cluster.reconcile(&gone);
        assert!(
            creates(&plan).is_empty(),
            "nothing is created for a deleted CephOSD"
        );
        let deleting = deletes(&plan).len();
        assert!(deleting <= 1, "one update domain at a time");
        assert!(
            terminating == 0 || deleting == 0,
            "the next waits for the last to be gone"
        );
        deleted_pods += deleting;
        assert!(
            !plan.events.iter().any(|e| e.warning),
            "a rollout's own deletions are no deletion at once: {:?}",
            plan.events
        );
        if plan.finalizer == Some(FinalizerWrite::Remove) {
            assert!(
                cluster.pods.is_empty(),
                "the finalizer goes once no pod is left"
            );
            assert_eq!(deleted_pods, 3);
            return;
        }
        if deleting == 0 {
            cluster.finish_terminations();
        }
    }
    panic!("the finalizer was never removed");
}

#[test]
fn deleted_with_the_gate_on_each_host_is_drained_before_its_pod_stops() {
    let mut cluster = converged(&spec("a"));
    cluster.ceph = view(CephInput::NotAsked, None);
    let gone = deleted(&spec("a"), None);
    let asked = cluster.reconcile(&gone);
    assert!(deletes(&asked).is_empty());
    let question = asked.gate_question.clone().expect("a question");
    assert_eq!(question.len(), 1, "one domain at a time");
    assert!(question[0].leaving);
    cluster.ceph = proceed(&asked, 4);
    let started = cluster.reconcile(&gone);
    assert_eq!(kinds(&started), ["RecordCephStep", "MarkOut"]);
    assert_eq!(started.finalizer, None, "a pod and a step are left");
    cluster.ceph = view(
        CephInput::NotAsked,
        Some(StepProgress::Draining(DrainProgress::Safe)),
    );
    let safe = cluster.reconcile(&gone);
    assert_eq!(deletes(&safe).len(), 1);
    assert_eq!(safe.finalizer, None);
}

#[test]
fn a_step_open_at_deletion_ends_its_noout_cleared_its_osds_out_then_drained() {
    let (mut cluster, rolled) = step_open();
    // The replacement of w1 runs already: it is drained before it stops.
    cluster.finish_terminations();
    let plan = cluster.reconcile(&rolled);
    assert_eq!(creates(&plan).len(), 1);
    cluster.finish_terminations();
    cluster.make_all_ready();
    let gone = deleted(&rolled, None);
    let plan = cluster.reconcile(&gone);
    assert_eq!(kinds(&plan), ["ClearNoout", "MarkOut"]);
    assert!(matches!(&plan.actions[0], Action::ClearNoout { ids } if *ids == [OsdId(7)]));
    assert!(matches!(&plan.actions[1], Action::MarkOut { ids } if *ids == [OsdId(7)]));
    assert!(
        plan.status.ceph_step.is_none(),
        "ended: a failed write keeps it recorded"
    );
    assert!(deletes(&plan).is_empty());
    assert!(event_reasons(&plan).contains(&"Deleting"));
    // The replacement of w1 is leaving like every key: drained before it stops.
    let next = cluster.reconcile(&gone);
    let question = next.gate_question.clone().expect("a question");
    assert_eq!(question.len(), 1);
    assert!(question[0].leaving && question[0].key.host == "w1");
    assert!(deletes(&next).is_empty());
}

#[test]
fn orphaned_pods_are_left_running_and_only_the_step_is_ended() {
    let (mut cluster, rolled) = step_open();
    cluster.finish_terminations();
    // The garbage collector took the ownerReferences away and its finalizer off.
    for pod in &mut cluster.pods {
        pod.metadata.owner_references = None;
    }
    let gone = deleted(&rolled, None);
    let plan = cluster.reconcile(&gone);
    assert!(
        deletes(&plan).is_empty(),
        "orphaned pods are not ours to take down"
    );
    assert!(creates(&plan).is_empty());
    assert_eq!(kinds(&plan), ["ClearNoout"]);
    assert!(plan.status.ceph_step.is_none());
    assert_eq!(plan.finalizer, Some(FinalizerWrite::Remove));
}

#[test]
fn a_pod_made_while_the_others_were_orphaned_is_let_go_of_too() {
    let (mut cluster, rolled) = step_open();
    cluster.finish_terminations();
    // The replacement of w1 is created as the garbage collector orphans the other pods: it
    // missed that one, which still names this CephOSD.
    let plan = cluster.reconcile(&rolled);
    let replacement = (plan.actions.iter())
        .find_map(|a| match a {
            Action::Create { pod, .. } => Some(pod.name_any()),
            _ => None,
        })
        .expect("the replacement of w1");
    for pod in cluster
        .pods
        .iter_mut()
        .filter(|p| p.name_any() != replacement)
    {
        pod.metadata.owner_references = None;
    }
    let gone = deleted(&rolled, None);
    let plan = cluster.reconcile(&gone);
    assert_eq!(kinds(&plan), ["ClearNoout", "LetGo"], "nothing marked out");
    assert!(
        matches!(&plan.actions[1], Action::LetGo { name, owner_uid, .. }
            if *name == replacement && Some(owner_uid) == gone.metadata.uid.as_ref())
    );
    assert!(plan.gate_question.is_none(), "nothing is ours to stop");
    assert!(plan.status.ceph_step.is_none());
    assert_eq!(plan.finalizer, None, "a pod still names it");
    assert!(event_reasons(&plan).contains(&"Deleting"));
    let plan = cluster.reconcile(&gone);
    assert!(plan.actions.is_empty(), "{:?}", kinds(&plan));
    assert_eq!(plan.finalizer, Some(FinalizerWrite::Remove));
    assert_eq!(cluster.pods.len(), 3, "every OSD keeps its pod");
}

/// The garbage collector takes every pod that names a CephOSD once it is gone, whether or not
/// the reference says `controller`: the operator takes them down as its own.
#[test]
fn pods_that_name_the_cephosd_without_controlling_go_one_domain_at_a_time() {
    let mut cluster = converged(&spec("a"));
    // As the Ansible operator's pods name their CephOSD: no `controller`.
    for pod in &mut cluster.pods {
        for reference in pod.metadata.owner_references.iter_mut().flatten() {
            reference.controller = None;
        }
    }
    let plan = cluster.reconcile(&deleted(&spec("a"), None));
    assert_eq!(plan.deletion, Some(Deletion::Rollout), "no orphaning");
    assert!(!kinds(&plan).contains(&"LetGo"));
    assert_eq!(deletes(&plan).len(), 1, "one update domain at a time");
    assert_eq!(plan.finalizer, None, "its pods are left");
}

/// `step_open`, its status knowing osd.7 on w1 and osd.8 on w2.
fn step_open_knowing_7_and_8() -> (Cluster, CephOsd) {
    let (mut cluster, rolled) = step_open();
    let mut known = cluster.status.clone().expect("a status");
    known.osd_ids = BTreeMap::from([
        ("w1:/dev/sdb".into(), vec![7]),
        ("w2:/dev/sdb".into(), vec![8]),
    ]);
    cluster.status = Some(known);
    (cluster, rolled)
}

#[test]
fn pods_deleted_at_once_are_said_and_only_our_noout_is_cleared() {
    let (mut cluster, rolled) = step_open_knowing_7_and_8();
    // The disruption budget is managed: it is not written either.
    cluster.disruption = Some(SimulatedDisruption::default());
    // `--cascade=foreground`: every pod is terminating.
    for pod in &mut cluster.pods {
        pod.metadata.deletion_timestamp = Some(Time(at(0)));
    }
    let gone = deleted(&rolled, Some("foregroundDeletion"));
    let plan = cluster.reconcile(&gone);
    assert_eq!(kinds(&plan), ["ClearNoout"]);
    assert!(
        plan.gate_question.is_none(),
        "Ceph is not asked: nothing is ours to stop"
    );
    assert!(plan.status.ceph_step.is_none());
    assert_eq!(plan.finalizer, None, "pods are still terminating");
    cluster.finish_terminations();
    let plan = cluster.reconcile(&gone);
    assert!(plan.actions.is_empty());
    assert_eq!(plan.finalizer, Some(FinalizerWrite::Remove));
    let said = went_at_once_warning(&plan);
    assert!(said.contains("foreground"), "{said}");
    assert!(said.contains("osd.7") && said.contains("osd.8"), "{said}");
}

/// The words of `plan`'s Warning that the pods went down at once.
fn went_at_once_warning(plan: &Plan) -> &str {
    let said = (plan.events.iter())
        .find(|e| e.warning && e.reason == EventReason::Deleting)
        .expect("a Warning");
    &said.note
}

#[test]
fn pods_gone_before_the_first_look_at_a_deletion_went_at_once() {
    let (mut cluster, rolled) = step_open_knowing_7_and_8();
    // A foreground cascade the garbage collector was through with, its finalizer gone.
    cluster.pods.clear();
    let gone = deleted(&rolled, None);
    let plan = cluster.reconcile(&gone);
    assert_eq!(kinds(&plan), ["ClearNoout"], "nothing is marked out");
    assert!(plan.status.ceph_step.is_none());
    assert_eq!(plan.finalizer, Some(FinalizerWrite::Remove));
    let said = went_at_once_warning(&plan);
    assert!(said.contains("osd.7") && said.contains("osd.8"), "{said}");
    assert_eq!(plan.status.osd_ids.len(), 2, "kept to say which went");
}

#[test]
fn a_deletion_at_once_is_told_from_the_status_before_it() {
    use crate::plan::rules::deletion::checked_against_pods;
    let running = CephOsdStatus {
        desired: 3,
        current: 3,
        ..CephOsdStatus::default()
    };
    let leaving = CephOsdStatus::default();
    let never_ran = CephOsdStatus {
        desired: 3,
        ..CephOsdStatus::default()
    };
    let rollout = Some(Deletion::Rollout);
    assert!(matches!(
        checked_against_pods(rollout, &running, false, false),
        Some(Deletion::AtOnce(_))
    ));
    assert_eq!(
        checked_against_pods(rollout, &running, true, false),
        rollout
    );
    assert_eq!(
        checked_against_pods(rollout, &leaving, false, false),
        rollout
    );
    assert_eq!(
        checked_against_pods(rollout, &never_ran, false, false),
        rollout
    );
    assert_eq!(checked_against_pods(None, &running, false, false), None);
    let orphaning = Some(Deletion::Orphaning);
    assert_eq!(
        checked_against_pods(orphaning, &running, false, false),
        orphaning
    );
    // Pods the garbage collector let go of: an orphaning through, whatever else is left.
    for pods_left in [false, true] {
        assert_eq!(
            checked_against_pods(rollout, &running, pods_left, true),
            Some(Deletion::Orphaned)
        );
    }
}
