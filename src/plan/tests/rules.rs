//! Planner tests: every rule of the reference operator (creation, deletion, rollout order,
//! pod states) and each of our safety fixes,
//! plus a simulated cluster driven by proptest to check the invariants.

use super::*;

#[test]
fn creations_come_in_bounded_batches_in_key_order() {
    let hosts: Vec<String> = (0..220).map(|h| format!("h{h:03}")).collect();
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let datas: Vec<String> = (0..10)
        .map(|d| format!("/dev/sd{}", char::from(b'b' + d)))
        .collect();
    let datas: Vec<&str> = datas.iter().map(String::as_str).collect();
    let cr = cr(UpdateDomain::Host, &hosts, &datas, "a");
    let mut cluster = Cluster::default();
    let mut batches = Vec::new();
    loop {
        let plan = cluster.reconcile(&cr);
        let created = creates(&plan);
        if created.is_empty() {
            break;
        }
        let sorted = {
            let mut sorted = created.clone();
            sorted.sort();
            sorted
        };
        assert_eq!(created, sorted, "in key order");
        let more = cluster.pods.len() < 2200;
        assert_eq!(
            plan.requeue_after
                .is_some_and(|r| r <= SignedDuration::from_secs(1)),
            more,
            "looks again soon while OSDs wait"
        );
        batches.push(created.len());
    }
    assert_eq!(batches, [1000, 1000, 200]);
    assert_eq!(cluster.pods.len(), 2200);
}

#[test]
fn creates_one_pod_per_osd_waiting_for_ready() {
    let cr = cr(
        UpdateDomain::Host,
        &["w1.example.com", "w2.example.com"],
        &["/dev/sdb", "/dev/sdc"],
        "a",
    );
    let mut cluster = Cluster::default();
    let plan = cluster.reconcile(&cr);
    assert_eq!(
        creates(&plan),
        [
            "w1.example.com:/dev/sdb",
            "w1.example.com:/dev/sdc",
            "w2.example.com:/dev/sdb",
            "w2.example.com:/dev/sdc"
        ]
    );
    let names: Vec<String> = cluster.pods.iter().map(ResourceExt::name_any).collect();
    assert_eq!(
        names,
        [
            "osd-w1-sdb-00001",
            "osd-w1-sdc-00002",
            "osd-w2-sdb-00003",
            "osd-w2-sdc-00004"
        ]
    );
    for pod in &cluster.pods {
        assert_eq!(annotation(pod, labels::POD_STATE), Some("wait-for-ready"));
        assert_eq!(
            annotation(pod, labels::TEMPLATE_HASH),
            Some(plan.template_hash.as_str())
        );
    }
    assert_eq!(plan.summary.desired, 4);
}

#[test]
fn ready_pods_become_up_to_date_and_steady_state_writes_nothing() {
    let cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = Cluster::default();
    cluster.reconcile(&cr);
    set_ready(&mut cluster.pods[0], true);
    let plan = cluster.reconcile(&cr);
    assert_eq!(
        patches(&plan),
        [("h1:/dev/sdb".to_owned(), PodState::UpToDate)]
    );
    assert_eq!(plan.summary.unready, 1);
    cluster.make_all_ready();
    cluster.reconcile(&cr);
    let plan = cluster.reconcile(&cr);
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.summary.ready, 2);
    assert_eq!(plan.summary.updated, 2);
}

#[test]
fn pod_state_marks_wait_until_no_pod_is_being_created() {
    let one = cr(UpdateDomain::Host, &["h1"], &["/dev/sdb"], "a");
    let two = cr(UpdateDomain::Host, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = Cluster::default();
    cluster.reconcile(&one);
    cluster.make_all_ready();
    // h1:/dev/sdb is Ready and still marked wait-for-ready while h1:/dev/sdc is created.
    let plan = cluster.reconcile(&two);
    assert_eq!(creates(&plan), ["h1:/dev/sdc"]);
    assert!(patches(&plan).is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.summary.ready, 1, "Ready by class all the same");
    let plan = cluster.reconcile(&two);
    assert!(creates(&plan).is_empty());
    assert_eq!(
        patches(&plan),
        [("h1:/dev/sdb".to_owned(), PodState::UpToDate)]
    );
}

#[test]
fn adopts_reference_pods_with_zero_writes() {
    // Pods exactly as the reference operator left them: ownerReference without controller,
    // pod-state up-to-date, matching hash, names with the reference's prefixes.
    let cr = cr(
        UpdateDomain::Host,
        &["worker041.example.com"],
        &[
            "/dev/sdb",
            "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-1",
        ],
        "a",
    );
    let hash = TemplateHash::of(&cr.spec.pod_template);
    let pods: Vec<Pod> = [("/dev/sdb", "osd-worker041-sdb-x7k2q"), ("/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-1", "osd-worker041-pci-0000-5c-00-0-encl-0-7-0-slot-1-ab12c")]
        .iter()
        .map(|(data, name)| {
            let mut pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "ceph", "uid": format!("u-{name}"),
                    "labels": {"role": "osd", "ceph.elemental.net/owner": "CephOSD-ceph-osds"},
                    "annotations": {"ceph.elemental.net/pod-template-hash": hash.as_str(),
                        "ceph.elemental.net/host": "worker041.example.com", "ceph.elemental.net/data": data,
                        "ceph.elemental.net/pod-state": "up-to-date"},
                    "ownerReferences": [{"apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD", "name": "ceph-osds", "uid": "cr-uid"}]},
                "spec": {"containers": [{"name": "osd"}]}
            }))
            .expect("pod");
            set_ready(&mut pod, true);
            pod
        })
        .collect();
    let plan = plan(
        &cr,
        &Observed::pods(&pods),
        &mut CountingSuffix::default(),
        at(0),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.summary.current, 2);
}

#[test]
fn classification_follows_the_reference_rules() {
    let cr = cr(
        UpdateDomain::Osd,
        &["h1"],
        &["/dev/sdb", "/dev/sdc", "/dev/sdd"],
        "a",
    );
    let mut cluster = converged(&cr);
    // A duplicate of sdb (listed after the original), a misnamed pod, a pod without
    // annotations, and a terminating pod: each classified without failing the plan.
    let mut duplicate = cluster.pods[0].clone();
    duplicate.metadata.name = Some("osd-h1-sdb-zzzzz".into());
    let mut misnamed = cluster.pods[1].clone();
    misnamed.metadata.name = Some("someone-elses-pod".into());
    annotate(&mut misnamed, labels::DATA, "/dev/sdx");
    let mut bare = Pod::default();
    bare.metadata.name = Some("bare".into());
    let mut terminating = cluster.pods[2].clone();
    terminating.metadata.name = Some("osd-h1-sdd-ttttt".into());
    terminating.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    cluster
        .pods
        .extend([duplicate, misnamed, bare, terminating]);
    let plan = cluster.reconcile(&cr);
    let classes: Vec<(&str, &PodClass)> = plan
        .pods
        .iter()
        .map(|p| (p.name.as_str(), &p.class))
        .collect();
    assert_eq!(classes[0].1, &PodClass::UpToDate);
    assert!(
        matches!(classes[3], ("osd-h1-sdb-zzzzz", PodClass::Invalid(why)) if why.contains("already runs the OSD"))
    );
    assert!(
        matches!(classes[4], ("someone-elses-pod", PodClass::Invalid(why)) if why.contains("name"))
    );
    assert!(matches!(classes[5], ("bare", PodClass::Invalid(why)) if why.contains("annotation")));
    assert_eq!(classes[6].1, &PodClass::Terminating);
    let deleted: Vec<String> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Delete { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, ["osd-h1-sdb-zzzzz", "someone-elses-pod", "bare"]);
    assert!(creates(&plan).is_empty());
    assert_eq!(plan.summary.invalid, 3);
    assert_eq!(plan.summary.terminating, 1);
}

#[test]
fn missing_pod_is_recreated_only_after_the_old_one_is_gone() {
    let cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut cluster = converged(&cr);
    cluster.pods[0].metadata.deletion_timestamp =
        Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let plan = cluster.reconcile(&cr);
    assert!(
        plan.actions.is_empty(),
        "must wait while the old pod terminates: {:?}",
        plan.actions
    );
    cluster.finish_terminations();
    let plan = cluster.reconcile(&cr);
    assert_eq!(creates(&plan), ["h1:/dev/sdb"]);
    assert_eq!(
        annotation(cluster.live()[0], labels::POD_STATE),
        Some("wait-for-ready")
    );
}

#[test]
fn ended_pods_are_deleted_then_recreated() {
    for phase in ["Failed", "Succeeded"] {
        let cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
        let mut cluster = converged(&cr);
        cluster.pods[0]
            .status
            .get_or_insert_with(Default::default)
            .phase = Some(phase.into());
        let plan = cluster.reconcile(&cr);
        assert_eq!(
            deletes(&plan),
            [("h1:/dev/sdb".to_owned(), DeleteReason::Ended(phase.into()))]
        );
        assert!(creates(&plan).is_empty());
        cluster.finish_terminations();
        assert_eq!(creates(&cluster.reconcile(&cr)), ["h1:/dev/sdb"]);
    }
}

#[test]
fn new_osds_are_created_at_once_and_removed_ones_go_in_their_turn() {
    let old = cr(UpdateDomain::Osd, &["h1", "h2"], &["/dev/sdb"], "a");
    let mut cluster = converged(&old);
    let new = cr(UpdateDomain::Osd, &["h2", "h3"], &["/dev/sdb"], "a");
    let plan = cluster.reconcile(&new);
    // The new OSD's domain is down until its pod is Ready: the removal waits for it.
    assert_eq!(creates(&plan), ["h3:/dev/sdb"]);
    assert!(deletes(&plan).is_empty());
    assert_eq!(plan.summary.superfluous, 1);
    assert_eq!(plan.status.superfluous, 1);
    cluster.make_all_ready();
    let plan = cluster.reconcile(&new);
    assert_eq!(
        deletes(&plan),
        [("h1:/dev/sdb".to_owned(), DeleteReason::Superfluous)]
    );
    assert_eq!(plan.status.current_update, ["h1:/dev/sdb"]);
    // While it terminates its domain stays down; then the CephOSD is Ready.
    assert!(cluster.reconcile(&new).actions.is_empty());
    cluster.finish_terminations();
    let plan = cluster.reconcile(&new);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Ready));
    assert_eq!(plan.status.superfluous, 0);
}

#[test]
fn removed_osds_wait_while_paused_and_go_one_domain_at_a_time() {
    // Emptying the storage of a paused CephOSD deletes nothing.
    let old = cr(
        UpdateDomain::Host,
        &["h1", "h2", "h3"],
        &["/dev/sdb", "/dev/sdc"],
        "a",
    );
    let mut cluster = converged(&old);
    let mut empty = cr(UpdateDomain::Host, &[], &[], "a");
    empty.spec.storage.clear();
    empty.spec.paused = Some(true);
    for _ in 0..3 {
        let plan = cluster.reconcile(&empty);
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert_eq!(plan.status.superfluous, 6);
        assert_eq!(plan.status.phase, Some(crate::crd::Phase::Paused));
    }
    // Unpaused: one host at a time, each once the previous host's pods are gone.
    empty.spec.paused = None;
    let mut order = Vec::new();
    for plan in cluster.settle(&empty) {
        let hosts: BTreeSet<String> = deletes(&plan)
            .iter()
            .map(|(key, reason)| {
                assert_eq!(*reason, DeleteReason::Superfluous);
                key.split(':').next().unwrap_or_default().to_owned()
            })
            .collect();
        assert!(hosts.len() <= 1, "{hosts:?}");
        order.extend(hosts);
    }
    assert_eq!(order, ["h1", "h2", "h3"]);
    assert!(cluster.pods.is_empty());
}

#[test]
fn osd_domain_replaces_one_pod_at_a_time_in_case_insensitive_key_order() {
    let old = cr(
        UpdateDomain::Osd,
        &["b-host", "A-host"],
        &["/dev/sdc", "/dev/sdb"],
        "a",
    );
    let mut cluster = converged(&old);
    let new = cr(
        UpdateDomain::Osd,
        &["b-host", "A-host"],
        &["/dev/sdc", "/dev/sdb"],
        "b",
    );
    let mut order = Vec::new();
    for plan in cluster.settle(&new) {
        let replaced: Vec<String> = deletes(&plan)
            .into_iter()
            .filter(|(_, r)| *r == DeleteReason::Replace)
            .map(|(k, _)| k)
            .collect();
        assert!(replaced.len() <= 1);
        order.extend(replaced);
    }
    assert_eq!(
        order,
        [
            "A-host:/dev/sdb",
            "A-host:/dev/sdc",
            "b-host:/dev/sdb",
            "b-host:/dev/sdc"
        ]
    );
    let hash = TemplateHash::of(&new.spec.pod_template);
    assert!(cluster
        .pods
        .iter()
        .all(|p| annotation(p, labels::TEMPLATE_HASH) == Some(hash.as_str())));
}

#[test]
fn host_domain_replaces_all_osds_of_one_host_at_a_time() {
    let old = cr(
        UpdateDomain::Host,
        &["h2", "H1"],
        &["/dev/sdb", "/dev/sdc"],
        "a",
    );
    let mut cluster = converged(&old);
    let new = cr(
        UpdateDomain::Host,
        &["h2", "H1"],
        &["/dev/sdb", "/dev/sdc"],
        "b",
    );
    let steps: Vec<Vec<String>> = cluster
        .settle(&new)
        .iter()
        .map(|plan| {
            deletes(plan)
                .into_iter()
                .filter(|(_, r)| *r == DeleteReason::Replace)
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        })
        .filter(|step| !step.is_empty())
        .collect();
    assert_eq!(
        steps,
        [
            vec!["H1:/dev/sdb", "H1:/dev/sdc"],
            vec!["h2:/dev/sdb", "h2:/dev/sdc"]
        ]
    );
}

#[test]
fn the_next_step_is_not_held_up_by_pod_state_marks() {
    let old = cr(
        UpdateDomain::Host,
        &["h1", "h2"],
        &["/dev/sdb", "/dev/sdc"],
        "a",
    );
    let mut cluster = converged(&old);
    let new = cr(
        UpdateDomain::Host,
        &["h1", "h2"],
        &["/dev/sdb", "/dev/sdc"],
        "b",
    );
    let plans = cluster.settle(&new);
    let is_replace = |a: &Action| {
        matches!(
            a,
            Action::Delete {
                reason: DeleteReason::Replace,
                ..
            }
        )
    };
    let is_patch = |a: &Action| matches!(a, Action::PatchState { .. });
    let both: Vec<&Plan> = plans
        .iter()
        .filter(|p| p.actions.iter().any(is_replace) && p.actions.iter().any(is_patch))
        .collect();
    assert!(
        !both.is_empty(),
        "a plan marks h1's replacements and starts h2"
    );
    for plan in both {
        let last_replace = plan.actions.iter().rposition(is_replace);
        let first_patch = plan.actions.iter().position(is_patch);
        assert!(last_replace < first_patch, "{:?}", plan.actions);
    }
}

#[test]
fn out_of_date_pods_are_marked_and_an_unready_replacement_halts_the_rollout() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    let plan = cluster.reconcile(&new);
    assert_eq!(
        patches(&plan),
        [
            ("h1:/dev/sdb".to_owned(), PodState::OutOfDate),
            ("h1:/dev/sdc".to_owned(), PodState::OutOfDate)
        ]
    );
    assert_eq!(
        deletes(&plan),
        [("h1:/dev/sdb".to_owned(), DeleteReason::Replace)]
    );
    // While the old pod terminates, nothing else moves.
    let plan = cluster.reconcile(&new);
    assert!(plan.actions.is_empty());
    assert!(plan
        .halted
        .as_deref()
        .is_some_and(|h| h.contains("h1:/dev/sdb")));
    cluster.finish_terminations();
    assert_eq!(creates(&cluster.reconcile(&new)), ["h1:/dev/sdb"]);
    // The replacement never gets Ready: the rollout halts, again and again.
    for _ in 0..3 {
        let plan = cluster.reconcile(&new);
        assert!(plan.actions.is_empty());
        assert!(plan.halted.as_deref().is_some_and(|h| h.contains("Ready")));
        assert_eq!(plan.summary.unready, 1);
    }
    // The admin override: pod-state up-to-date lets it continue with the next OSD.
    let replacement = cluster
        .live()
        .iter()
        .find(|p| annotation(p, labels::DATA) == Some("/dev/sdb"))
        .map(|p| p.name_any())
        .expect("replacement");
    annotate(
        cluster.pod_mut(&replacement).expect("pod"),
        labels::POD_STATE,
        "up-to-date",
    );
    let plan = cluster.reconcile(&new);
    assert_eq!(
        deletes(&plan),
        [("h1:/dev/sdc".to_owned(), DeleteReason::Replace)]
    );
}

#[test]
fn fixing_the_template_turns_a_stuck_replacement_out_of_date_and_restarts_from_the_first_key() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let broken = cr(
        UpdateDomain::Osd,
        &["h1"],
        &["/dev/sdb", "/dev/sdc"],
        "broken",
    );
    cluster.reconcile(&broken);
    cluster.finish_terminations();
    cluster.reconcile(&broken); // the stuck replacement of sdb, never Ready
    let fixed = cr(
        UpdateDomain::Osd,
        &["h1"],
        &["/dev/sdb", "/dev/sdc"],
        "fixed",
    );
    let plan = cluster.reconcile(&fixed);
    assert_eq!(plan.summary.unready, 0);
    assert_eq!(
        deletes(&plan),
        [("h1:/dev/sdb".to_owned(), DeleteReason::Replace)]
    );
}

#[test]
fn changed_db_or_wal_makes_the_osd_out_of_date() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut new = old.clone();
    new.spec.storage[0].osds[1].wal = Some("/dev/nvme0n1p2".into());
    let plan = cluster.reconcile(&new);
    assert_eq!(
        patches(&plan),
        [("h1:/dev/sdc".to_owned(), PodState::OutOfDate)]
    );
    assert_eq!(
        deletes(&plan),
        [("h1:/dev/sdc".to_owned(), DeleteReason::Replace)]
    );
    cluster.finish_terminations();
    cluster.reconcile(&new);
    let replacement = cluster
        .live()
        .into_iter()
        .find(|p| annotation(p, labels::DATA) == Some("/dev/sdc"))
        .expect("replacement");
    assert_eq!(
        annotation(replacement, labels::WAL),
        Some("/dev/nvme0n1p2"),
        "devices come from the CR"
    );
}

#[test]
fn missing_osds_halt_the_rollout() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    cluster.pods[1].metadata.deletion_timestamp =
        Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    let plan = cluster.reconcile(&new);
    assert!(deletes(&plan).is_empty(), "{:?}", plan.actions);
    assert!(plan
        .halted
        .as_deref()
        .is_some_and(|h| h.contains("h1:/dev/sdc")));
}

#[test]
fn conflicting_duplicate_devices_are_reported_and_not_created() {
    let mut cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut entry = cr.spec.storage[0].clone();
    entry.osds.truncate(1);
    entry.osds[0].db = Some("/dev/nvme0n1".into());
    cr.spec.storage.push(entry);
    let mut cluster = Cluster::default();
    let plan = cluster.reconcile(&cr);
    assert_eq!(plan.spec_problems.len(), 1);
    assert_eq!(creates(&plan), ["h1:/dev/sdc"]);
    assert!(plan.events.iter().any(|e| e.warning
        && e.reason == EventReason::InvalidSpec
        && e.note.contains("h1:/dev/sdb")));
    // Told once, not at every reconcile.
    cluster.make_all_ready();
    let plan = cluster.reconcile(&cr);
    assert!(
        !event_reasons(&plan).contains(&"InvalidSpec"),
        "{:?}",
        plan.events
    );
    assert!(creates(&plan).is_empty());
}

fn invalid_spec(plan: &Plan) -> Option<(&str, &str)> {
    plan.status
        .conditions
        .iter()
        .find(|c| c.type_ == "InvalidSpec" && c.status == "True")
        .map(|c| (c.reason.as_str(), c.message.as_str()))
}

#[test]
fn an_unbuildable_pod_makes_a_plan_without_writes_that_says_why() {
    let mut cr = cr(UpdateDomain::Osd, &["h1", "h2"], &["/dev/sdb"], "a");
    cr.spec.pod_template = json!({"spec": {"containers": "not a list"}});
    let mut cluster = Cluster::default();
    // An invalid pod that would otherwise be deleted stays too: no partial plan.
    let mut bare = Pod::default();
    bare.metadata.name = Some("bare".into());
    cluster.pods.push(bare);
    let plan = cluster.reconcile(&cr);
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let (reason, message) = invalid_spec(&plan).expect("InvalidSpec");
    assert_eq!(reason, "InvalidPodTemplate");
    assert!(message.contains("h1:/dev/sdb"), "{message}");
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Error));
    assert!(plan.status_changed);
    assert!(event_reasons(&plan).contains(&"InvalidSpec"));
    // Told once: the next plan sees its own status and has nothing to write or publish.
    let again = cluster.reconcile(&cr);
    assert!(again.actions.is_empty() && again.events.is_empty());
    assert!(!again.status_changed);
    // A fixed template acts again and clears the condition.
    cr.spec.pod_template = template("a");
    let fixed = cluster.reconcile(&cr);
    assert_eq!(creates(&fixed).len(), 2);
    assert_eq!(invalid_spec(&fixed), None);
}

#[test]
fn a_pod_is_not_replaced_when_its_successor_cannot_be_built() {
    let mut cr = cr(UpdateDomain::Osd, &["h1", "h2"], &["/dev/sdb"], "a");
    let mut cluster = converged(&cr);
    cr.spec.pod_template = json!({"spec": {"containers": "not a list"}});
    let plan = cluster.reconcile(&cr);
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert!(plan.replacing.is_empty());
    assert!(plan.status.current_update.is_empty());
    let (reason, message) = invalid_spec(&plan).expect("InvalidSpec");
    assert_eq!(reason, "InvalidPodTemplate");
    assert!(message.contains("h1:/dev/sdb"), "{message}");
    assert_eq!(cluster.live().len(), 2);
}

#[test]
fn a_cephosd_without_namespace_gets_no_writes() {
    let mut cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    cr.metadata.namespace = None;
    let plan = plan(
        &cr,
        &Observed::pods(&[]),
        &mut CountingSuffix::default(),
        at(0),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(
        invalid_spec(&plan),
        Some(("InvalidPodTemplate", "the CephOSD has no namespace"))
    );
}

// --- invariants under random event sequences -------------------------------------------

#[derive(Clone, Debug)]
enum Event {
    Reconcile,
    FinishTerminations,
    Ready(usize),
    Unready(usize),
    DeleteByHand(usize),
    EditTemplate(u8),
    Override(usize),
    Evict(usize),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => Just(Event::Reconcile),
        2 => Just(Event::FinishTerminations),
        3 => (0usize..8).prop_map(Event::Ready),
        1 => (0usize..8).prop_map(Event::Unready),
        1 => (0usize..8).prop_map(Event::DeleteByHand),
        1 => (0u8..3).prop_map(Event::EditTemplate),
        1 => (0usize..8).prop_map(Event::Override),
        1 => (0usize..8).prop_map(Event::Evict),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn never_two_pods_per_osd_and_never_two_domains_in_replacement(
        host_domain in any::<bool>(),
        events in prop::collection::vec(event(), 1..80),
    ) {
        let domain = if host_domain { UpdateDomain::Host } else { UpdateDomain::Osd };
        let hosts = ["h1", "H2", "h3"];
        let datas = ["/dev/sdb", "/dev/sdc"];
        let mut cr = cr(domain, &hosts, &datas, "0");
        let mut cluster = Cluster::default();
        for event in events {
            match event {
                Event::Reconcile => {
                    let before: Vec<Pod> = cluster.pods.clone();
                    let plan = cluster.reconcile(&cr);
                    check_replacement_step(&plan, &before, domain, &cr)?;
                }
                Event::FinishTerminations => cluster.finish_terminations(),
                Event::Ready(i) => if let Some(p) = cluster.pods.get_mut(i) { set_ready(p, true) },
                Event::Unready(i) => if let Some(p) = cluster.pods.get_mut(i) { set_ready(p, false) },
                Event::DeleteByHand(i) => if let Some(p) = cluster.pods.get_mut(i) {
                    p.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
                },
                Event::EditTemplate(m) => cr.spec.pod_template = template(&m.to_string()),
                Event::Override(i) => if let Some(p) = cluster.pods.get_mut(i) { annotate(p, labels::POD_STATE, "up-to-date") },
                Event::Evict(i) => if let Some(p) = cluster.pods.get_mut(i) {
                    p.status.get_or_insert_with(Default::default).phase = Some("Failed".into());
                },
            }
            // Never two pods (terminating included) for one OSD.
            let mut keys = BTreeSet::new();
            for pod in &cluster.pods {
                let key = (annotation(pod, labels::HOST).map(str::to_owned), annotation(pod, labels::DATA).map(str::to_owned));
                prop_assert!(keys.insert(key.clone()), "two pods for {:?}", key);
            }
        }
        // And it converges once the cluster behaves.
        cluster.settle(&cr);
        prop_assert_eq!(cluster.live().len(), hosts.len() * datas.len());
        let hash = TemplateHash::of(&cr.spec.pod_template);
        prop_assert!(cluster.pods.iter().all(|p| annotation(p, labels::TEMPLATE_HASH) == Some(hash.as_str())));
    }
}

/// A rollout step takes down, besides pods that are down already or in a domain that is down
/// already (which costs nothing), the out-of-date pods of at most one domain, and that only
/// while no domain is down: every desired OSD has a live pod, not waiting for Ready, and
/// Ready unless an admin declared it up to date.
fn check_replacement_step(
    plan: &Plan,
    before: &[Pod],
    domain: UpdateDomain,
    cr: &CephOsd,
) -> Result<(), TestCaseError> {
    let desired = desired_osds(&cr.spec);
    let hash = TemplateHash::of(&cr.spec.pod_template);
    let timing = Timing {
        now: at(0),
        min_ready: SignedDuration::ZERO,
    };
    let owner = Owner {
        name: "ceph-osds",
        uid: Some("cr-uid"),
    };
    let observed = classify(
        &before.iter().collect::<Vec<_>>(),
        &owner,
        &hash,
        &desired,
        &timing,
    );
    let domain_of = |k: &OsdKey| match domain {
        UpdateDomain::Osd => k.to_string(),
        UpdateDomain::Host | UpdateDomain::Topology => k.host.clone(),
    };
    // Up: a live pod neither waiting for Ready nor out of date and not Ready (an admin's
    // `up-to-date` override counts as up: the rollout continues past it).
    let up = |key: &OsdKey| {
        observed.iter().any(|p| {
            p.is_live()
                && p.key.as_ref() == Some(key)
                && p.class != PodClass::Unready
                && (p.ready || p.class != PodClass::OutOfDate)
        })
    };
    let down: BTreeSet<String> = desired
        .osds
        .keys()
        .filter(|k| !up(k))
        .map(domain_of)
        .collect();
    let costly: BTreeSet<String> = plan
        .replacing
        .iter()
        .map(domain_of)
        .filter(|d| !down.contains(d))
        .collect();
    prop_assert!(costly.len() <= 1, "several domains started: {:?}", costly);
    prop_assert!(
        costly.is_empty() || down.is_empty(),
        "{:?} started while {:?} was down",
        costly,
        down
    );
    Ok(())
}

// --- rollout controls, status and events ------------------------------------------

fn replaced(plan: &Plan) -> Vec<String> {
    plan.replacing.iter().map(ToString::to_string).collect()
}

#[test]
fn status_counts_and_phase_follow_a_rollout() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = Cluster::default();
    let plan = cluster.reconcile(&old);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Progressing));
    assert_eq!((plan.status.desired, plan.status.current), (2, 0));
    cluster.make_all_ready();
    cluster.reconcile(&old);
    let plan = cluster.reconcile(&old);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Ready));
    assert_eq!(
        (
            plan.status.ready,
            plan.status.updated,
            plan.status.out_of_date
        ),
        (2, 2, 0)
    );
    assert_eq!(condition(&plan, "Ready").status, "True");
    assert_eq!(condition(&plan, "Progressing").reason, "Complete");
    assert_eq!(
        plan.status.template_hash.as_deref(),
        Some(plan.template_hash.as_str())
    );

    let new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    let plan = cluster.reconcile(&new);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Progressing));
    assert_eq!(plan.status.out_of_date, 2);
    assert_eq!(plan.status.current_update, ["h1:/dev/sdb"]);
    assert_eq!(condition(&plan, "Progressing").reason, "RollingUpdate");
    cluster.finish_terminations();
    let plan = cluster.reconcile(&new);
    assert_eq!(
        plan.status.current_update,
        ["h1:/dev/sdb"],
        "stays until the successor is Ready"
    );
}

#[test]
fn an_unchanged_cluster_yields_an_identical_status() {
    let cr = cr(UpdateDomain::Host, &["h1", "h2"], &["/dev/sdb"], "a");
    let mut cluster = converged(&cr);
    let first = cluster.reconcile(&cr).status;
    cluster.clock += 3600;
    let second = cluster.reconcile(&cr);
    assert_eq!(first, second.status);
    assert!(second.actions.is_empty() && second.events.is_empty());
}

#[test]
fn paused_stops_replacements_but_not_recreation() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    new.spec.paused = Some(true);
    let plan = cluster.reconcile(&new);
    assert!(replaced(&plan).is_empty());
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Paused));
    assert_eq!(condition(&plan, "Progressing").reason, "Paused");
    assert_eq!(event_reasons(&plan), ["Halted"]);
    assert!(
        cluster.reconcile(&new).events.is_empty(),
        "a persisting halt is told once"
    );
    // Self-healing continues while paused.
    cluster.pods[0].metadata.deletion_timestamp = Some(Time(at(0)));
    cluster.finish_terminations();
    let plan = cluster.reconcile(&new);
    assert_eq!(creates(&plan), ["h1:/dev/sdb"]);
    assert!(replaced(&plan).is_empty());
    // Resume.
    cluster.make_all_ready();
    new.spec.paused = Some(false);
    let plan = cluster.reconcile(&new);
    assert_eq!(replaced(&plan), ["h1:/dev/sdc"]);
}

#[test]
fn max_unavailable_two_replaces_two_domains_at_a_time_never_three() {
    let hosts = ["h1", "h2", "h3", "h4", "h5"];
    let old = cr(UpdateDomain::Osd, &hosts, &["/dev/sdb"], "a");
    let mut cluster = converged(&old);
    let mut new = cr(UpdateDomain::Osd, &hosts, &["/dev/sdb"], "b");
    new.spec.max_unavailable = Some(2);
    let plan = cluster.reconcile(&new);
    assert_eq!(replaced(&plan), ["h1:/dev/sdb", "h2:/dev/sdb"]);
    // One successor Ready: exactly one more domain may start.
    cluster.finish_terminations();
    cluster.reconcile(&new);
    let first_new = cluster
        .live()
        .into_iter()
        .find(|p| annotation(p, labels::HOST) == Some("h1"))
        .map(ResourceExt::name_any)
        .expect("pod");
    set_ready(cluster.pod_mut(&first_new).expect("pod"), true);
    let plan = cluster.reconcile(&new);
    assert_eq!(replaced(&plan), ["h3:/dev/sdb"]);
    let mut max_seen = 0;
    for plan in cluster.settle(&new) {
        max_seen = max_seen.max(plan.status.current_update.len());
    }
    assert!(max_seen <= 2, "{max_seen}");
}

#[test]
fn min_ready_seconds_soaks_a_replacement_before_the_next_step() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    new.spec.min_ready_seconds = Some(30);
    cluster.reconcile(&new);
    cluster.finish_terminations();
    cluster.reconcile(&new);
    // Ready now (lastTransitionTime = now): soaking, so no next step yet.
    for pod in &mut cluster.pods {
        set_ready(pod, true);
        if let Some(c) = pod.status.as_mut().and_then(|s| s.conditions.as_mut()) {
            c[0].last_transition_time = Some(Time(at(cluster.clock)));
        }
    }
    let plan = cluster.reconcile(&new);
    assert!(replaced(&plan).is_empty());
    assert_eq!(plan.summary.unready, 1);
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(30)));
    cluster.clock += 30;
    let plan = cluster.reconcile(&new);
    assert_eq!(replaced(&plan), ["h1:/dev/sdc"]);
}

#[test]
fn a_replacement_past_its_deadline_stalls_visibly_and_recovers_after_the_fix() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut broken = cr(
        UpdateDomain::Osd,
        &["h1"],
        &["/dev/sdb", "/dev/sdc"],
        "broken",
    );
    broken.spec.progress_deadline_seconds = Some(60);
    cluster.reconcile(&broken);
    cluster.finish_terminations();
    cluster.reconcile(&broken); // creates the replacement
    let plan = cluster.reconcile(&broken);
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(60)));
    cluster.clock += 59;
    assert!(cluster.reconcile(&broken).stalled.is_none());
    cluster.clock += 1;
    let plan = cluster.reconcile(&broken);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Stalled));
    let stalled = condition(&plan, "Stalled");
    assert_eq!(
        (stalled.status.as_str(), stalled.reason.as_str()),
        ("True", "ProgressDeadlineExceeded")
    );
    assert!(
        stalled.message.contains("osd-h1-sdb-") && stalled.message.contains("60s"),
        "{}",
        stalled.message
    );
    assert_eq!(event_reasons(&plan), ["Stalled"]);
    assert!(plan.events[0].warning);
    assert!(cluster.reconcile(&broken).events.is_empty(), "told once");
    cluster.clock += 100;
    let later = cluster.reconcile(&broken);
    assert_eq!(
        condition(&later, "Stalled").message,
        stalled.message,
        "the message does not change while it stays true (no status write per reconcile)"
    );
    assert!(
        stalled
            .message
            .contains("waiting since 1970-01-01T00:00:00Z"),
        "{}",
        stalled.message
    );
    // The fix: the stuck pod becomes out-of-date and is replaced; Stalled clears.
    let mut fixed = broken.clone();
    fixed.spec.pod_template = template("fixed");
    let plan = cluster.reconcile(&fixed);
    assert_eq!(condition(&plan, "Stalled").status, "False");
    assert_eq!(replaced(&plan), ["h1:/dev/sdb"]);
}

#[test]
fn overrides_and_adoptions_are_told() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    cluster.reconcile(&new);
    cluster.finish_terminations();
    cluster.reconcile(&new);
    let stuck = cluster
        .live()
        .into_iter()
        .find(|p| annotation(p, labels::POD_STATE) == Some("wait-for-ready"))
        .map(ResourceExt::name_any)
        .expect("stuck");
    annotate(
        cluster.pod_mut(&stuck).expect("pod"),
        labels::POD_STATE,
        "up-to-date",
    );
    let plan = cluster.reconcile(&new);
    assert!(
        event_reasons(&plan).contains(&"Overridden"),
        "{:?}",
        plan.events
    );

    // Pods without a controller ownerReference, seen by a CR we never reconciled: adopted.
    let mut fresh = Cluster {
        pods: converged(&old).pods,
        ..Cluster::default()
    };
    for pod in &mut fresh.pods {
        pod.metadata.owner_references = None;
    }
    let plan = fresh.reconcile(&old);
    assert_eq!(event_reasons(&plan), ["Adopted", "Adopted"]);
    assert!(plan.actions.is_empty());
    assert!(fresh.reconcile(&old).events.is_empty(), "only once");
}

#[test]
fn conflicting_devices_set_invalid_spec_and_phase_error() {
    let mut cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut entry = cr.spec.storage[0].clone();
    entry.osds[0].db = Some("/dev/nvme0n1".into());
    cr.spec.storage.push(entry);
    let plan = plan(
        &cr,
        &Observed::pods(&[]),
        &mut CountingSuffix::default(),
        at(0),
    );
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Error));
    let invalid = condition(&plan, "InvalidSpec");
    assert_eq!(
        (invalid.status.as_str(), invalid.reason.as_str()),
        ("True", "ConflictingDevices")
    );
    assert!(invalid.message.contains("h1:/dev/sdb"));
}

#[test]
fn an_old_pod_stuck_terminating_past_the_deadline_stalls() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    new.spec.progress_deadline_seconds = Some(60);
    cluster.clock = 1000;
    cluster.reconcile(&new);
    // The simulated API stamps deletions at the epoch; put it at "now" like a real one.
    for pod in &mut cluster.pods {
        if pod.metadata.deletion_timestamp.is_some() {
            pod.metadata.deletion_timestamp = Some(Time(at(1000)));
        }
    }
    let plan = cluster.reconcile(&new);
    assert!(plan.stalled.is_none());
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(60)));
    cluster.clock += 60;
    let plan = cluster.reconcile(&new);
    let stalled = plan.stalled.expect("stalled");
    assert!(
        stalled.contains("osd-h1-sdb-") && stalled.contains("terminating"),
        "{stalled}"
    );
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Stalled));
}

#[test]
fn the_last_replacement_still_reads_as_a_rolling_update() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut cluster = converged(&old);
    let new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "b");
    cluster.reconcile(&new);
    cluster.finish_terminations();
    cluster.reconcile(&new);
    let plan = cluster.reconcile(&new);
    assert_eq!((plan.status.out_of_date, plan.status.unready), (0, 1));
    assert_eq!(condition(&plan, "Progressing").reason, "RollingUpdate");
    assert_eq!(plan.status.current_update, ["h1:/dev/sdb"]);
}

#[test]
fn a_pod_the_scheduler_cannot_place_is_told_once_with_its_node() {
    let cr = cr(UpdateDomain::Osd, &["w1", "w9"], &["/dev/sdb"], "a");
    let mut cluster = Cluster::default();
    cluster.reconcile(&cr);
    let message = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.";
    for pod in &mut cluster.pods {
        let scheduled = annotation(pod, labels::HOST) == Some("w1");
        set_ready(pod, scheduled);
        if !scheduled {
            let status = pod.status.get_or_insert_with(Default::default);
            status.phase = Some("Pending".into());
            status.conditions = Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "False".into(),
                reason: Some("Unschedulable".into()),
                message: Some(message.into()),
                ..Default::default()
            }]);
        }
    }
    let waiting = format!("w9:/dev/sdb waits for node w9: {message}");

    let plan = cluster.reconcile(&cr);
    assert_eq!(plan.status.unschedulable, std::slice::from_ref(&waiting));
    let progressing = condition(&plan, "Progressing");
    assert_eq!(progressing.reason, "WaitingForNodes");
    assert_eq!(progressing.message, format!("OSD {waiting}"));
    let told: Vec<&PlannedEvent> = plan
        .events
        .iter()
        .filter(|e| e.reason == EventReason::Unschedulable)
        .collect();
    assert_eq!(told.len(), 1);
    assert!(told[0].warning && told[0].note == format!("OSD {waiting}"));
    assert!(told[0]
        .pod
        .as_deref()
        .is_some_and(|p| p.starts_with("osd-w9-sdb-")));

    // Told once, not at every reconcile; gone from the status once the pod is placed.
    let again = cluster.reconcile(&cr);
    assert!(!event_reasons(&again).contains(&"Unschedulable"));
    assert_eq!(again.status.unschedulable, [waiting]);
    for pod in &mut cluster.pods {
        set_ready(pod, true);
    }
    let placed = cluster.reconcile(&cr);
    assert!(placed.status.unschedulable.is_empty());
}
