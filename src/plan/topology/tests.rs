use super::*;

fn rack(bucket_type: &str, key: Option<&str>) -> TopologySpec {
    TopologySpec {
        bucket_type: bucket_type.to_owned(),
        topology_key: key.map(str::to_owned),
    }
}

/// CRUSH with `hosts` as (host, rack) under one root; pools spread by `auto`.
fn crush(hosts: &[(&str, &str)], auto: Result<&str, &str>) -> CrushPlacement {
    CrushPlacement {
        auto_type: auto.map(str::to_owned).map_err(str::to_owned),
        ancestors: hosts
            .iter()
            .map(|(host, rack)| {
                let above = BTreeMap::from([
                    ("host".to_owned(), (*host).to_owned()),
                    ("rack".to_owned(), (*rack).to_owned()),
                    ("root".to_owned(), "default".to_owned()),
                ]);
                ((*host).to_owned(), above)
            })
            .collect(),
    }
}

fn labels(values: &[(&str, Option<&str>)]) -> BTreeMap<String, Option<String>> {
    values
        .iter()
        .map(|(h, v)| ((*h).to_owned(), v.map(str::to_owned)))
        .collect()
}

const HOSTS: [&str; 3] = ["a", "b", "c"];

#[test]
fn crush_places_each_host_under_its_bucket_of_the_type() {
    let view = TopologyView {
        crush: Some(Ok(crush(
            &[("a", "r1"), ("b", "r1"), ("c", "r2")],
            Ok("rack"),
        ))),
        labels: BTreeMap::new(),
    };
    let buckets = host_buckets(&rack("rack", None), HOSTS, &view);
    assert_eq!(buckets.bucket_type.as_deref(), Some("rack"));
    assert_eq!(buckets.bucket_of["a"], "r1");
    assert_eq!(buckets.bucket_of["c"], "r2");
    assert_eq!(buckets.halt(), None);
    let by_host = host_buckets(&rack("host", None), HOSTS, &view);
    assert_eq!(by_host.bucket_of["b"], "b");
}

#[test]
fn auto_takes_the_type_ceph_spreads_across_and_needs_ceph() {
    let view = TopologyView {
        crush: Some(Ok(crush(
            &[("a", "r1"), ("b", "r1"), ("c", "r2")],
            Ok("rack"),
        ))),
        labels: BTreeMap::new(),
    };
    let auto = host_buckets(&rack("Auto", None), HOSTS, &view);
    assert_eq!(auto.bucket_type.as_deref(), Some("rack"));
    assert_eq!(auto.bucket_of.len(), 3);

    let undecided = TopologyView {
        crush: Some(Ok(crush(&[("a", "r1")], Err("pool rbd has no CRUSH rule")))),
        labels: BTreeMap::new(),
    };
    let halt = host_buckets(&rack("Auto", None), HOSTS, &undecided).halt();
    assert!(halt.is_some_and(|h| h.contains("Auto: pool rbd has no CRUSH rule")));

    let without_ceph = TopologyView::default();
    let halt = host_buckets(&rack("Auto", Some("zone")), HOSTS, &without_ceph).halt();
    assert!(
        halt.is_some_and(|h| h.contains("the Ceph gate is off")),
        "Auto needs Ceph"
    );
}

#[test]
fn a_misspelt_auto_stored_before_the_schema_refused_it_places_nobody() {
    let view = TopologyView {
        crush: Some(Ok(crush(&[("a", "r1"), ("b", "r1")], Ok("rack")))),
        labels: BTreeMap::new(),
    };
    for misspelt in ["auto", "AUTO"] {
        let buckets = host_buckets(&rack(misspelt, None), HOSTS, &view);
        assert!(buckets.bucket_of.is_empty() && buckets.unplaced.is_empty());
        assert_eq!(
            buckets.halt(),
            Some(format!(
                "the update domains are unknown: spec.topology.bucketType must be spelled Auto \
                 (capital A) to let Ceph choose the bucket type: no CRUSH bucket type is called \
                 auto, found {misspelt:?}"
            ))
        );
    }
}

#[test]
fn without_ceph_the_node_label_places_hosts_and_names_the_missing() {
    let view = TopologyView {
        crush: None,
        labels: labels(&[("a", Some("z1")), ("b", None)]),
    };
    let buckets = host_buckets(
        &rack("zone", Some("topology.kubernetes.io/zone")),
        HOSTS,
        &view,
    );
    assert_eq!(
        buckets.bucket_of,
        BTreeMap::from([("a".into(), "z1".into())])
    );
    assert_eq!(
        buckets.unplaced["b"],
        "its Node has no label topology.kubernetes.io/zone"
    );
    assert!(buckets.unplaced["c"].starts_with("no Node named c"));
    let halt = buckets.halt().expect("halts");
    assert!(
        halt.starts_with("host b is in no known failure domain"),
        "{halt}"
    );
    assert!(halt.ends_with("(and 1 more hosts)"), "{halt}");

    let nothing = host_buckets(&rack("zone", None), HOSTS, &TopologyView::default());
    assert!(nothing
        .halt()
        .is_some_and(|h| h.contains("topologyKey names no node label")));
}

#[test]
fn ceph_and_a_label_that_disagree_halt_naming_the_host() {
    let view = TopologyView {
        crush: Some(Ok(crush(
            &[("a", "r1"), ("b", "r1"), ("c", "r2")],
            Ok("rack"),
        ))),
        labels: labels(&[("a", Some("r1")), ("b", Some("r2")), ("c", Some("r2"))]),
    };
    let buckets = host_buckets(&rack("rack", Some("example.com/rack")), HOSTS, &view);
    assert_eq!(buckets.bucket_of.len(), 2);
    assert_eq!(
        buckets.unplaced["b"],
        "Ceph's CRUSH map has it in rack r1 but its label example.com/rack says r2"
    );
    assert!(buckets.halt().is_some_and(|h| h.starts_with("host b ")));
}

#[test]
fn a_host_ceph_does_not_place_is_never_guessed() {
    let mut placement = crush(&[("a", "r1"), ("b", "r1")], Ok("rack"));
    placement.ancestors.get_mut("b").expect("b").remove("rack");
    let view = TopologyView {
        crush: Some(Ok(placement)),
        labels: BTreeMap::new(),
    };
    let buckets = host_buckets(&rack("rack", None), HOSTS, &view);
    assert_eq!(buckets.bucket_of.keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(
        buckets.unplaced["b"],
        "it is under no CRUSH bucket of type rack in Ceph's CRUSH map"
    );
    assert_eq!(
        buckets.unplaced["c"],
        "Ceph's CRUSH map has no host bucket for it"
    );
}

#[test]
fn an_unreadable_crush_map_places_nobody() {
    let view = TopologyView {
        crush: Some(Err("timed out".to_owned())),
        labels: labels(&[("a", Some("r1"))]),
    };
    let buckets = host_buckets(&rack("rack", Some("rack")), HOSTS, &view);
    assert!(buckets.bucket_of.is_empty());
    assert!(buckets
        .halt()
        .is_some_and(|h| h.contains("could not be read: timed out")));
}
