//! The Ceph gate in whole plans: what a rollout step does with each answer of Ceph, an open
//! step, the noout limit, and that no rollout pod ever goes down without Ceph's `Proceed`.

use super::*;
use crate::ceph::{OsdId, UnknownReason};
use crate::plan::gate::{Blocker, CephInput, GateDecision, StepProgress};
use crate::testing::gate_inputs::{CephViewBuilder, GateAnswerBuilder};

const HOSTS: [&str; 2] = ["w1", "w2"];

fn host_cr(marker: &str) -> CephOsd {
    cr(
        UpdateDomain::Host,
        &HOSTS,
        &["/dev/sdb", "/dev/sdc"],
        marker,
    )
}

fn not_asked() -> CephView {
    CephViewBuilder::on().build()
}

/// Ceph's answer `decision` for exactly what `plan` asked, each key mapped to `first_id`,
/// `first_id + 1`, ….
fn answered(plan: &Plan, decision: GateDecision, first_id: u32) -> CephView {
    let question = plan.gate_question.clone().expect("a question");
    let answer = (question.iter().zip(first_id..))
        .fold(GateAnswerBuilder::new(decision), |answer, (s, id)| {
            answer.mapped(s.key.clone(), &[id])
        });
    let up_from: Vec<(u32, u64)> = (first_id..first_id + 10).map(|id| (id, 40)).collect();
    CephViewBuilder::off()
        .answered(answer.up_from(&up_from).build())
        .build()
}

fn proceed(ids: &[u32]) -> GateDecision {
    GateDecision::Proceed {
        ids: ids.iter().copied().map(OsdId).collect(),
    }
}

/// A converged cluster whose template then changed, with the gate on.
fn rolling() -> (Cluster, CephOsd) {
    let mut cluster = converged(&host_cr("a"));
    cluster.ceph = not_asked();
    (cluster, host_cr("b"))
}

/// A plan with the gate `NotAsked`, not applied: the runtime asks Ceph and plans again
/// rather than carry out a plan with a question.
fn ask(cluster: &mut Cluster, cr: &CephOsd) -> Plan {
    let mut cr = cr.clone();
    cr.status = cluster.status.clone();
    let mut observed = Observed::new(&cluster.pods, &cluster.replica_sets);
    observed.ceph = not_asked();
    plan(&cr, &observed, &mut cluster.suffixes, at(cluster.clock))
}

/// Asks with the gate `NotAsked`, then plans with `decision` for the question.
fn step_with(cluster: &mut Cluster, cr: &CephOsd, decision: GateDecision) -> Plan {
    let asked = ask(cluster, cr);
    cluster.ceph = answered(&asked, decision, 3);
    let plan = cluster.reconcile(cr);
    cluster.ceph = not_asked();
    plan
}

fn action_kinds(plan: &Plan) -> Vec<&'static str> {
    plan.actions
        .iter()
        .map(|a| match a {
            Action::Delete { .. } => "Delete",
            Action::DeleteReplicaSet { .. } => "DeleteReplicaSet",
            Action::Create { .. } => "Create",
            Action::PatchState { .. } => "PatchState",
            Action::RecordCephStep => "RecordCephStep",
            Action::SetNoout { .. } => "SetNoout",
            Action::ClearNoout { .. } => "ClearNoout",
            Action::MarkOut { .. } => "MarkOut",
            Action::MarkIn { .. } => "MarkIn",
            Action::DestroyOsd { .. } => "DestroyOsd",
            Action::RequireOsdRelease { .. } => "RequireOsdRelease",
            Action::LetGo { .. } => "LetGo",
            Action::LabelDomain { .. } => "LabelDomain",
            Action::WriteBudget { .. } => "WriteBudget",
            Action::DeleteBudget { .. } => "DeleteBudget",
            Action::CreatePrePull { .. } => "CreatePrePull",
            Action::DeletePrePull { .. } => "DeletePrePull",
        })
        .collect()
}

#[test]
fn off_plans_as_without_ceph_and_says_why() {
    let (mut cluster, cr) = rolling();
    cluster.ceph = CephView::default();
    let plan = cluster.reconcile(&cr);
    assert_eq!(deletes(&plan).len(), 2, "w1's two OSDs, as without Ceph");
    assert!(plan.gate_question.is_none());
    let c = condition(&plan, "CephGate");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "NotConfigured")
    );
    assert!(c.message.contains("--ceph-conf"), "{}", c.message);

    // A CephOSD that opts out: off too, said so, whatever the runtime passes.
    let mut skipping = host_cr("b");
    skipping.spec.ceph_gate = Some(crate::crd::CephGate::Skipped);
    let (mut cluster, _) = rolling();
    let plan = cluster.reconcile(&skipping);
    assert_eq!(deletes(&plan).len(), 2);
    let c = condition(&plan, "CephGate");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "Skipped"));
}

#[test]
fn not_asked_withholds_the_deletions_and_asks_about_their_keys() {
    let (mut cluster, cr) = rolling();
    let plan = cluster.reconcile(&cr);
    assert!(deletes(&plan).is_empty());
    assert!(!plan.disrupts());
    let question: Vec<String> = (plan.gate_question.iter().flatten())
        .map(|s| s.key.to_string())
        .collect();
    assert_eq!(question, ["w1:/dev/sdb", "w1:/dev/sdc"]);
    assert!(plan
        .gate_question
        .iter()
        .flatten()
        .all(|s| s.pod.as_deref().is_some_and(|p| p.starts_with("osd-w1-"))));
    assert!(plan
        .halted
        .as_deref()
        .is_some_and(|h| h.contains("asking Ceph")));
    assert!(plan.status.current_update.is_empty(), "nothing started");
    assert!(plan.status.ceph_step.is_none());
}

#[test]
fn proceed_records_the_step_sets_noout_then_deletes_in_that_order() {
    let (mut cluster, cr) = rolling();
    let plan = step_with(&mut cluster, &cr, proceed(&[3, 4]));
    // The out-of-date marks come last, as without Ceph.
    assert_eq!(
        action_kinds(&plan)[..5],
        [
            "RecordCephStep",
            "SetNoout",
            "Delete",
            "Delete",
            "PatchState"
        ]
    );
    assert!(
        matches!(&plan.actions[1], Action::SetNoout { ids, .. } if *ids == [OsdId(3), OsdId(4)])
    );
    let step = plan.status.ceph_step.clone().expect("the step is recorded");
    assert_eq!(step.keys, ["w1:/dev/sdb", "w1:/dev/sdc"]);
    assert_eq!(step.noout, [3, 4]);
    assert_eq!(
        step.osds
            .iter()
            .map(|o| (o.id, o.up_from))
            .collect::<Vec<_>>(),
        [(3, 40), (4, 40)]
    );
    assert_eq!(plan.status.current_update, ["w1"]);
    assert!(plan.gate_question.is_none());
    assert!(plan
        .requeue_after
        .is_some_and(|r| r <= SignedDuration::from_secs(2)));
}

#[test]
fn proceed_with_nothing_to_stop_deletes_without_noout_or_step() {
    let (mut cluster, cr) = rolling();
    let plan = step_with(&mut cluster, &cr, proceed(&[]));
    assert_eq!(action_kinds(&plan)[..3], ["Delete", "Delete", "PatchState"]);
    assert!(plan.status.ceph_step.is_none());
}

#[test]
fn wait_and_halt_delete_nothing_and_say_why_with_cephs_numbers() {
    let (mut cluster, cr) = rolling();
    let wait = GateDecision::Wait {
        blockers: vec![Blocker::PgsNotClean {
            not_clean: 17,
            num_pgs: 33,
            states: "17 active+undersized+degraded".into(),
        }],
    };
    let plan = step_with(&mut cluster, &cr, wait);
    assert!(deletes(&plan).is_empty());
    assert!(plan.status.ceph_step.is_none());
    assert_condition(
        &plan,
        "CephGate",
        "False",
        "CephPgsNotClean",
        "17 of 33 PGs are not active+clean",
    );
    assert!(plan
        .halted
        .as_deref()
        .is_some_and(|h| h.contains("17 of 33")));
    let warnings: Vec<_> = plan.events.iter().filter(|e| e.warning).collect();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].reason.as_str(), "CephGate");
    assert!(plan.requeue_after.is_some());

    // The same blocker again: no second event.
    let again = step_with(
        &mut cluster,
        &cr,
        GateDecision::Wait {
            blockers: vec![Blocker::PgsNotClean {
                not_clean: 9,
                num_pgs: 33,
                states: "9 active+undersized+degraded".into(),
            }],
        },
    );
    assert!(!event_reasons(&again).contains(&"CephGate"));

    // Halt: another reason, another event.
    let halt = GateDecision::Halt {
        blockers: vec![Blocker::IdUnknown {
            key: "w1:/dev/sdb".into(),
            pod: None,
            reason: UnknownReason::NoEvidence {
                pod: None,
                reported_by_down: Vec::new(),
                node: crate::ceph::NodeEvidence::NotLooked,
                unreadable_statement: None,
            },
        }],
    };
    let plan = step_with(&mut cluster, &cr, halt);
    assert!(deletes(&plan).is_empty());
    assert_says(
        &plan,
        "CephGate",
        "CephOsdIdUnknown",
        "the OSD id of w1:/dev/sdb",
    );
    assert!(event_reasons(&plan).contains(&"CephGate"));
}

#[test]
fn an_answer_about_other_keys_is_no_answer() {
    let (mut cluster, cr) = rolling();
    let asked = ask(&mut cluster, &cr);
    let mut stale = answered(&asked, proceed(&[3, 4]), 3);
    if let CephInput::Answered(answer) = &mut stale.input {
        answer.keys.pop_first();
    }
    cluster.ceph = stale;
    let plan = cluster.reconcile(&cr);
    assert!(deletes(&plan).is_empty());
    assert!(plan.gate_question.is_some(), "asked again");
}

/// A rolling cluster after a proceeded step on w1: its pods gone, replacements created.
fn step_open() -> (Cluster, CephOsd) {
    let (mut cluster, cr) = rolling();
    step_with(&mut cluster, &cr, proceed(&[3, 4]));
    cluster.finish_terminations();
    let plan = cluster.reconcile(&cr);
    assert_eq!(creates(&plan).len(), 2, "replacements are never gated");
    (cluster, cr)
}

#[test]
fn an_open_step_blocks_every_rollout_deletion_and_says_what_ceph_lacks() {
    let (mut cluster, cr) = step_open();
    cluster.make_all_ready();
    cluster.ceph = CephViewBuilder::on()
        .step(StepProgress::Booting {
            pending: vec![OsdId(4)],
        })
        .build();
    for _ in 0..3 {
        let plan = cluster.reconcile(&cr);
        assert!(deletes(&plan).is_empty(), "w2 waits for the step on w1");
        assert!(plan.gate_question.is_none(), "Ceph is not asked meanwhile");
        assert!(plan.status.ceph_step.is_some());
        let halted = plan.halted.clone().unwrap_or_default();
        assert!(
            halted.contains("the new daemon of osd.4 is not up yet"),
            "{halted}"
        );
        assert!(plan
            .requeue_after
            .is_some_and(|r| r <= SignedDuration::from_secs(2)));
        let c = condition(&plan, "CephGate");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "StepInProgress")
        );
    }
}

#[test]
fn past_the_progress_deadline_a_step_whose_osd_never_booted_is_named_as_ceph_says() {
    let (mut cluster, cr) = step_open();
    cluster.ceph = CephViewBuilder::on()
        .step(StepProgress::Booting {
            pending: vec![OsdId(4)],
        })
        .build();
    cluster.clock += 3600;
    let plan = cluster.reconcile(&cr);
    let c = condition(&plan, "Progressing");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "ProgressDeadlineExceeded")
    );
    assert!(
        c.message.contains("has not become Ready")
            && c.message
                .contains("Ceph: osd.4 of the open step has not booted a new daemon"),
        "{}",
        c.message
    );
    assert_eq!(condition(&plan, "Stalled").status, "True");
    assert!(deletes(&plan).is_empty(), "no other update domain stops");
    assert!(plan.status.ceph_step.is_some(), "noout stays on the step");
    // Ceph's word only while it says so.
    cluster.ceph = CephViewBuilder::on().step(StepProgress::Done).build();
    let plan = cluster.reconcile(&cr);
    let c = condition(&plan, "Progressing");
    assert!(!c.message.contains("Ceph:"), "{}", c.message);
}

#[test]
fn a_step_whose_osds_never_booted_takes_its_own_pods_to_a_new_template() {
    let (mut cluster, _) = step_open();
    cluster.ceph = CephViewBuilder::on()
        .step(StepProgress::Booting {
            pending: vec![OsdId(3), OsdId(4)],
        })
        .build();
    // The image fixed while w1's new pods never got their OSDs up.
    let fixed = host_cr("c");
    let plan = cluster.reconcile(&fixed);
    let deleted = deletes(&plan);
    assert!(!deleted.is_empty(), "{:?}", action_kinds(&plan));
    assert!(
        deleted.iter().all(|(name, _)| name.contains("w1")),
        "only the step's own pods: {deleted:?}"
    );
    assert!(
        plan.gate_question.is_none(),
        "Ceph's answer for the step stands"
    );
    assert!(plan.status.ceph_step.is_some(), "the step stays open");
    let c = condition(&plan, "CephGate");
    assert!(
        c.message.contains("replaced on the new template"),
        "{}",
        c.message
    );
    // One OSD of the step back: a new template waits for the step to end.
    let (mut cluster, _) = step_open();
    cluster.ceph = CephViewBuilder::on()
        .step(StepProgress::Booting {
            pending: vec![OsdId(4)],
        })
        .build();
    let plan = cluster.reconcile(&host_cr("c"));
    assert!(deletes(&plan).is_empty(), "{:?}", action_kinds(&plan));
}

#[test]
fn done_and_ready_clears_noout_and_the_step_then_the_next_step_is_asked() {
    let (mut cluster, cr) = step_open();
    cluster.ceph = CephViewBuilder::on().step(StepProgress::Done).build();
    // Ceph is done, the replacements are not Ready yet.
    let plan = cluster.reconcile(&cr);
    assert!(!action_kinds(&plan).contains(&"ClearNoout"));
    assert!(plan.status.ceph_step.is_some());
    assert!(plan.halted.as_deref().is_some_and(|h| h.contains("Ready")));

    cluster.make_all_ready();
    let plan = cluster.reconcile(&cr);
    assert_eq!(action_kinds(&plan).first(), Some(&"ClearNoout"));
    assert!(matches!(&plan.actions[0], Action::ClearNoout { ids } if *ids == [OsdId(3), OsdId(4)]));
    assert!(plan.status.ceph_step.is_none());
    assert!(
        deletes(&plan).is_empty(),
        "the next step waits for the next reconcile"
    );

    let plan = ask(&mut cluster, &cr);
    let question: Vec<String> = (plan.gate_question.iter().flatten())
        .map(|s| s.key.to_string())
        .collect();
    assert_eq!(question, ["w2:/dev/sdb", "w2:/dev/sdc"]);
}

#[test]
fn noout_held_too_long_is_cleared_and_the_rollout_stays_halted() {
    let (mut cluster, cr) = step_open();
    cluster.make_all_ready();
    cluster.ceph = CephViewBuilder::on()
        .step(StepProgress::Booting {
            pending: vec![OsdId(3)],
        })
        .build();
    cluster.clock += 31 * 60;
    let plan = cluster.reconcile(&cr);
    assert_eq!(action_kinds(&plan).first(), Some(&"ClearNoout"));
    assert!(deletes(&plan).is_empty());
    assert!(event_reasons(&plan).contains(&"NooutExpired"));
    assert!(plan
        .events
        .iter()
        .any(|e| e.warning && e.note.contains("re-replicates")));
    let step = plan.status.ceph_step.clone().expect("the step stays open");
    assert!(step.noout.is_empty(), "cleared once");
    assert_eq!(condition(&plan, "CephGate").reason, "NooutExpired");

    let plan = cluster.reconcile(&cr);
    assert!(!action_kinds(&plan).contains(&"ClearNoout"), "not again");
    assert!(deletes(&plan).is_empty(), "still halted");
    assert!(!event_reasons(&plan).contains(&"NooutExpired"), "said once");
    let said = condition(&plan, "CephGate");
    assert_eq!(
        (said.status.as_str(), said.reason.as_str()),
        ("False", "NooutExpired"),
        "still said while the step stays open"
    );
    assert!(
        said.message
            .contains("the new daemon of osd.3 is not up yet"),
        "{}",
        said.message
    );
}

#[test]
fn a_step_none_of_whose_pods_went_down_is_given_up_and_asked_again() {
    let (mut cluster, cr) = rolling();
    let asked = ask(&mut cluster, &cr);
    cluster.ceph = answered(&asked, proceed(&[3, 4]), 3);
    let plan = cluster.reconcile(&cr);
    // The deletions never reached the API: undo them.
    for pod in &mut cluster.pods {
        pod.metadata.deletion_timestamp = None;
    }
    assert!(plan.status.ceph_step.is_some());
    cluster.ceph = not_asked();
    let plan = cluster.reconcile(&cr);
    assert!(
        deletes(&plan).is_empty(),
        "an old answer takes nothing down"
    );
    assert!(plan.status.ceph_step.is_some());
    cluster.clock += 31;
    let plan = cluster.reconcile(&cr);
    assert_eq!(action_kinds(&plan), ["ClearNoout"]);
    assert!(plan.status.ceph_step.is_none());
    assert!(ask(&mut cluster, &cr).gate_question.is_some());
}

#[test]
fn missing_pods_are_created_while_ceph_is_not_asked_or_says_wait() {
    let cr = host_cr("a");
    let mut cluster = converged(&cr);
    cluster.ceph = not_asked();
    let gone = cluster.pods.remove(0).name_any();
    let plan = cluster.reconcile(&cr);
    assert_eq!(creates(&plan).len(), 1, "{gone} is recreated at once");
    assert!(plan.gate_question.is_none());
}

#[test]
fn skipping_with_a_step_open_clears_its_noout() {
    let (mut cluster, _) = step_open();
    let mut skipping = host_cr("b");
    skipping.spec.ceph_gate = Some(crate::crd::CephGate::Skipped);
    let plan = cluster.reconcile(&skipping);
    assert_eq!(action_kinds(&plan).first(), Some(&"ClearNoout"));
    assert!(plan.status.ceph_step.is_none());

    // Without Ceph configured the step is kept, and said.
    let (mut cluster, cr) = step_open();
    cluster.ceph = CephViewBuilder::off().build();
    let plan = cluster.reconcile(&cr);
    assert!(!action_kinds(&plan).contains(&"ClearNoout"));
    assert!(plan.status.ceph_step.is_some());
    assert!(condition(&plan, "CephGate").message.contains("rm-noout"));
}

#[test]
fn learnt_ids_are_kept_in_the_status_for_keys_still_run() {
    let (mut cluster, cr) = rolling();
    let asked = ask(&mut cluster, &cr);
    let mut with_learnt = answered(&asked, GateDecision::no_answer(&"x"), 3);
    if let CephInput::Answered(answer) = &mut with_learnt.input {
        answer.learned = BTreeMap::from([
            (OsdKey::new("w2", "/dev/sdb"), BTreeSet::from([OsdId(7)])),
            (OsdKey::new("gone", "/dev/sdb"), BTreeSet::from([OsdId(9)])),
        ]);
    }
    cluster.ceph = with_learnt;
    let plan = cluster.reconcile(&cr);
    assert_eq!(
        plan.status.osd_ids,
        BTreeMap::from([("w2:/dev/sdb".to_owned(), vec![7])])
    );
    cluster.ceph = not_asked();
    assert_eq!(cluster.reconcile(&cr).status.osd_ids.len(), 1, "kept");
}

/// What the simulated Ceph answers in the property test.
#[derive(Clone, Debug)]
enum Said {
    Nothing,
    Proceed,
    ProceedEmpty,
    Wait,
    OtherKeys,
}

fn said() -> impl Strategy<Value = Said> {
    prop_oneof![
        Just(Said::Nothing),
        Just(Said::Proceed),
        Just(Said::ProceedEmpty),
        Just(Said::Wait),
        Just(Said::OtherKeys),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// With the gate on, a plan deletes a rollout pod only on an `Answered` `Proceed` for
    /// exactly its keys, with no step open, after recording the step and setting noout.
    #[test]
    fn no_rollout_pod_goes_down_without_cephs_proceed(
        rounds in proptest::collection::vec((said(), any::<bool>(), any::<bool>(), 0u8..4), 1..40),
        domain in prop_oneof![Just(UpdateDomain::Host), Just(UpdateDomain::Osd)],
    ) {
        let make = |marker: &str| cr(domain, &HOSTS, &["/dev/sdb", "/dev/sdc"], marker);
        let mut cluster = converged(&make("a"));
        let mut markers = ["b", "c", "d"].into_iter().cycle();
        let mut cr = make("a");
        for (said, done, ready, kubelet) in rounds {
            if kubelet == 0 {
                cr = make(markers.next().unwrap_or("b"));
            }
            let step = done.then_some(StepProgress::Done);
            cluster.ceph = CephViewBuilder::on().step(step.clone()).build();
            let open_before = cluster.status.as_ref().and_then(|s| s.ceph_step.clone());
            let asked = ask(&mut cluster, &cr);
            prop_assert!(!asked.disrupts(), "NotAsked never takes a rollout pod down");
            if asked.gate_question.is_none() {
                cluster.reconcile(&cr);
            }
            if let Some(question) = asked.gate_question.clone() {
                prop_assert!(open_before.is_none() || asked.status.ceph_step.is_none());
                let decision = match said {
                    Said::Nothing => None,
                    Said::Proceed | Said::OtherKeys => Some(proceed(&[3, 4])),
                    Said::ProceedEmpty => Some(proceed(&[])),
                    Said::Wait => Some(GateDecision::no_answer(&"timeout")),
                };
                if let Some(decision) = decision {
                    let mut answer = answered(&asked, decision.clone(), 3);
                    if let (Said::OtherKeys, CephInput::Answered(a)) = (&said, &mut answer.input) {
                        a.keys.insert(OsdKey::new("elsewhere", "/dev/sdz"), BTreeSet::new());
                    }
                    answer.step = step;
                    cluster.ceph = answer;
                    let before = cluster.status.clone();
                    let plan = cluster.reconcile(&cr);
                    if plan.disrupts() {
                        prop_assert!(matches!(said, Said::Proceed | Said::ProceedEmpty), "{said:?}");
                        // A step open before must have ended: its noout is cleared after the
                        // next step's deletions, and kept in the next record until then.
                        if let Some(open) = before.and_then(|s| s.ceph_step) {
                            let held = cluster.clock - open.started.0.as_second();
                            prop_assert!(done || held >= 30, "a step open, not done nor given up");
                            if matches!(said, Said::Proceed) {
                                // Cleared last: the ended step's, but those the next one sets.
                                let set = plan.actions.iter().find_map(|a| match a {
                                    Action::SetNoout { ids, .. } => Some(ids),
                                    _ => None,
                                });
                                let set = set.expect("the next step sets noout");
                                let expected: Vec<u32> = (open.noout.iter().copied())
                                    .filter(|id| !set.contains(&OsdId(*id)))
                                    .collect();
                                let cleared: Vec<u32> = match plan.actions.last() {
                                    Some(Action::ClearNoout { ids }) => {
                                        ids.iter().map(|id| id.0).collect()
                                    }
                                    _ => Vec::new(),
                                };
                                prop_assert_eq!(cleared, expected);
                                let kept = plan.status.ceph_step.as_ref().map(|s| &s.noout);
                                prop_assert!(
                                    kept.is_some_and(|k| open.noout.iter().all(|id| k.contains(id))),
                                    "{kept:?}"
                                );
                            } else {
                                let kinds = action_kinds(&plan);
                                prop_assert_eq!(kinds.first(), Some(&"ClearNoout"));
                            }
                        }
                        let asked_keys: BTreeSet<String> =
                            question.iter().map(|s| s.key.to_string()).collect();
                        let replaced: BTreeSet<String> =
                            plan.replacing.iter().map(ToString::to_string).collect();
                        prop_assert!(replaced.is_subset(&asked_keys), "{replaced:?} ⊄ {asked_keys:?}");
                        let kinds = action_kinds(&plan);
                        if matches!(said, Said::Proceed) {
                            prop_assert_eq!(&kinds[..2], &["RecordCephStep", "SetNoout"]);
                        } else {
                            prop_assert!(!kinds.contains(&"SetNoout"));
                        }
                    }
                }
            }
            if kubelet == 1 || kubelet == 3 {
                cluster.finish_terminations();
            }
            if ready || kubelet == 2 {
                cluster.make_all_ready();
            }
            cluster.clock += 5;
        }
    }
}

/// `maxUnavailable: 2` proposes two hosts; Ceph lets only the first go (the runtime asked
/// again about it alone): one host's pods go, the step records only its keys.
#[test]
fn two_domains_proposed_only_the_first_let_go_goes() {
    let mut old = host_cr("a");
    old.spec.max_unavailable = Some(2);
    let mut cluster = converged(&old);
    cluster.ceph = not_asked();
    let mut cr = host_cr("b");
    cr.spec.max_unavailable = Some(2);
    let asked = ask(&mut cluster, &cr);
    let question = asked.gate_question.clone().expect("a question");
    let domains: BTreeSet<&str> = question.iter().map(|s| s.domain.as_str()).collect();
    assert_eq!(domains, BTreeSet::from(["w1", "w2"]), "both hosts asked");
    let first: Vec<_> = question.iter().filter(|s| s.domain == "w1").collect();
    let answer = (first.iter().zip(3..)).fold(
        GateAnswerBuilder::new(proceed(&[3, 4])),
        |answer, (s, id)| answer.mapped(s.key.clone(), &[id]),
    );
    cluster.ceph = CephViewBuilder::off()
        .answered(answer.up_from(&[(3, 40), (4, 40)]).build())
        .build();
    let plan = cluster.reconcile(&cr);
    let deleted = deletes(&plan);
    assert_eq!(deleted.len(), 2, "{deleted:?}");
    assert!(
        deleted.iter().all(|(name, _)| name.contains("w1")),
        "{deleted:?}"
    );
    assert!(plan.replacing.iter().all(|k| k.host == "w1"));
    let step = plan.status.ceph_step.expect("the step");
    assert_eq!(step.keys, ["w1:/dev/sdb", "w1:/dev/sdc"]);
    assert_eq!(plan.status.current_update, ["w1"]);
}

#[test]
fn an_unreadable_osd_ids_annotation_is_a_warning_naming_the_pod_and_its_value() {
    let (mut cluster, cr) = rolling();
    let asked = ask(&mut cluster, &cr);
    let mut view = answered(&asked, proceed(&[3, 4]), 3);
    if let CephInput::Answered(answer) = &mut view.input {
        answer
            .unreadable_statements
            .insert("osd-w1-sdb-x".into(), "3,x".into());
    }
    cluster.ceph = view;
    let plan = cluster.reconcile(&cr);
    let warning = plan
        .events
        .iter()
        .find(|e| e.warning && e.pod.as_deref() == Some("osd-w1-sdb-x"))
        .expect("a warning about the pod");
    assert_eq!(warning.reason.as_str(), "CephGate");
    assert!(
        warning
            .note
            .contains("ceph.elemental.net/osd-ids annotation \"3,x\" is not a list of OSD ids"),
        "{}",
        warning.note
    );
    assert_eq!(
        deletes(&plan).len(),
        2,
        "the step goes on: the annotation is ignored"
    );
}

#[test]
fn a_new_daemon_that_crashed_halts_the_rollout_until_its_report_is_archived() {
    use crate::ceph::CrashReport;
    let (mut cluster, cr) = step_open();
    cluster.make_all_ready();
    cluster.ceph = CephViewBuilder::on().step(StepProgress::Done).build();
    let plan = cluster.reconcile(&cr);
    assert!(plan.status.ceph_step.is_none(), "the step on w1 ended");
    let status = cluster.status.as_mut().expect("a status");
    status.osd_ids.extend([
        ("w1:/dev/sdb".to_owned(), vec![3]),
        ("w1:/dev/sdc".to_owned(), vec![4]),
    ]);
    // osd.4 of w1's new pods crashed after they started; osd.9 is no OSD of this CephOSD.
    let crashed = |osd: u32, seconds: i64| CrashReport {
        id: format!("crash-{osd}-{seconds}"),
        entity: format!("osd.{osd}"),
        at: at(cluster.clock + seconds),
    };
    let crashes = vec![crashed(9, 1), crashed(4, 2)];
    cluster.clock += 5;
    cluster.ceph = CephViewBuilder::on().crashes(crashes).build();
    for _ in 0..2 {
        let plan = cluster.reconcile(&cr);
        assert!(deletes(&plan).is_empty(), "w2 does not stop");
        assert!(plan.gate_question.is_none(), "Ceph is not even asked");
        let stalled = condition(&plan, "Stalled");
        assert_eq!(
            (stalled.status.as_str(), stalled.reason.as_str()),
            ("True", "OsdCrashed")
        );
        for part in [
            "osd.4 crashed",
            "w1:/dev/sdc",
            "ceph crash archive crash-4-",
        ] {
            assert!(
                stalled.message.contains(part),
                "{part}: {}",
                stalled.message
            );
        }
        let gate = condition(&plan, "CephGate");
        assert_eq!(
            (gate.status.as_str(), gate.reason.as_str()),
            ("False", "OsdCrashed")
        );
        assert_eq!(condition(&plan, "Progressing").reason, "OsdCrashed");
        assert!(plan.requeue_after.is_some(), "an archive brings no event");
    }
    // Archived: the next step is asked about.
    cluster.ceph = CephViewBuilder::on().crashes(Vec::new()).build();
    let plan = cluster.reconcile(&cr);
    let question: Vec<String> = (plan.gate_question.iter().flatten())
        .map(|s| s.key.to_string())
        .collect();
    assert_eq!(question, ["w2:/dev/sdb", "w2:/dev/sdc"]);
    assert_eq!(condition(&plan, "Stalled").status, "False");
}
