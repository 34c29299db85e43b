//! Planner tests for the safety rules: stray pods, pods of other controllers, template fields
//! the operator owns, spellings of one disk, and OSDs the spec is ambiguous about; beside them
//! strays under random events (`strays_under_events`) and pods edited by hand (`hand_edits`).

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
                | Action::LetGo { name, .. }
                | Action::LabelDomain { name, .. } => *name == sdb,
                Action::Create { key, .. } => key.to_string() == "node1:/dev/sdb",
                Action::DeleteReplicaSet { .. }
                | Action::RecordCephStep
                | Action::SetNoout { .. }
                | Action::ClearNoout { .. }
                | Action::RequireOsdRelease { .. }
                | Action::MarkOut { .. }
                | Action::MarkIn { .. }
                | Action::DestroyOsd { .. }
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

mod hand_edits;
mod strays_under_events;
