//! Planner tests of `partition` and the canary: where the rollout stops, what it says there,
//! and that the cut is never crossed nor the order changed (and `paused` wins).

use super::*;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

const HOSTS: [&str; 5] = ["h1", "h2", "h3", "h4", "h5"];

fn hosts_cr(marker: &str) -> CephOsd {
    cr(
        UpdateDomain::Host,
        &HOSTS,
        &["/dev/sdb", "/dev/sdc"],
        marker,
    )
}

/// The hosts whose pods run the template of `cr`.
fn updated_hosts(cluster: &Cluster, cr: &CephOsd) -> Vec<String> {
    let hash = TemplateHash::of(&cr.spec.pod_template).to_string();
    let mut hosts: Vec<String> = (cluster.live().into_iter())
        .filter(|p| annotation(p, labels::TEMPLATE_HASH) == Some(hash.as_str()))
        .filter_map(|p| annotation(p, labels::HOST).map(str::to_owned))
        .collect();
    hosts.dedup();
    hosts
}

/// Settles `cluster` on `cr`, returning the domains each plan started, in order.
fn started(cluster: &mut Cluster, cr: &CephOsd) -> (Vec<String>, Plan) {
    let plans = cluster.settle(cr);
    let starts = plans.iter().flat_map(|p| p.starting.clone()).collect();
    (starts, plans.into_iter().last().expect("a plan"))
}

#[test]
fn a_partition_holds_the_last_out_of_date_hosts_and_says_so() {
    let mut cluster = converged(&hosts_cr("a"));
    let mut next = hosts_cr("b");
    next.spec.partition = Some(IntOrString::Int(2));
    let (starts, last) = started(&mut cluster, &next);
    assert_eq!(starts, ["h1", "h2", "h3"]);
    assert_eq!(updated_hosts(&cluster, &next), ["h1", "h2", "h3"]);
    assert_condition(
        &last,
        "Progressing",
        "False",
        "Partitioned",
        "3 of 5 hosts updated",
    );
    assert_eq!(last.status.expected_updated_domains, Some(3));
    assert_eq!(
        last.held.keys().collect::<Vec<_>>(),
        ["h4", "h5"],
        "the held domains"
    );
    let progress = last.status.rollout.clone().expect("measured");
    assert_eq!((progress.domains_done, progress.domains_held), (3, 2));
    // A percentage rounds up: 30% of 5 hosts holds 2; then 0 lets the rest go.
    next.spec.partition = Some(IntOrString::String("30%".into()));
    assert!(started(&mut cluster, &next).0.is_empty());
    next.spec.partition = Some(IntOrString::Int(1));
    assert_eq!(started(&mut cluster, &next).0, ["h4"]);
    next.spec.partition = None;
    let (starts, last) = started(&mut cluster, &next);
    assert_eq!(starts, ["h5"]);
    assert_says(&last, "Progressing", "Complete", "every OSD");
    assert_eq!(last.status.expected_updated_domains, Some(5));
}

#[test]
fn a_canary_holds_until_its_template_hash_is_promoted() {
    let mut cluster = converged(&hosts_cr("a"));
    let mut next = hosts_cr("b");
    next.spec.canary = Some(IntOrString::Int(1));
    let hash = TemplateHash::of(&next.spec.pod_template).to_string();
    let (starts, last) = started(&mut cluster, &next);
    assert_eq!(starts, ["h1"]);
    assert_condition(
        &last,
        "Progressing",
        "False",
        "CanaryWaiting",
        &format!("1 of 5 hosts updated; promote {hash} to continue"),
    );
    assert_eq!(last.status.expected_updated_domains, Some(1));
    // Promoting another hash releases nothing.
    next.spec.promoted_template_hash = Some("0000000000".into());
    assert!(started(&mut cluster, &next).0.is_empty());
    next.spec.promoted_template_hash = Some(hash.clone());
    let (starts, last) = started(&mut cluster, &next);
    assert_eq!(starts, ["h2", "h3", "h4", "h5"]);
    assert_says(&last, "Progressing", "Complete", "every OSD");
    // A newer template is a new canary: the old promotion does not release it.
    let mut newer = hosts_cr("c");
    newer.spec.canary = Some(IntOrString::String("40%".into()));
    newer.spec.promoted_template_hash = Some(hash);
    let (starts, last) = started(&mut cluster, &newer);
    assert_eq!(starts, ["h1", "h2"]);
    assert_says(
        &last,
        "Progressing",
        "CanaryWaiting",
        "2 of 5 hosts updated",
    );
}

#[test]
fn paused_wins_over_partition_and_canary_and_a_bad_value_holds_everything() {
    let mut cluster = converged(&hosts_cr("a"));
    let mut next = hosts_cr("b");
    next.spec.partition = Some(IntOrString::Int(2));
    next.spec.canary = Some(IntOrString::Int(1));
    next.spec.paused = Some(true);
    let (starts, last) = started(&mut cluster, &next);
    assert!(starts.is_empty());
    assert_says(&last, "Progressing", "Paused", "spec.paused");
    next.spec.paused = None;
    next.spec.partition = Some(IntOrString::String("half".into()));
    let (starts, last) = started(&mut cluster, &next);
    assert!(starts.is_empty());
    assert_condition(
        &last,
        "InvalidSpec",
        "True",
        "InvalidRolloutControl",
        "spec.partition must be an integer or a percentage",
    );
}

/// The domain ids of `cr` in rollout order.
fn domains_in_order(cr: &CephOsd) -> Vec<String> {
    let mut domains: Vec<String> = ExpandedSpec::of(&cr.spec)
        .desired
        .osds
        .keys()
        .map(|k| domain_id(k, cr.spec.update_domain))
        .collect();
    domains.sort_by_key(|d| (d.to_lowercase(), d.clone()));
    domains.dedup();
    domains
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever the partition, canary, maxUnavailable and domain: the domains replaced are
    /// the first ones in rollout order, never one past the cut, in that order; a promotion
    /// and partition 0 then finish the rollout.
    #[test]
    fn the_cut_is_never_crossed_and_the_order_never_changes(
        hosts in 1usize..7,
        by_host in any::<bool>(),
        partition in 0i32..8,
        canary in 0i32..4,
        max in 1i32..3,
        percent in any::<bool>(),
    ) {
        let names: Vec<String> = (0..hosts).map(|h| format!("n{h}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let domain = if by_host { UpdateDomain::Host } else { UpdateDomain::Osd };
        let old = cr(domain, &names, &["/dev/sdb", "/dev/sdc"], "a");
        let mut cluster = converged(&old);
        let mut next = cr(domain, &names, &["/dev/sdb", "/dev/sdc"], "b");
        next.spec.max_unavailable = Some(max);
        next.spec.partition = Some(if percent {
            IntOrString::String(format!("{}%", partition * 10))
        } else {
            IntOrString::Int(partition)
        });
        next.spec.canary = Some(IntOrString::Int(canary));
        let order = domains_in_order(&next);
        let total = order.len();
        let held = next.spec.partition_of(total).expect("valid");
        let cut = total.saturating_sub(held);
        let expected = if canary > 0 {
            cut.min(usize::try_from(canary).expect("small"))
        } else {
            cut
        };
        let (starts, last) = started(&mut cluster, &next);
        prop_assert_eq!(&starts[..], &order[..expected]);
        prop_assert_eq!(
            last.status.expected_updated_domains,
            Some(i64::try_from(expected).expect("small"))
        );
        if expected < total {
            let reason = &condition(&last, "Progressing").reason;
            prop_assert!(reason == "Partitioned" || reason == "CanaryWaiting", "{}", reason);
        }
        next.spec.partition = None;
        next.spec.promoted_template_hash = Some(TemplateHash::of(&next.spec.pod_template).to_string());
        let (rest, last) = started(&mut cluster, &next);
        prop_assert_eq!(&rest[..], &order[expected..]);
        prop_assert_eq!(&condition(&last, "Progressing").reason, "Complete");
    }
}
