//! Strays and foreign pods under random event sequences: a pod the operator does not own
//! is never taken down.

use super::*;

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
                            | Action::DestroyOsd { .. }
                            | Action::RequireOsdRelease { .. }
                            | Action::LabelDomain { .. }
                            | Action::LetGo { .. }
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
