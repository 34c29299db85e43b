//! Planner tests for the migration off the Ansible operator's ReplicaSet era: each such
//! ReplicaSet stands for its OSD and is replaced by the rollout, one update domain at a time,
//! through the ReplicaSet (never its pod), never two pods on one disk.

use super::*;
use crate::crd::UpdateDomain;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;
use std::collections::BTreeSet;

/// A ReplicaSet as the Ansible operator's v0.6 made it for `host:data` (section "ReplicaSet
/// era" of the README): owner label, host/data annotations, a non-controller ownerReference to
/// the CephOSD, a template whose pod carries the annotations but no pod-template-hash.
fn era_replica_set(host: &str, data: &str, serial: u32) -> ReplicaSet {
    let name = format!("{}r{serial:04}", OsdKey::new(host, data).name_prefix());
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": "ceph", "uid": format!("rs-uid-{serial}"),
            "creationTimestamp": at(0).to_string(),
            "labels": {"role": "osd", "ceph.elemental.net/owner": "CephOSD-ceph-osds"},
            "annotations": {"ceph.elemental.net/template-hash": "0123456789abcdef",
                "ceph.elemental.net/host": host, "ceph.elemental.net/data": data,
                "ceph.elemental.net/state": "up-to-date"},
            "ownerReferences": [{"apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
                                 "name": "ceph-osds", "uid": "cr-uid"}]
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"ceph.elemental.net/osd": name,
                                         "ceph.elemental.net/template-hash": "0123456789abcdef"}},
            "template": {
                "metadata": {
                    "labels": {"role": "osd", "ceph.elemental.net/owner": "CephOSD-ceph-osds",
                               "ceph.elemental.net/osd": name,
                               "ceph.elemental.net/template-hash": "0123456789abcdef"},
                    "annotations": {"ceph.elemental.net/host": host, "ceph.elemental.net/data": data}
                },
                "spec": {"containers": [{"name": "osd", "image": "ceph"}], "restartPolicy": "Always"}
            }
        }
    }))
    .expect("replica set")
}

fn at(seconds: i64) -> Timestamp {
    super::tests::at(seconds)
}

/// A cluster as v0.6 left it: one ReplicaSet per OSD, each with a Ready pod.
fn era_cluster(hosts: &[&str], datas: &[&str]) -> Cluster {
    let mut cluster = Cluster::default();
    let mut serial = 0;
    for host in hosts {
        for data in datas {
            serial += 1;
            cluster
                .replica_sets
                .push(era_replica_set(host, data, serial));
        }
    }
    cluster.run_replica_set_controller();
    cluster.make_all_ready();
    cluster
}

fn replica_set_deletions(plan: &Plan) -> Vec<(String, DeleteReason)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::DeleteReplicaSet { key, reason, .. } => Some((
                key.as_ref().map(ToString::to_string).unwrap_or_default(),
                reason.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn pod_deletions(plan: &Plan) -> usize {
    plan.actions
        .iter()
        .filter(|a| matches!(a, Action::Delete { .. }))
        .count()
}

/// Update domains without a Ready pod right now (a ReplicaSet's pod counts).
fn domains_down(cluster: &Cluster, cr: &CephOsd) -> BTreeSet<String> {
    let desired = crate::crd::desired::desired_osds(&cr.spec).osds;
    desired
        .keys()
        .filter(|key| {
            !cluster.pods.iter().any(|p| {
                device_of(p) == Some(key.device_id())
                    && p.metadata.deletion_timestamp.is_none()
                    && crate::pod::pod_status::ready_since(p).is_some()
            })
        })
        .map(|key| crate::crd::update_domain::domain_id(key, cr.spec.update_domain))
        .collect()
}

#[test]
fn the_first_reconcile_only_reports_the_replica_sets() {
    let cr = cr(
        UpdateDomain::Host,
        &["h1", "h2"],
        &["/dev/sdb", "/dev/sdc"],
        "a",
    );
    let mut cluster = era_cluster(&["h1", "h2"], &["/dev/sdb", "/dev/sdc"]);
    cluster.status = None;
    let first = cluster.reconcile(&cr);
    assert_eq!(first.summary.migrating, 4);
    assert_eq!(first.summary.out_of_date, 4);
    assert_eq!(
        first.summary.foreign, 0,
        "their pods are expected, not foreign"
    );
    assert!(creates(&first).is_empty());
    assert_eq!(
        pod_deletions(&first),
        0,
        "a ReplicaSet's pod is never deleted"
    );
    assert!(!event_reasons(&first).contains(&"Adopted"));
    assert!(!event_reasons(&first).contains(&"ForeignPod"));
    assert_eq!(
        replica_set_deletions(&first),
        [
            ("h1:/dev/sdb".to_owned(), DeleteReason::Replace),
            ("h1:/dev/sdc".to_owned(), DeleteReason::Replace)
        ],
        "the first host is replaced"
    );
    let migrating = super::tests::condition(&first, "Migrating");
    assert_eq!(migrating.status, "True");
    assert!(migrating.message.starts_with("4 OSDs"));
    assert_eq!(first.status.migrating, 4);
}

#[test]
fn migration_is_a_rolling_restart_one_domain_at_a_time() {
    for domain in [UpdateDomain::Host, UpdateDomain::Osd] {
        let cr = cr(domain, &["h1", "h2"], &["/dev/sdb", "/dev/sdc"], "a");
        let mut cluster = era_cluster(&["h1", "h2"], &["/dev/sdb", "/dev/sdc"]);
        let mut order = Vec::new();
        for _ in 0..200 {
            let plan = cluster.reconcile(&cr);
            let hosts: BTreeSet<String> = plan.replacing.iter().map(|k| k.host.clone()).collect();
            order.extend(match domain {
                UpdateDomain::Host | UpdateDomain::Topology => hosts.into_iter().collect(),
                UpdateDomain::Osd => plan
                    .replacing
                    .iter()
                    .map(|k| k.host.clone())
                    .collect::<Vec<_>>(),
            });
            assert_eq!(pod_deletions(&plan), 0);
            one_pod_per_disk(&cluster.pods)
                .map_err(|e| format!("{domain:?}: {e}"))
                .expect("safe");
            assert!(domains_down(&cluster, &cr).len() <= 1, "{domain:?}");
            if plan.actions.is_empty() && plan.summary.migrating == 0 && plan.summary.unready == 0 {
                break;
            }
            // Reconciled again before the garbage collector reached the ReplicaSet's pod.
            let again = cluster.reconcile(&cr);
            assert!(
                again.replacing.is_empty(),
                "{domain:?}: {:?}",
                again.replacing
            );
            cluster.run_garbage_collector();
            one_pod_per_disk(&cluster.pods).expect("safe");
            assert!(domains_down(&cluster, &cr).len() <= 1, "{domain:?}");
            cluster.finish_terminations();
            one_pod_per_disk(&cluster.pods).expect("safe");
            cluster.run_replica_set_controller();
            cluster.make_all_ready();
        }
        assert!(
            cluster.replica_sets.is_empty(),
            "{domain:?}: no ReplicaSet left"
        );
        assert_eq!(cluster.live().len(), 4);
        assert!(cluster
            .pods
            .iter()
            .all(|p| controller_uid(p).as_deref() == Some("cr-uid")));
        let expected: Vec<&str> = match domain {
            UpdateDomain::Host | UpdateDomain::Topology => vec!["h1", "h2"],
            UpdateDomain::Osd => vec!["h1", "h1", "h2", "h2"],
        };
        assert_eq!(order, expected, "{domain:?}: in the documented order");
        let status = cluster.status.clone().expect("status");
        assert_eq!(status.migrating, 0);
        assert_eq!(status.phase, Some(crate::crd::Phase::Ready));
    }
}

#[test]
fn a_replica_set_being_deleted_keeps_its_domain_down_until_its_pod_is_gone() {
    let cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = era_cluster(&["h1"], &["/dev/sdb", "/dev/sdc"]);
    let first = cluster.reconcile(&cr);
    assert_eq!(
        replica_set_deletions(&first),
        [("h1:/dev/sdb".to_owned(), DeleteReason::Replace)]
    );
    // The ReplicaSet is terminating; the garbage collector has not reached its Ready pod.
    let second = cluster.reconcile(&cr);
    assert!(
        replica_set_deletions(&second).is_empty(),
        "{:?}",
        second.actions
    );
    assert!(creates(&second).is_empty());
    assert_eq!(
        second.halted.as_deref(),
        Some("waiting for OSD h1:/dev/sdb to have a running pod")
    );
}

#[test]
fn a_paused_migration_touches_nothing_and_says_how_many_wait() {
    let mut cr = cr(UpdateDomain::Host, &["h1", "h2"], &["/dev/sdb"], "a");
    cr.spec.paused = Some(true);
    let mut cluster = era_cluster(&["h1", "h2"], &["/dev/sdb"]);
    for _ in 0..5 {
        let plan = cluster.reconcile(&cr);
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert_eq!(plan.status.migrating, 2);
        assert_eq!(plan.status.phase, Some(crate::crd::Phase::Paused));
    }
}

#[test]
fn superfluous_invalid_and_duplicate_replica_sets_are_deleted_through_the_replica_set() {
    let cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut cluster = era_cluster(&["h1"], &["/dev/sdb", "/dev/sdz"]);
    // A second ReplicaSet for /dev/sdb (younger, its pod not Ready), and one without
    // annotations.
    let mut second = era_replica_set("h1", "/dev/sdb", 7);
    second.metadata.creation_timestamp = Some(Time(at(5)));
    let mut bare = era_replica_set("h1", "/dev/sdq", 8);
    bare.metadata.annotations = None;
    cluster.replica_sets.extend([second, bare]);
    let plan = cluster.reconcile(&cr);
    let deleted = replica_set_deletions(&plan);
    assert!(deleted.iter().any(|(k, r)| k == "h1:/dev/sdb"
        && matches!(r, DeleteReason::Invalid(why) if why.contains("h1-sdb-r0001"))));
    assert!(deleted.iter().any(|(k, r)| k.is_empty()
        && matches!(r, DeleteReason::Invalid(why) if why.contains("annotation"))));
    // The OSD no longer in the spec runs a daemon: its ReplicaSet goes in its domain's turn,
    // after the OSD that stays (h1:/dev/sdb sorts first).
    assert!(deleted.contains(&("h1:/dev/sdb".to_owned(), DeleteReason::Replace)));
    assert!(!deleted.iter().any(|(k, _)| k == "h1:/dev/sdz"));
    assert_eq!(plan.status.superfluous, 1);
    assert_eq!(pod_deletions(&plan), 0);
    assert!(creates(&plan).is_empty());
    let mut removed = false;
    for plan in cluster.settle(&cr) {
        removed |= replica_set_deletions(&plan)
            .contains(&("h1:/dev/sdz".to_owned(), DeleteReason::Superfluous));
    }
    assert!(removed);
    assert!(cluster.replica_sets.is_empty());
}

#[test]
fn a_replica_set_without_a_pod_still_holds_its_disk() {
    let cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut cluster = Cluster::default();
    cluster
        .replica_sets
        .push(era_replica_set("h1", "/dev/sdb", 1));
    // Its controller has not created the pod yet: ours must not be created beside it.
    let mut cr_paused = cr.clone();
    cr_paused.spec.paused = Some(true);
    assert!(creates(&cluster.reconcile(&cr_paused)).is_empty());
    // Unpaused, it is replaced: deleted first, our pod only once it is gone.
    let plan = cluster.reconcile(&cr);
    assert_eq!(
        replica_set_deletions(&plan),
        [("h1:/dev/sdb".to_owned(), DeleteReason::Replace)]
    );
    assert!(creates(&plan).is_empty());
    assert!(
        creates(&cluster.reconcile(&cr)).is_empty(),
        "still terminating"
    );
    cluster.finish_terminations();
    let plan = cluster.reconcile(&cr);
    assert_eq!(creates(&plan), ["h1:/dev/sdb"]);
    assert!(matches!(
        plan.actions.first(),
        Some(Action::Create {
            reason: CreateReason::Replacement,
            ..
        })
    ));
}

#[test]
fn a_replica_set_of_another_controller_is_left_alone() {
    let cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut cluster = era_cluster(&["h1"], &["/dev/sdb"]);
    cluster.replica_sets[0].metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "someone".into(),
            uid: "dep-uid".into(),
            controller: Some(true),
            block_owner_deletion: None,
        },
    ]);
    for _ in 0..3 {
        let plan = cluster.reconcile(&cr);
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert_eq!(plan.summary.foreign, 1, "its pod is reported");
    }
}

// --- an operator killed at any point -------------------------------------------------------

#[derive(Clone, Debug)]
enum Event {
    /// A reconcile whose actions are applied only up to this many (the operator is killed
    /// after them); `usize::MAX` applies all.
    Reconcile(usize),
    FinishTerminations,
    GarbageCollector,
    /// The garbage collector removes a ReplicaSet being deleted before its pods (its graph
    /// did not know them yet).
    ReplicaSetsVanish,
    ReplicaSetController,
    Ready(usize),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        3 => Just(Event::Reconcile(usize::MAX)),
        2 => (0usize..3).prop_map(Event::Reconcile),
        2 => Just(Event::FinishTerminations),
        2 => Just(Event::GarbageCollector),
        1 => Just(Event::ReplicaSetsVanish),
        2 => Just(Event::ReplicaSetController),
        3 => (0usize..10).prop_map(Event::Ready),
    ]
}

impl Cluster {
    /// A reconcile killed after `applied` actions: what it planned beyond is lost, as is the
    /// status it would have written (the plan's status is only written after every action).
    fn reconcile_killed_after(&mut self, cr: &CephOsd, applied: usize) {
        let status = self.status.clone();
        let (pods, replica_sets) = (self.pods.clone(), self.replica_sets.clone());
        let observed = Observed::new(&pods, &replica_sets);
        let mut cr = cr.clone();
        cr.status = status.clone();
        let plan = plan(
            &cr,
            &observed,
            &mut crate::crd::osd::CountingSuffix::default(),
            at(self.clock),
        );
        let mut partial = plan.clone();
        partial.actions.truncate(applied);
        self.apply(&partial);
        self.status = status;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Killed anywhere, restarted, whatever the ReplicaSet controller does meanwhile: never two
    /// pods on one disk, never more domains down than allowed, never a second replacement of
    /// an OSD already migrated, and it finishes.
    #[test]
    fn migration_survives_being_killed_anywhere(
        host_domain in any::<bool>(),
        events in prop::collection::vec(event(), 1..100),
    ) {
        let domain = if host_domain { UpdateDomain::Host } else { UpdateDomain::Osd };
        let cr = cr(domain, &["h1", "h2"], &["/dev/sdb", "/dev/sdc"], "a");
        let mut cluster = era_cluster(&["h1", "h2"], &["/dev/sdb", "/dev/sdc"]);
        for event in events {
            cluster.clock += 1;
            match event {
                Event::Reconcile(usize::MAX) => { cluster.reconcile(&cr); }
                Event::Reconcile(n) => cluster.reconcile_killed_after(&cr, n),
                Event::FinishTerminations => cluster.finish_terminations(),
                Event::GarbageCollector => cluster.run_garbage_collector(),
                Event::ReplicaSetsVanish => cluster
                    .replica_sets
                    .retain(|rs| rs.metadata.deletion_timestamp.is_none()),
                Event::ReplicaSetController => cluster.run_replica_set_controller(),
                Event::Ready(i) => if let Some(p) = cluster.pods.get_mut(i) {
                    super::tests::set_ready(p, true);
                },
            }
            prop_assert!(one_pod_per_disk(&cluster.pods).is_ok(), "{:?}", one_pod_per_disk(&cluster.pods));
            prop_assert!(domains_down(&cluster, &cr).len() <= 1, "{:?}", domains_down(&cluster, &cr));
        }
        let ours_before: BTreeSet<String> = cluster.pods.iter()
            .filter(|p| controller_uid(p).as_deref() == Some("cr-uid"))
            .map(kube::ResourceExt::name_any)
            .collect();
        cluster.settle(&cr);
        prop_assert!(cluster.replica_sets.is_empty());
        prop_assert_eq!(cluster.live().len(), 4);
        // Every pod of ours made before is still there: none was replaced twice.
        let now: BTreeSet<String> = cluster.pods.iter().map(kube::ResourceExt::name_any).collect();
        prop_assert!(ours_before.iter().all(|n| now.contains(n)), "{:?} vs {:?}", ours_before, now);
    }
}
