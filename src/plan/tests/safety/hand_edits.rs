//! Annotations edited by hand and disks shared with other CephOSDs: an edited pod is marked
//! out of date once, a legacy or annotation-less pod still holds its disk, and a disk another
//! CephOSD claims is neither created nor replaced.

use super::*;

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
