//! The planner's invariants under random event sequences (pods failing, deleted, made
//! Ready, the template changed): a rollout step takes down the out-of-date pods of at most
//! one domain, and only while no domain is down.

use super::*;

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
