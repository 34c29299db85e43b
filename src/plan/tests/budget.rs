//! The disruption budget in whole plans: its shape, drains against it, the rollout reserving
//! through it, drains going first, someone else's budget, a former CephOSD's adopted back,
//! `Off`; and a property: whatever drains, cordons, template edits and controller runs
//! interleave, never more update domains are down than `maxUnavailable`.

use super::*;
use crate::plan::rules::budget::budget_name;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

const HOSTS: [&str; 3] = ["w1", "w2", "w3"];

fn host_cr(marker: &str) -> CephOsd {
    cr(
        UpdateDomain::Host,
        &HOSTS,
        &["/dev/sdb", "/dev/sdc"],
        marker,
    )
}

impl Cluster {
    fn disruption(&mut self) -> &mut SimulatedDisruption {
        self.disruption
            .get_or_insert_with(SimulatedDisruption::default)
    }

    /// Reconciles, runs the disruption controller, finishes terminations and readies pods
    /// until nothing changes.
    fn settle_with_budget(&mut self, cr: &CephOsd) -> Plan {
        let mut last = None;
        for _ in 0..100 {
            let plan = self.reconcile(cr);
            let pods = self.pods.clone();
            self.disruption().run_controller(&pods);
            let idle = plan.actions.is_empty()
                && plan.summary.terminating == 0
                && plan.summary.unready == 0;
            last = Some(plan);
            if idle {
                break;
            }
            self.finish_terminations();
            self.make_all_ready();
        }
        last.expect("planned")
    }

    fn budget(&self) -> Option<&PodDisruptionBudget> {
        (self.disruption.as_ref()?.budgets.iter())
            .find(|b| b.metadata.name.as_deref() == Some(budget_name("ceph-osds").as_str()))
    }

    fn pods_on(&self, host: &str) -> Vec<String> {
        self.live()
            .into_iter()
            .filter(|p| annotation(p, labels::HOST) == Some(host))
            .map(ResourceExt::name_any)
            .collect()
    }

    /// `kubectl drain host` once: cordon, then one eviction per pod there.
    fn drain(&mut self, host: &str) -> Vec<Result<(), &'static str>> {
        self.disruption().cordoned.insert(host.to_owned());
        let mut answers = Vec::new();
        for name in self.pods_on(host) {
            let mut disruption = self.disruption.take().expect("budgets simulated");
            let pod = self.pod_mut(&name).expect("pod");
            answers.push(disruption.evict(pod));
            self.disruption = Some(disruption);
        }
        answers
    }

    /// The hosts with a desired OSD lacking a Ready pod that is not terminating or evicted.
    fn hosts_down(&self) -> BTreeSet<String> {
        let mut down = BTreeSet::new();
        for host in HOSTS {
            for data in ["/dev/sdb", "/dev/sdc"] {
                let evicted = |p: &Pod| {
                    (self.disruption.as_ref()).is_some_and(|d| d.landing.contains(&p.name_any()))
                };
                let up = self.live().iter().any(|p| {
                    !evicted(p)
                        && annotation(p, labels::HOST) == Some(host)
                        && annotation(p, labels::DATA) == Some(data)
                        && is_ready(p)
                });
                if !up {
                    down.insert(host.to_owned());
                }
            }
        }
        down
    }
}

fn converged_with_budget(cr: &CephOsd) -> Cluster {
    let mut cluster = Cluster {
        disruption: Some(SimulatedDisruption::default()),
        ..Cluster::default()
    };
    cluster.settle_with_budget(cr);
    cluster
}

fn min_available(budget: &PodDisruptionBudget) -> i32 {
    match budget.spec.as_ref().and_then(|s| s.min_available.clone()) {
        Some(IntOrString::Int(n)) => n,
        other => panic!("minAvailable {other:?}"),
    }
}

#[test]
fn a_converged_cephosd_keeps_a_budget_of_max_unavailable_domains() {
    let cr = host_cr("a");
    let cluster = converged_with_budget(&cr);
    let budget = cluster.budget().expect("a budget");
    let spec = budget.spec.as_ref().expect("spec");
    // 6 pods, one host of 2 may go: any one eviction takes one host down at most.
    assert_eq!(min_available(budget), 5);
    assert_eq!(spec.max_unavailable, None);
    assert_eq!(
        spec.unhealthy_pod_eviction_policy.as_deref(),
        Some("AlwaysAllow")
    );
    let selector = spec.selector.as_ref().expect("selector");
    assert_eq!(
        selector.match_labels,
        Some(BTreeMap::from([(
            labels::OWNER.to_owned(),
            "CephOSD-ceph-osds".to_owned()
        )]))
    );
    let owner = &budget.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("CephOSD", "cr-uid", Some(true))
    );
    let status = budget.status.as_ref().expect("status");
    assert_eq!(
        (
            status.expected_pods,
            status.current_healthy,
            status.disruptions_allowed
        ),
        (Some(6), Some(6), Some(1))
    );
    for pod in cluster.live() {
        let host = annotation(pod, labels::HOST).expect("host");
        assert_eq!(
            pod.labels().get(labels::UPDATE_DOMAIN),
            Some(&labels::update_domain_label_value(host))
        );
    }
    let plan = cluster_plan(&cluster, &cr);
    let said = plan.status.budget.clone().expect("budget status");
    assert_eq!(said.allowed_domains, 1);
    assert!(said.unavailable_domains.is_empty() && said.drains_waiting.is_empty());
    assert_condition(
        &plan,
        "DisruptionBudget",
        "True",
        "BudgetManaged",
        "admits 1 more update domain",
    );
}

/// The plan for `cluster` as it is, without applying it.
fn cluster_plan(cluster: &Cluster, cr: &CephOsd) -> Plan {
    let mut cr = cr.clone();
    cr.status = cluster.status.clone();
    let mut observed = Observed::pods(&cluster.pods);
    observed.disruption = cluster.disruption.as_ref().map(|d| DisruptionView {
        budgets: d.budgets.iter().collect(),
        cordoned: d.cordoned.clone(),
    });
    plan(
        &cr,
        &observed,
        &mut CountingSuffix::default(),
        at(cluster.clock),
    )
}

#[test]
fn a_second_drain_waits_until_the_first_host_is_back() {
    let cr = host_cr("a");
    let mut cluster = converged_with_budget(&cr);
    // The first eviction on w1 goes; the second pod there waits for the operator to count w1
    // down; w2's drain is refused.
    let answers = cluster.drain("w1");
    assert_eq!(answers[0], Ok(()));
    assert!(answers[1].is_err());
    let refused = cluster.drain("w2");
    assert!(refused.iter().all(Result::is_err), "{refused:?}");
    let plan = cluster.reconcile(&cr);
    assert_eq!(
        event_reasons(&plan),
        ["DrainHeld", "DrainHeld"],
        "w1's second pod and w2"
    );
    let pods = cluster.pods.clone();
    cluster.disruption().run_controller(&pods);
    // w1 is outside the budget now: the rest of it goes; w2 still may not.
    assert_eq!(cluster.drain("w1"), [Ok(())]);
    assert!(cluster.drain("w2").iter().all(Result::is_err));
    cluster.finish_terminations();
    // Cordoned: w1's pods are not recreated, and the status says why.
    let plan = cluster.reconcile(&cr);
    assert!(creates(&plan).is_empty(), "{:?}", creates(&plan));
    assert!(
        plan.status
            .unschedulable
            .iter()
            .any(|u| u.contains("w1") && u.contains("cordoned")),
        "{:?}",
        plan.status.unschedulable
    );
    let said = plan.status.budget.clone().expect("budget status");
    assert_eq!(said.allowed_domains, 0);
    assert_eq!(said.unavailable_domains, ["w1"]);
    assert_eq!(said.drains_waiting, ["w2"]);
    // Uncordoned: w1 comes back; then w2's drain goes.
    cluster.disruption().cordoned.remove("w1");
    let plan = cluster.settle_with_budget(&cr);
    assert!(plan
        .status
        .budget
        .expect("budget")
        .unavailable_domains
        .is_empty());
    assert_eq!(cluster.pods_on("w1").len(), 2);
    assert_eq!(cluster.drain("w2")[0], Ok(()));
}

#[test]
fn a_drain_takes_its_whole_host_as_one_even_by_osd() {
    // By OSD, one at a time: a drained host's second OSD may go once the first is down, and
    // the host counts as one; another host may not.
    let cr = cr(UpdateDomain::Osd, &HOSTS, &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged_with_budget(&cr);
    let answers = cluster.drain("w1");
    assert_eq!(answers[0], Ok(()));
    assert!(answers[1].is_err());
    let plan = cluster.reconcile(&cr);
    let pods = cluster.pods.clone();
    cluster.disruption().run_controller(&pods);
    assert_eq!(cluster.drain("w1"), [Ok(())]);
    assert!(cluster.drain("w2").iter().all(Result::is_err));
    let said = plan.status.budget.expect("budget status");
    assert_eq!(said.allowed_domains, 0);
    assert_eq!(said.unavailable_domains, ["w1:/dev/sdb", "w1:/dev/sdc"]);
}

#[test]
fn the_rollout_reserves_its_domain_through_the_budget_before_taking_pods_down() {
    let mut cluster = converged_with_budget(&host_cr("a"));
    let cr = host_cr("b");
    let version = cluster
        .budget()
        .and_then(|b| b.metadata.resource_version.clone());
    let plan = cluster.reconcile(&cr);
    let write = plan
        .actions
        .iter()
        .position(|a| matches!(a, Action::WriteBudget { resource_version, .. } if *resource_version == version))
        .expect("a reservation at the version read");
    let first_delete = plan
        .actions
        .iter()
        .position(|a| matches!(a, Action::Delete { .. }))
        .expect("deletions");
    assert!(write < first_delete, "{:?}", plan.actions);
    assert_eq!(deletes(&plan).len(), 2, "w1's two pods");
    // w1 is reserved: outside the budget, and nothing more may go.
    let budget = cluster.budget().expect("budget");
    assert_eq!(min_available(budget), 4);
    let pods = cluster.pods.clone();
    cluster.disruption().run_controller(&pods);
    assert!(cluster.drain("w2").iter().all(Result::is_err));
    // The drain of the host being replaced goes through (its new pods wait for uncordon).
    cluster.finish_terminations();
    cluster.reconcile(&cr);
    assert!(cluster.drain("w1").iter().all(Result::is_ok));
}

#[test]
fn a_reservation_that_loses_to_an_eviction_takes_nothing_down() {
    let mut cluster = converged_with_budget(&host_cr("a"));
    let cr = host_cr("b");
    let plan = cluster_plan(&cluster, &cr);
    assert_eq!(deletes(&plan).len(), 2);
    // An eviction on w2 lands between the plan's read and its write.
    assert_eq!(cluster.drain("w2")[0], Ok(()));
    cluster.apply(&plan);
    assert_eq!(cluster.live().len(), 5, "only the evicted pod went");
    // The next plan sees w2 down and starts no other host (the rest of w2 may go with it).
    let plan = cluster.reconcile(&cr);
    let deleted = deletes(&plan);
    assert!(
        deleted.iter().all(|(key, _)| key.starts_with("w2:")),
        "{deleted:?}"
    );
}

#[test]
fn no_domain_starts_before_the_controller_caught_up_or_while_a_drain_waits() {
    let mut cluster = converged_with_budget(&host_cr("a"));
    let cr = host_cr("b");
    // An eviction the controller has not processed yet: under way.
    let mut pending = cluster.disruption.take().expect("budgets");
    if let Some(status) = pending.budgets[0].status.as_mut() {
        status
            .disrupted_pods
            .get_or_insert_with(Default::default)
            .insert("somebody".into(), Time(at(0)));
    }
    cluster.disruption = Some(pending);
    let plan = cluster.reconcile(&cr);
    assert!(deletes(&plan).is_empty());
    assert_says(
        &plan,
        "Progressing",
        "WaitingForDisruptionBudget",
        "eviction of pod somebody",
    );
    // A cordoned node whose pods still run: its drain goes first.
    let pods = cluster.pods.clone();
    cluster.disruption().run_controller(&pods);
    cluster.disruption().cordoned.insert("w3".into());
    let plan = cluster.reconcile(&cr);
    assert!(deletes(&plan).is_empty());
    let halted = condition(&plan, "Progressing");
    assert!(
        halted.message.contains("node w3 is cordoned"),
        "{}",
        halted.message
    );
    assert!(
        event_reasons(&plan).contains(&"DrainAdmitted"),
        "{:?}",
        event_reasons(&plan)
    );
    // Uncordoned: the rollout starts.
    cluster.disruption().cordoned.clear();
    let plan = cluster.reconcile(&cr);
    assert_eq!(deletes(&plan).len(), 2);
}

#[test]
fn someone_elses_budget_over_the_osd_pods_means_none_of_ours() {
    let cr = host_cr("a");
    let mut cluster = converged_with_budget(&cr);
    cluster.disruption().budgets.push(PodDisruptionBudget {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("users-own".into()),
            namespace: Some("ceph".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("role".into(), "osd".into())])),
                match_expressions: None,
            }),
            max_unavailable: Some(IntOrString::Int(1)),
            ..Default::default()
        }),
        status: None,
    });
    let plan = cluster.reconcile(&cr);
    assert!(plan.actions.iter().any(
        |a| matches!(a, Action::DeleteBudget { name, .. } if *name == budget_name("ceph-osds"))
    ));
    assert!(cluster.budget().is_none());
    assert_condition(
        &plan,
        "DisruptionBudget",
        "False",
        "ForeignBudget",
        "users-own",
    );
    assert!(plan.status.budget.is_none());
    // The rollout does not wait for a budget it does not keep.
    let plan = cluster.reconcile(&host_cr("b"));
    assert_eq!(deletes(&plan).len(), 2);
}

/// `kubectl delete cephosd --cascade=orphan`: the garbage collector strips the owner
/// references of the pods and of the budget; the CephOSD comes back with another uid.
fn orphaned_and_recreated(cluster: &mut Cluster, cr: &CephOsd) -> CephOsd {
    for pod in &mut cluster.pods {
        pod.metadata.owner_references = None;
    }
    for budget in &mut cluster.disruption().budgets {
        budget.metadata.owner_references = None;
    }
    cluster.status = None;
    let mut again = cr.clone();
    again.metadata.uid = Some("cr-uid-2".into());
    again
}

#[test]
fn the_budget_a_former_cephosd_of_the_name_left_is_adopted_back() {
    let cr = host_cr("a");
    let mut cluster = converged_with_budget(&cr);
    let mut again = orphaned_and_recreated(&mut cluster, &cr);
    let plan = cluster.reconcile(&again);
    assert!(deletes(&plan).is_empty(), "{:?}", deletes(&plan));
    let write = plan.actions.iter().find_map(|a| match a {
        Action::WriteBudget {
            budget,
            exists: true,
            resource_version,
        } => Some((budget, resource_version)),
        _ => None,
    });
    let (written, version) = write.expect("the budget rewritten");
    assert_eq!(written.owner_references()[0].uid, "cr-uid-2");
    assert!(version.is_some(), "conditional on the version read");
    assert!(event_reasons(&plan).contains(&"Adopted"));
    assert_condition(
        &plan,
        "DisruptionBudget",
        "True",
        "BudgetManaged",
        "admits 1",
    );
    let budget = cluster.budget().expect("the budget");
    assert_eq!(budget.owner_references()[0].uid, "cr-uid-2");
    // Its size follows the spec again; adopted once, it is simply ours.
    again.spec.max_unavailable = Some(2);
    cluster.settle_with_budget(&again);
    assert_eq!(min_available(cluster.budget().expect("the budget")), 4);
    let plan = cluster.reconcile(&again);
    assert!(!event_reasons(&plan).contains(&"Adopted"));
}

#[test]
fn a_cephosd_deleted_with_cascade_orphan_does_not_take_its_budget_back() {
    let mut cr = host_cr("a");
    let mut cluster = converged_with_budget(&cr);
    // The garbage collector orphans the budget before the CephOSD goes.
    for budget in &mut cluster.disruption().budgets {
        budget.metadata.owner_references = None;
    }
    for pod in &mut cluster.pods {
        pod.metadata.owner_references = None;
    }
    cr.metadata.deletion_timestamp = Some(Time(at(cluster.clock)));
    let plan = cluster.reconcile(&cr);
    assert!(
        !plan.actions.iter().any(|a| matches!(
            a,
            Action::WriteBudget { exists: true, .. } | Action::DeleteBudget { .. }
        )),
        "{:?}",
        plan.actions
    );
    assert!(cluster
        .budget()
        .is_some_and(|b| b.owner_references().is_empty()));
}

#[test]
fn a_budget_of_a_cephosd_that_exists_or_of_another_owner_stays_foreign() {
    let cr = host_cr("a");
    let owners = [
        ("ceph.elemental.net/v1alpha1", "CephOSD", "other-osds"),
        ("apps/v1", "Deployment", "ceph-osds"),
    ];
    for (api_version, kind, owner) in owners {
        let mut cluster = converged_with_budget(&cr);
        let again = orphaned_and_recreated(&mut cluster, &cr);
        let budget = &mut cluster.disruption().budgets[0];
        budget.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: api_version.into(),
                kind: kind.into(),
                name: owner.into(),
                uid: "their-uid".into(),
                controller: Some(true),
                ..Default::default()
            },
        ]);
        let before = budget.clone();
        let plan = cluster.reconcile(&again);
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, Action::WriteBudget { .. } | Action::DeleteBudget { .. })),
            "{kind} {owner}: {:?}",
            plan.actions
        );
        assert_eq!(cluster.budget(), Some(&before));
        assert_condition(
            &plan,
            "DisruptionBudget",
            "False",
            "ForeignBudget",
            &budget_name("ceph-osds"),
        );
    }
    // Without the CephOSD's owner label, its name alone makes no budget its own.
    let mut cluster = converged_with_budget(&cr);
    let again = orphaned_and_recreated(&mut cluster, &cr);
    cluster.disruption().budgets[0].metadata.labels = None;
    let plan = cluster.reconcile(&again);
    assert_condition(&plan, "DisruptionBudget", "False", "ForeignBudget", "");
}

#[test]
fn off_keeps_no_budget_and_says_so() {
    let mut cr = host_cr("a");
    let mut cluster = converged_with_budget(&cr);
    cr.spec.disruption_budget = Some(crate::crd::DisruptionBudgetMode::Off);
    let plan = cluster.reconcile(&cr);
    assert!(cluster.budget().is_none());
    assert_eq!(condition(&plan, "DisruptionBudget").reason, "BudgetOff");
    // Cordons are not waited for either.
    cluster.disruption().cordoned.insert("w1".into());
    cr.spec.pod_template = template("b");
    let plan = cluster.reconcile(&cr);
    assert_eq!(deletes(&plan).len(), 2);
}

#[test]
fn unclean_pgs_close_the_budget_until_ceph_is_clean_again() {
    let cr = host_cr("a");
    let mut cluster = converged_with_budget(&cr);
    cluster.ceph.pgs_unclean = Some("Ceph's PGs are not all clean (3 active+undersized)".into());
    let plan = cluster.reconcile(&cr);
    let budget = cluster.budget().expect("budget");
    assert_eq!(min_available(budget), 6, "no eviction admitted");
    assert_eq!(
        plan.status.budget.as_ref().map(|b| b.allowed_domains),
        Some(0)
    );
    let said = &condition(&plan, "DisruptionBudget").message;
    assert!(
        said.contains("closed: Ceph's PGs are not all clean"),
        "{said}"
    );
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(2)));
    let pods = cluster.pods.clone();
    cluster.disruption().run_controller(&pods);
    assert!(cluster.drain("w1").iter().all(Result::is_err));
    // Clean again: one host may go.
    cluster.disruption().cordoned.clear();
    cluster.ceph.pgs_unclean = None;
    cluster.reconcile(&cr);
    assert_eq!(min_available(cluster.budget().expect("budget")), 5);
}

#[test]
fn without_a_view_of_budgets_nothing_is_said_or_written() {
    let cr = host_cr("a");
    let mut cluster = converged(&cr);
    let plan = cluster.reconcile(&cr);
    assert!(plan.status.budget.is_none());
    assert!(!plan
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == "DisruptionBudget"));
}

#[derive(Clone, Debug)]
enum Step {
    Reconcile,
    Controller,
    Finish,
    Ready,
    Edit(u8),
    Drain(usize),
    Land,
    Uncordon(usize),
}

fn steps() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Reconcile),
        3 => Just(Step::Controller),
        2 => Just(Step::Finish),
        2 => Just(Step::Ready),
        1 => (0u8..4).prop_map(Step::Edit),
        2 => (0..HOSTS.len()).prop_map(Step::Drain),
        2 => Just(Step::Land),
        2 => (0..HOSTS.len()).prop_map(Step::Uncordon),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Drains, cordons, template edits, controller runs and reconciles in any order: never
    /// more hosts down than maxUnavailable.
    #[test]
    fn drains_and_the_rollout_never_take_more_domains_down_than_allowed(
        max in 1i32..=2,
        steps in proptest::collection::vec(steps(), 1..120),
    ) {
        let mut cr = host_cr("a");
        cr.spec.max_unavailable = Some(max);
        let mut cluster = converged_with_budget(&cr);
        cluster.disruption().deletions_lag = true;
        let limit = usize::try_from(max).expect("positive");
        for step in steps {
            match step {
                Step::Reconcile => { cluster.reconcile(&cr); }
                Step::Controller => {
                    let pods = cluster.pods.clone();
                    cluster.disruption().run_controller(&pods);
                }
                Step::Finish => cluster.finish_terminations(),
                Step::Ready => cluster.make_all_ready(),
                Step::Edit(marker) => cr.spec.pod_template = template(&marker.to_string()),
                Step::Drain(host) => { cluster.drain(HOSTS[host]); }
                Step::Land => cluster.land_evictions(),
                Step::Uncordon(host) => { cluster.disruption().cordoned.remove(HOSTS[host]); }
            }
            let down = cluster.hosts_down();
            prop_assert!(down.len() <= limit, "down: {:?} after {:?}", down, step);
            one_pod_per_disk(&cluster.pods).map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn ceph_closes_the_budget_unless_every_pg_is_clean_and_says_why() {
    use crate::ceph::parse_pg_stat;
    use crate::ceph::test_data::fixture;
    use crate::plan::rules::budget::closed_for_pgs;
    let pgs = |name: &str| parse_pg_stat(&fixture(name)).expect("recorded pg stat");
    assert_eq!(closed_for_pgs(Ok(Some(&pgs("pg_stat_clean")))), None);
    let down = closed_for_pgs(Ok(Some(&pgs("pg_stat_one_osd_down")))).expect("closed");
    assert!(down.starts_with("Ceph's PGs are not all clean ("), "{down}");
    let mut unknown = pgs("pg_stat_clean");
    unknown.ready = false;
    assert_eq!(
        closed_for_pgs(Ok(Some(&unknown))).as_deref(),
        Some("Ceph's mgr does not know the PG states yet")
    );
    assert_eq!(
        closed_for_pgs(Ok(None)).as_deref(),
        Some("Ceph has no mgr to tell whether its PGs are clean")
    );
    assert_eq!(
        closed_for_pgs(Err(&"timed out")).as_deref(),
        Some("Ceph did not tell whether its PGs are clean: timed out")
    );
}
