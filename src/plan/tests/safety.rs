//! Planner tests for the safety rules: stray pods, pods of other controllers, template fields
//! the operator owns, spellings of one disk, and OSDs the spec is ambiguous about.

use super::*;
use crate::crd::UpdateDomain;
use crate::labels;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// A hand-made copy of `of` (labels and annotations, readiness), named `name`, created at
/// `clock`, with no ownerReferences.
fn stray(of: &Pod, name: &str, clock: i64) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    pod.metadata.namespace = of.metadata.namespace.clone();
    pod.metadata.uid = Some(format!("stray-{name}"));
    pod.metadata.labels = of.metadata.labels.clone();
    pod.metadata.annotations = of.metadata.annotations.clone();
    pod.metadata.creation_timestamp = Some(Time(at(clock)));
    pod.status = of.status.clone();
    pod
}

fn controlled_by(pod: &mut Pod, kind: &str, name: &str, uid: &str) {
    pod.metadata.owner_references = Some(vec![OwnerReference {
        api_version: if kind == "CephOSD" {
            "ceph.elemental.net/v1alpha1"
        } else {
            "apps/v1"
        }
        .into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
}

fn deleted_names(plan: &Plan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::Delete { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

fn names(cluster: &Cluster) -> Vec<String> {
    cluster
        .pods
        .iter()
        .map(kube::ResourceExt::name_any)
        .collect()
}

#[test]
fn stray_copies_never_take_osd_pods_down_even_while_paused() {
    let mut cr = cr(
        UpdateDomain::Osd,
        &["node1"],
        &["/dev/sdb", "/dev/sdc", "/dev/sdd"],
        "a",
    );
    let mut cluster = converged(&cr);
    let ours = names(&cluster);
    cr.spec.paused = Some(true);
    // One stray per OSD: an invalid name, and valid-looking names that sort before ours.
    let strays = [
        stray(&cluster.pods[0], "debug-copy", 100),
        stray(&cluster.pods[1], "osd-node1-sdc-00000", 100),
        stray(&cluster.pods[2], "osd-node1-sdd-aaaaa", 100),
    ];
    cluster.clock = 100;
    cluster.pods.extend(strays);
    let plan = cluster.reconcile(&cr);
    assert_eq!(
        deleted_names(&plan),
        ["debug-copy", "osd-node1-sdc-00000", "osd-node1-sdd-aaaaa"]
    );
    assert!(creates(&plan).is_empty());
    for pod in &plan.pods {
        if ours.contains(&pod.name) {
            assert_eq!(pod.class, PodClass::UpToDate, "{}", pod.name);
        }
    }
    assert!(plan
        .pods
        .iter()
        .filter(|p| p.name.starts_with("osd-node1-sdc-0000") && p.name != ours[1])
        .all(|p| matches!(&p.class, PodClass::Invalid(why) if why.contains(&ours[1]))));
}

#[test]
fn among_adopted_pods_the_ready_one_then_the_oldest_is_kept() {
    let cr = cr(UpdateDomain::Osd, &["node1"], &["/dev/sdb"], "a");
    let hash = TemplateHash::of(&cr.spec.pod_template);
    // Reference-era pods: no controller reference.
    let era_pod = |name: &str, created: i64, ready: bool| {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ceph", "uid": name,
                "creationTimestamp": at(created).to_string(),
                "labels": {"ceph.elemental.net/owner": "CephOSD-ceph-osds"},
                "annotations": {"ceph.elemental.net/pod-template-hash": hash.as_str(),
                    "ceph.elemental.net/host": "node1", "ceph.elemental.net/data": "/dev/sdb",
                    "ceph.elemental.net/pod-state": "up-to-date"},
                "ownerReferences": [{"apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
                                     "name": "ceph-osds", "uid": "cr-uid"}]},
            "spec": {"containers": [{"name": "osd"}]}
        }))
        .expect("pod");
        set_ready(&mut pod, ready);
        pod
    };
    let cases = [
        // (pods, the one kept)
        (
            vec![
                era_pod("osd-node1-sdb-bbbbb", 10, false),
                era_pod("osd-node1-sdb-aaaaa", 20, true),
            ],
            "osd-node1-sdb-aaaaa",
        ),
        (
            vec![
                era_pod("osd-node1-sdb-aaaaa", 20, true),
                era_pod("osd-node1-sdb-bbbbb", 10, true),
            ],
            "osd-node1-sdb-bbbbb",
        ),
        (
            vec![
                era_pod("osd-node1-sdb-bbbbb", 10, true),
                era_pod("osd-node1-sdb-aaaaa", 10, true),
            ],
            "osd-node1-sdb-aaaaa",
        ),
    ];
    for (pods, kept) in cases {
        let plan = plan(
            &cr,
            &Observed::pods(&pods),
            &mut CountingSuffix::default(),
            at(100),
        );
        let deleted = deleted_names(&plan);
        assert_eq!(deleted.len(), 1, "{deleted:?}");
        assert_ne!(deleted[0], kept);
        assert!(creates(&plan).is_empty());
        assert!(
            patches(&plan).is_empty(),
            "the kept pod is adopted as it is"
        );
    }
}

use crate::crd::osd::CountingSuffix;

#[test]
fn pods_of_another_controller_are_never_touched_and_hold_their_disk() {
    let cr = cr(
        UpdateDomain::Host,
        &["node1"],
        &["/dev/sdb", "/dev/sdc"],
        "a",
    );
    let mut cluster = converged(&cr);
    // The pod of /dev/sdb is gone; a ReplicaSet's pod (our label, valid annotations, even a
    // name with the right prefix) runs that disk instead.
    let mut foreign = stray(&cluster.pods[0], "osd-node1-sdb-rs123", 5);
    controlled_by(&mut foreign, "ReplicaSet", "osd-node1-sdb-rs", "rs-uid");
    cluster.pods.remove(0);
    cluster.pods.push(foreign);
    // And one controlled by another CephOSD, for a disk this CR does not list.
    let mut other_cr = stray(&cluster.pods[0], "osd-node1-sdz-xxxxx", 5);
    controlled_by(&mut other_cr, "CephOSD", "ceph-osds", "an-older-uid");
    other_cr
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(labels::DATA.into(), "/dev/sdz".into());
    cluster.pods.push(other_cr);
    let before = names(&cluster);
    let mut told = 0;
    for round in 0..20 {
        cluster.clock += 1;
        let plan = cluster.reconcile(&cr);
        assert!(plan.actions.is_empty(), "round {round}: {:?}", plan.actions);
        assert_eq!(plan.summary.foreign, 2);
        told += event_reasons(&plan)
            .iter()
            .filter(|r| **r == "ForeignPod")
            .count();
        cluster.finish_terminations();
        cluster.make_all_ready();
    }
    assert_eq!(names(&cluster), before);
    assert_eq!(told, 2, "one event per foreign pod, not per reconcile");
    let status = cluster.status.clone().expect("status");
    assert_eq!(status.foreign, 2);
    assert_eq!(
        status.foreign_pods,
        ["osd-node1-sdb-rs123", "osd-node1-sdz-xxxxx"]
    );
    // Once the other controller's pod is gone, the OSD gets its own pod.
    cluster
        .pods
        .retain(|p| p.name_any() != "osd-node1-sdb-rs123");
    let plan = cluster.reconcile(&cr);
    assert_eq!(creates(&plan), ["node1:/dev/sdb"]);
}

#[test]
fn template_annotations_never_override_devices_and_cause_no_endless_replacement() {
    let mut cr = cr(UpdateDomain::Osd, &["node1"], &["/dev/sdb"], "a");
    cr.spec.pod_template["metadata"]["annotations"] = json!({
        "ceph.elemental.net/db": "/dev/evil-db",
        "ceph.elemental.net/wal": "/dev/evil-wal",
        "ceph.elemental.net/pod-state": "up-to-date",
    });
    let mut cluster = converged(&cr);
    let first = names(&cluster);
    assert_eq!(first.len(), 1);
    assert_eq!(annotation(&cluster.pods[0], labels::DB), None);
    assert_eq!(annotation(&cluster.pods[0], labels::WAL), None);
    for _ in 0..10 {
        let plan = cluster.reconcile(&cr);
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        let invalid = super::tests::condition(&plan, "InvalidSpec");
        assert_eq!(invalid.reason, "ForbiddenTemplateField");
        assert!(invalid
            .message
            .contains("metadata.annotations[ceph.elemental.net/db]"));
    }
    assert_eq!(names(&cluster), first, "never replaced");
}

#[test]
fn a_new_pod_waits_for_ready_even_if_the_template_says_up_to_date() {
    let mut cr = cr(
        UpdateDomain::Osd,
        &["node1"],
        &["/dev/sdb", "/dev/sdc"],
        "a",
    );
    let mut cluster = converged(&cr);
    cr.spec.pod_template = template("b");
    cr.spec.pod_template["metadata"]["annotations"] =
        json!({"ceph.elemental.net/pod-state": "up-to-date"});
    cluster.reconcile(&cr);
    cluster.finish_terminations();
    let plan = cluster.reconcile(&cr);
    assert_eq!(creates(&plan), ["node1:/dev/sdb"]);
    let plan = cluster.reconcile(&cr);
    assert_eq!(plan.summary.unready, 1, "the replacement gates the rollout");
    assert!(deletes(&plan).is_empty());
}

#[test]
fn spellings_of_one_disk_get_no_pod_and_a_warning() {
    let cr = {
        let mut cr = cr(
            UpdateDomain::Osd,
            &["node1"],
            &[
                "/dev/sdb",
                "/dev/sdb/",
                "/dev//sdb",
                "/dev/./sdb",
                "/dev/sdc",
            ],
            "a",
        );
        cr.spec.storage.push(crate::crd::StorageEntry {
            hosts: vec!["a76-h1".into(), "A76-H1".into()],
            osds: vec![crate::crd::OsdDevices {
                data: "/dev/sdd".into(),
                db: None,
                wal: None,
            }],
        });
        cr
    };
    let mut cluster = Cluster::default();
    let plan = cluster.reconcile(&cr);
    assert_eq!(creates(&plan), ["node1:/dev/sdc"]);
    let invalid = super::tests::condition(&plan, "InvalidSpec");
    assert_eq!(invalid.reason, "ConflictingDevices");
    assert!(invalid.message.contains("name one disk (node1:/dev/sdb)"));
    assert!(invalid.message.contains("name one disk (a76-h1:/dev/sdd)"));
    assert!(event_reasons(&plan).contains(&"InvalidSpec"));
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Error));
    cluster.make_all_ready();
    assert!(creates(&cluster.reconcile(&cr)).is_empty());
}

#[test]
fn respelling_a_disk_replaces_its_pod_only_after_the_old_one_is_gone() {
    let mut cr = cr(UpdateDomain::Osd, &["node1"], &["/dev/sdb"], "a");
    let mut cluster = converged(&cr);
    cr.spec.storage[0].osds[0].data = "/dev/sdb/".into();
    let plan = cluster.reconcile(&cr);
    assert_eq!(
        deletes(&plan),
        [("node1:/dev/sdb".to_owned(), DeleteReason::Superfluous)]
    );
    assert!(
        creates(&plan).is_empty(),
        "the old pod still holds the disk"
    );
    let plan = cluster.reconcile(&cr);
    assert!(creates(&plan).is_empty(), "terminating: still held");
    cluster.finish_terminations();
    assert_eq!(creates(&cluster.reconcile(&cr)), ["node1:/dev/sdb/"]);
}

#[test]
fn a_conflicting_osd_keeps_its_pod_exactly_as_it_is() {
    let mut cr = cr(
        UpdateDomain::Osd,
        &["node1"],
        &["/dev/sdb", "/dev/sdc"],
        "a",
    );
    let mut cluster = converged(&cr);
    let mut entry = cr.spec.storage[0].clone();
    entry.osds.truncate(1);
    entry.osds[0].db = Some("/dev/nvme0n1p1".into());
    cr.spec.storage.push(entry);
    cr.spec.pod_template = template("b");
    let sdb = cluster.pods[0].name_any();
    let mut replaced = Vec::new();
    for _ in 0..10 {
        let plan = cluster.reconcile(&cr);
        replaced.extend(plan.replacing.iter().map(ToString::to_string));
        for action in &plan.actions {
            let touches_sdb = match action {
                Action::Delete { name, .. }
                | Action::DeletePrePull { name, .. }
                | Action::PatchState { name, .. }
                | Action::LabelDomain { name, .. } => *name == sdb,
                Action::Create { key, .. } => key.to_string() == "node1:/dev/sdb",
                Action::DeleteReplicaSet { .. }
                | Action::RecordCephStep
                | Action::SetNoout { .. }
                | Action::ClearNoout { .. }
                | Action::MarkOut { .. }
                | Action::MarkIn { .. }
                | Action::WriteBudget { .. }
                | Action::DeleteBudget { .. }
                | Action::CreatePrePull { .. } => false,
            };
            assert!(!touches_sdb, "{action:?}");
        }
        cluster.finish_terminations();
        cluster.make_all_ready();
    }
    assert_eq!(replaced, ["node1:/dev/sdc"], "the other OSD rolls as usual");
    assert!(cluster.pods.iter().any(|p| p.name_any() == sdb));
}

#[test]
fn placement_and_finalizers_from_the_template_are_left_out() {
    let mut cr = cr(UpdateDomain::Osd, &["node1"], &["/dev/sdb"], "a");
    let spec = &mut cr.spec.pod_template;
    spec["metadata"]["finalizers"] = json!(["example.com/hold"]);
    spec["spec"]["nodeName"] = json!("node9");
    spec["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": "node9", "disk": "hdd"});
    spec["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
    let plan = plan(
        &cr,
        &Observed::pods(&[]),
        &mut CountingSuffix::default(),
        at(0),
    );
    let Some(Action::Create { pod, .. }) = plan.actions.first() else {
        panic!("expected a creation: {:?}", plan.actions)
    };
    let pod = serde_json::to_value(pod).expect("json");
    assert!(pod["metadata"].get("finalizers").is_none());
    assert!(pod["spec"].get("nodeName").is_none());
    assert_eq!(pod["spec"]["nodeSelector"], json!({"disk": "hdd"}));
    assert_eq!(
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"],
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node1"]}]}])
    );
    let message = &super::tests::condition(&plan, "InvalidSpec").message;
    for field in [
        "metadata.finalizers",
        "spec.nodeName",
        "spec.nodeSelector[kubernetes.io/hostname]",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ] {
        assert!(message.contains(field), "{field} in {message}");
    }
}

// --- strays and foreign pods under random event sequences ----------------------------------

#[derive(Clone, Debug)]
enum Event {
    Reconcile,
    FinishTerminations,
    Ready(usize),
    /// A copy of pod `.0`: 0 named `debug-copy-N`, 1 with a valid-looking name, 2 controlled
    /// by a ReplicaSet.
    Stray(usize, u8),
    EditTemplate(u8),
    DeleteByHand(usize),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => Just(Event::Reconcile),
        2 => Just(Event::FinishTerminations),
        3 => (0usize..10).prop_map(Event::Ready),
        2 => (0usize..10, 0u8..4).prop_map(|(i, k)| Event::Stray(i, k)),
        1 => (0u8..3).prop_map(Event::EditTemplate),
        1 => (0usize..10).prop_map(Event::DeleteByHand),
    ]
}

fn is_ours(pod: &Pod) -> bool {
    pod.owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == "cr-uid")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever strays and foreign pods appear: the operator never creates a pod for a disk a
    /// pod holds, never deletes a pod of another controller, never deletes its own pod as
    /// invalid, and converges to one pod per disk once the other controller is gone.
    #[test]
    fn strays_and_foreign_pods_never_cost_an_osd_pod(
        host_domain in any::<bool>(),
        events in prop::collection::vec(event(), 1..80),
    ) {
        let domain = if host_domain { UpdateDomain::Host } else { UpdateDomain::Osd };
        let mut cr = cr(domain, &["h1", "h2"], &["/dev/sdb", "/dev/sdc"], "0");
        let mut cluster = Cluster::default();
        let mut strays = 0;
        for event in events {
            cluster.clock += 1;
            match event {
                Event::Reconcile => {
                    let before = cluster.pods.clone();
                    let plan = cluster.reconcile(&cr);
                    for action in &plan.actions {
                        match action {
                            Action::Create { key, .. } => prop_assert!(
                                before.iter().all(|p| device_of(p) != Some(key.device_id())),
                                "created a second pod for {}", key
                            ),
                            Action::Delete { name, reason, .. } => {
                                let pod = before.iter().find(|p| p.name_any() == *name);
                                prop_assert!(pod.is_some_and(|p| {
                                    let foreign = p.owner_references().iter()
                                        .any(|o| o.controller == Some(true) && o.uid != "cr-uid");
                                    let ours_as_invalid = is_ours(p) && matches!(reason, DeleteReason::Invalid(_));
                                    !foreign && !ours_as_invalid
                                }), "deleted {} ({:?})", name, reason);
                            }
                            Action::PatchState { .. }
                            | Action::DeleteReplicaSet { .. }
                            | Action::RecordCephStep
                            | Action::SetNoout { .. }
                            | Action::ClearNoout { .. }
                            | Action::MarkOut { .. }
                            | Action::MarkIn { .. }
                            | Action::LabelDomain { .. }
                            | Action::WriteBudget { .. }
                            | Action::DeleteBudget { .. }
                            | Action::CreatePrePull { .. }
                            | Action::DeletePrePull { .. } => {}
                        }
                    }
                }
                Event::FinishTerminations => cluster.finish_terminations(),
                Event::Ready(i) => if let Some(p) = cluster.pods.get_mut(i) { set_ready(p, true) },
                Event::Stray(i, kind) => if let Some(source) = cluster.pods.get(i).cloned() {
                    strays += 1;
                    let prefix = device_of(&source).map(|_| {
                        OsdKey::new(
                            annotation(&source, labels::HOST).unwrap_or_default(),
                            annotation(&source, labels::DATA).unwrap_or_default(),
                        ).name_prefix()
                    }).unwrap_or_default();
                    let name = match kind {
                        0 => format!("debug-copy-{strays}"),
                        _ => format!("{prefix}s{strays:04}"),
                    };
                    let mut pod = stray(&source, &name, cluster.clock);
                    if kind == 2 {
                        controlled_by(&mut pod, "ReplicaSet", "rs", "rs-uid");
                    }
                    if kind == 3 {
                        // Another spelling of the same disk: a key the CR does not list.
                        if let Some(data) = pod.annotations_mut().get_mut(labels::DATA) {
                            *data = data.replacen('/', "//", 1);
                        }
                    }
                    cluster.pods.push(pod);
                },
                Event::EditTemplate(m) => cr.spec.pod_template = template(&m.to_string()),
                Event::DeleteByHand(i) => if let Some(p) = cluster.pods.get_mut(i) {
                    p.metadata.deletion_timestamp = Some(Time(at(0)));
                },
            }
        }
        // The other controller goes away; everything else converges.
        cluster.pods.retain(|p| p.owner_references().iter().all(|o| o.uid != "rs-uid"));
        cluster.settle(&cr);
        prop_assert_eq!(cluster.live().len(), 4);
        let devices: BTreeSet<_> = cluster.pods.iter().filter_map(device_of).collect();
        prop_assert_eq!(devices.len(), 4);
        // A stray with a valid name and no controller looks exactly like a pod of the
        // reference operator: it may be adopted. Invalid strays are gone.
        prop_assert!(cluster.pods.iter().all(|p| !p.name_any().starts_with("debug-copy")));
    }
}

// --- annotations edited by hand, disks shared with other CephOSDs ---------------------------

/// `pod` as the reference operator (or this one before it recorded devices) made it: the
/// device env vars read the annotations.
fn legacy(mut pod: Pod) -> Pod {
    for container in pod.spec.iter_mut().flat_map(|s| s.containers.iter_mut()) {
        for var in container.env.iter_mut().flatten() {
            if var.name.starts_with("OSD_") {
                let annotation = match var.name.as_str() {
                    "OSD_DEVICE" => "data",
                    "OSD_DB_DEVICE" => "db",
                    _ => "wal",
                };
                *var = serde_json::from_value(json!({"name": var.name, "valueFrom": {"fieldRef": {
                    "fieldPath": format!("metadata.annotations['ceph.elemental.net/{annotation}']")}}}))
                .expect("env var");
            }
        }
    }
    pod
}

fn named<'a>(cluster: &'a mut Cluster, name: &str) -> &'a mut Pod {
    cluster.pod_mut(name).expect("pod")
}

#[test]
fn an_edited_host_annotation_takes_no_pod_down_while_paused_and_one_in_its_turn() {
    for legacy_pods in [false, true] {
        let mut cr = cr(UpdateDomain::Osd, &["n1", "n2", "n3"], &["/dev/sdb"], "a");
        let mut cluster = converged(&cr);
        if legacy_pods {
            cluster.pods = cluster.pods.drain(..).map(legacy).collect();
        }
        let names = names(&cluster);
        cr.spec.paused = Some(true);
        // Two edited at once: the host of one, the data of another.
        annotate(named(&mut cluster, &names[1]), labels::HOST, "n5");
        annotate(named(&mut cluster, &names[2]), labels::DATA, "/dev/sdc");
        for _ in 0..3 {
            let plan = cluster.reconcile(&cr);
            assert!(
                plan.actions
                    .iter()
                    .all(|a| matches!(a, Action::PatchState { .. })),
                "legacy {legacy_pods}: {:?}",
                plan.actions
            );
            assert_eq!(plan.summary.out_of_date, 2, "legacy {legacy_pods}");
            assert_eq!(plan.status.phase, Some(crate::crd::Phase::Paused));
        }
        let warned = cluster.reconcile(&cr);
        assert!(event_reasons(&warned).is_empty() || !event_reasons(&warned).contains(&"Tampered"));
        // Unpaused: one OSD at a time, each successor only once its old pod is gone.
        cr.spec.paused = None;
        let plan = cluster.reconcile(&cr);
        assert_eq!(
            deletes(&plan),
            [("n2:/dev/sdb".to_owned(), DeleteReason::Replace)],
            "legacy {legacy_pods}"
        );
        assert!(creates(&plan).is_empty());
        let plan = cluster.reconcile(&cr);
        assert!(
            plan.actions.is_empty(),
            "still terminating: {:?}",
            plan.actions
        );
        cluster.finish_terminations();
        assert_eq!(creates(&cluster.reconcile(&cr)), ["n2:/dev/sdb"]);
        cluster.make_all_ready();
        let plan = cluster.reconcile(&cr);
        assert_eq!(
            deletes(&plan),
            [("n3:/dev/sdb".to_owned(), DeleteReason::Replace)]
        );
        cluster.settle(&cr);
        one_pod_per_disk(&cluster.pods).expect("one pod per disk");
        assert_eq!(cluster.live().len(), 3);
        assert!(cluster
            .pods
            .iter()
            .all(|p| annotation(p, labels::DATA) == Some("/dev/sdb")));
    }
}

#[test]
fn an_edited_pod_is_marked_out_of_date_once_with_a_warning() {
    let cr = cr(UpdateDomain::Osd, &["n1"], &["/dev/sdb"], "a");
    let mut cluster = converged(&cr);
    let name = names(&cluster).remove(0);
    annotate(named(&mut cluster, &name), labels::HOST, "n5");
    let mut cr_paused = cr.clone();
    cr_paused.spec.paused = Some(true);
    let plan = cluster.reconcile(&cr_paused);
    assert_eq!(
        patches(&plan),
        [("n1:/dev/sdb".to_owned(), PodState::OutOfDate)]
    );
    let warning = plan
        .events
        .iter()
        .find(|e| e.reason == EventReason::Tampered)
        .expect("a Tampered event");
    assert!(warning.warning);
    assert!(
        warning.note.contains("n5:/dev/sdb") && warning.note.contains("n1:/dev/sdb"),
        "{}",
        warning.note
    );
    let again = cluster.reconcile(&cr_paused);
    assert!(!event_reasons(&again).contains(&"Tampered"));
}

#[test]
fn a_legacy_pod_edited_to_an_unlisted_spelling_still_holds_its_disk() {
    // A pod made before the record, its data annotation edited to a path with the same last
    // component: its annotations agree with its name, but the CR does not list that OSD.
    let cr = cr(UpdateDomain::Osd, &["n1"], &["/dev/sdb"], "a");
    let mut cluster = converged(&cr);
    cluster.pods = cluster.pods.drain(..).map(legacy).collect();
    let name = names(&cluster).remove(0);
    annotate(named(&mut cluster, &name), labels::DATA, "/dev/disk/x/sdb");
    let plan = cluster.reconcile(&cr);
    assert!(creates(&plan).is_empty(), "{:?}", plan.actions);
    // It goes in its turn as a pod of an OSD no longer listed; the OSD's pod follows.
    assert_eq!(
        deletes(&plan),
        [("n1:/dev/disk/x/sdb".to_owned(), DeleteReason::Superfluous)]
    );
    assert!(creates(&cluster.reconcile(&cr)).is_empty(), "terminating");
    cluster.finish_terminations();
    assert_eq!(creates(&cluster.reconcile(&cr)), ["n1:/dev/sdb"]);
}

#[test]
fn a_pod_whose_annotations_are_gone_is_still_its_osds_pod() {
    let cr = cr(UpdateDomain::Osd, &["n1", "n2"], &["/dev/sdb"], "a");
    for legacy_pods in [false, true] {
        let mut cluster = converged(&cr);
        if legacy_pods {
            cluster.pods = cluster.pods.drain(..).map(legacy).collect();
        }
        let name = names(&cluster).remove(0);
        named(&mut cluster, &name).metadata.annotations = None;
        let plan = cluster.reconcile(&cr);
        assert!(
            creates(&plan).is_empty(),
            "legacy {legacy_pods}: {:?}",
            plan.actions
        );
        assert_eq!(
            deletes(&plan),
            [("n1:/dev/sdb".to_owned(), DeleteReason::Replace)],
            "legacy {legacy_pods}"
        );
    }
}

#[test]
fn pods_of_other_cephosds_hold_their_disks() {
    let cr = cr(UpdateDomain::Osd, &["n1", "n2"], &["/dev/sdb"], "a");
    let other = {
        let mut other = super::tests::cr(UpdateDomain::Osd, &["n1"], &["/dev/sdb"], "z");
        other.metadata.name = Some("other".into());
        other.metadata.uid = Some("other-uid".into());
        converged(&other).pods
    };
    let mut observed = Observed::pods(&[]);
    observed.others = other.iter().collect();
    let first = plan(&cr, &observed, &mut CountingSuffix::default(), at(0));
    assert_eq!(creates(&first), ["n2:/dev/sdb"]);
    assert_eq!(
        first.halted.as_deref(),
        None,
        "nothing to roll out, so nothing halted"
    );
    let missing = first.status.conditions.iter().find(|c| c.type_ == "Ready");
    assert!(missing.is_some_and(|c| c.status == "False"));
    // With a rollout waiting, the halt names the pod that holds the disk.
    let mut converged_here = Cluster::default();
    converged_here.settle(&super::tests::cr(
        UpdateDomain::Osd,
        &["n2"],
        &["/dev/sdb"],
        "a",
    ));
    let pods = converged_here.pods.clone();
    let newer = super::tests::cr(UpdateDomain::Osd, &["n1", "n2"], &["/dev/sdb"], "b");
    let mut observed = Observed::pods(&pods);
    observed.others = other.iter().collect();
    let second = plan(&newer, &observed, &mut CountingSuffix::default(), at(0));
    assert!(creates(&second).is_empty());
    let halted = second.halted.expect("halted");
    assert!(
        halted.contains("its disk is held by pod ceph/osd-n1-sdb-")
            && halted.contains("of CephOSD ceph/other"),
        "{halted}"
    );
}

#[test]
fn a_disk_an_older_cephosd_claims_is_neither_created_nor_replaced() {
    let cr = cr(UpdateDomain::Osd, &["n1", "n5"], &["/dev/sdb"], "a");
    let mut observed = Observed::pods(&[]);
    observed
        .claimed
        .insert(OsdKey::new("n1", "/dev/sdb"), "ceph/c".into());
    let first = plan(&cr, &observed, &mut CountingSuffix::default(), at(0));
    assert_eq!(creates(&first), ["n5:/dev/sdb"]);
    let invalid = super::tests::condition(&first, "InvalidSpec");
    assert_eq!(invalid.reason, "DiskClaimed");
    assert!(
        invalid.message.contains("n1:/dev/sdb") && invalid.message.contains("CephOSD ceph/c"),
        "{}",
        invalid.message
    );
    assert_eq!(first.status.phase, Some(crate::crd::Phase::Error));
    // A pod it has for that disk (from before the claim was seen) is left as it is.
    let mut cluster = converged(&cr);
    let newer = super::tests::cr(UpdateDomain::Osd, &["n1", "n5"], &["/dev/sdb"], "b");
    let mut replaced = Vec::new();
    for _ in 0..6 {
        let mut observed = Observed::new(&cluster.pods, &cluster.replica_sets);
        observed
            .claimed
            .insert(OsdKey::new("n1", "/dev/sdb"), "ceph/c".into());
        let mut newer = newer.clone();
        newer.status = cluster.status.clone();
        let planned = plan(&newer, &observed, &mut CountingSuffix::default(), at(0));
        replaced.extend(planned.replacing.iter().map(ToString::to_string));
        cluster.apply(&planned);
        cluster.finish_terminations();
        cluster.make_all_ready();
    }
    assert_eq!(replaced, ["n5:/dev/sdb"]);
}

#[derive(Clone, Debug)]
enum Tamper {
    Reconcile,
    FinishTerminations,
    Ready(usize),
    Host(usize, u8),
    Data(usize, u8),
    DropAnnotations(usize),
    Pause(bool),
}

fn tamper() -> impl Strategy<Value = Tamper> {
    prop_oneof![
        5 => Just(Tamper::Reconcile),
        2 => Just(Tamper::FinishTerminations),
        3 => (0usize..10).prop_map(Tamper::Ready),
        1 => (0usize..10, 0u8..3).prop_map(|(i, h)| Tamper::Host(i, h)),
        1 => (0usize..10, 0u8..3).prop_map(|(i, d)| Tamper::Data(i, d)),
        1 => (0usize..10).prop_map(Tamper::DropAnnotations),
        1 => any::<bool>().prop_map(Tamper::Pause),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever an admin writes into the host and data annotations of running pods (old pods
    /// and pods with the operator's record alike): never two pods on the disk a pod was
    /// created for, never a pod taken down while paused, never more update domains down than
    /// `maxUnavailable`; and once the edits stop, one pod per OSD with its own annotations.
    #[test]
    fn annotation_edits_never_put_two_pods_on_one_disk_nor_exceed_the_budget(
        host_domain in any::<bool>(),
        legacy_pods in any::<bool>(),
        max_unavailable in 1i32..3,
        events in prop::collection::vec(tamper(), 1..80),
    ) {
        let domain = if host_domain { UpdateDomain::Host } else { UpdateDomain::Osd };
        let hosts = ["n1", "n2", "n3"];
        let datas = ["/dev/sdb", "/dev/sdc"];
        let mut cr = cr(domain, &hosts, &datas, "0");
        cr.spec.max_unavailable = Some(max_unavailable);
        let mut cluster = converged(&cr);
        if legacy_pods {
            cluster.pods = cluster.pods.drain(..).map(legacy).collect();
        }
        // The disk each pod was created for, by uid: what its daemon runs.
        let mut runs: BTreeMap<String, crate::crd::osd::DeviceId> = BTreeMap::new();
        let learn = |cluster: &Cluster, runs: &mut BTreeMap<String, crate::crd::osd::DeviceId>| {
            for pod in &cluster.pods {
                if let (Some(uid), Some(disk)) = (pod.uid(), device_of(pod)) {
                    runs.entry(uid).or_insert(disk);
                }
            }
        };
        learn(&cluster, &mut runs);
        let domain_of = |disk: &crate::crd::osd::DeviceId| match domain {
            UpdateDomain::Osd => disk.to_string(),
            UpdateDomain::Host | UpdateDomain::Topology => disk.host.clone(),
        };
        for event in events {
            cluster.clock += 1;
            let edit = |cluster: &mut Cluster, i: usize, key: &str, value: &str| {
                if let Some(p) = cluster.pods.get_mut(i) { annotate(p, key, value) }
            };
            match event {
                Tamper::Reconcile => {
                    let plan = cluster.reconcile(&cr);
                    if cr.spec.is_paused() {
                        let deleted: Vec<&Action> = plan.actions.iter()
                            .filter(|a| matches!(a, Action::Delete { .. })).collect();
                        prop_assert!(deleted.is_empty(), "paused, yet {:?}", deleted);
                    }
                    learn(&cluster, &mut runs);
                    // Domains with a desired disk whose daemon is not running Ready.
                    let up: BTreeSet<crate::crd::osd::DeviceId> = cluster.pods.iter()
                        .filter(|p| p.metadata.deletion_timestamp.is_none())
                        .filter(|p| p.status.as_ref().and_then(|s| s.conditions.as_ref())
                            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True")))
                        .filter_map(|p| runs.get(&p.uid()?).cloned())
                        .collect();
                    let down: BTreeSet<String> = hosts.iter()
                        .flat_map(|h| datas.iter().map(move |d| OsdKey::new(*h, *d).device_id()))
                        .filter(|d| !up.contains(d))
                        .map(|d| domain_of(&d))
                        .collect();
                    prop_assert!(
                        down.len() <= usize::try_from(max_unavailable).unwrap_or(1),
                        "{} domains down: {:?}", down.len(), down
                    );
                }
                Tamper::FinishTerminations => cluster.finish_terminations(),
                Tamper::Ready(i) => if let Some(p) = cluster.pods.get_mut(i) { set_ready(p, true) },
                Tamper::Host(i, h) => edit(&mut cluster, i, labels::HOST, ["n1", "n2", "n9"][usize::from(h)]),
                Tamper::Data(i, d) => edit(&mut cluster, i, labels::DATA, ["/dev/sdb", "/dev/sdc", "/dev/x/sdb"][usize::from(d)]),
                Tamper::DropAnnotations(i) => if let Some(p) = cluster.pods.get_mut(i) {
                    p.metadata.annotations = None;
                },
                Tamper::Pause(paused) => cr.spec.paused = Some(paused),
            }
            // Never two pods (terminating included) on the disk they were created for.
            let mut disks = BTreeSet::new();
            for pod in &cluster.pods {
                if let Some(disk) = pod.uid().and_then(|uid| runs.get(&uid)) {
                    prop_assert!(disks.insert(disk.clone()), "two pods run {}", disk);
                }
            }
        }
        cr.spec.paused = None;
        let plans = cluster.settle(&cr);
        if cluster.live().len() != hosts.len() * datas.len() {
            // The one halt that needs an admin: a pod made before the record, whose data
            // annotation names another OSD's disk, holds that disk (its daemon would open it
            // at its next start) while its own turn waits for that OSD: both stay as they are
            // and the status names the pod. The admin restores the annotation.
            let halted = plans.last().and_then(|p| p.halted.clone()).unwrap_or_default();
            prop_assert!(legacy_pods && halted.contains("still holds its disk"), "{}", halted);
            for pod in &mut cluster.pods {
                if let Some(disk) = pod.uid().and_then(|uid| runs.get(&uid)) {
                    annotate(pod, labels::HOST, &disk.host);
                    annotate(pod, labels::DATA, &disk.data);
                }
            }
            cluster.settle(&cr);
        }
        learn(&cluster, &mut runs);
        prop_assert_eq!(cluster.live().len(), hosts.len() * datas.len());
        for pod in &cluster.pods {
            let uid = pod.uid().unwrap_or_default();
            let annotated = device_of(pod);
            prop_assert_eq!(annotated.as_ref(), runs.get(&uid), "{}", pod.name_any());
        }
    }
}
