//! Planner tests: every rule of the reference operator (creation, deletion, rollout order,
//! pod states, an unbuildable or ambiguous spec); beside them the invariants under random
//! events (`invariants`) and the rollout's controls, status and events (`status_and_events`).

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

mod invariants;
mod status_and_events;
