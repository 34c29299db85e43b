use super::*;

#[test]
fn tagged_hosts_stay_dns_names() {
    assert_eq!(tagged_host("worker1", "3f9c2a"), "worker1-3f9c2a");
    assert_eq!(
        tagged_host("worker041.example.com", "3f9c2a"),
        "worker041-3f9c2a.example.com"
    );
}

#[test]
fn tagged_hosts_rewrite_every_storage_entry_and_nothing_else() {
    let cr = json!({"metadata": {"name": "worker1"}, "spec": {"storage": [
            {"hosts": ["worker041.example.com", "w1"], "osds": [{"data": "/dev/w1"}]},
            {"hosts": ["w2"], "osds": []},
            {"osds": []},
        ], "podTemplate": {"spec": {"nodeName": "w1"}}}});
    let tagged = with_tagged_hosts(cr.clone(), "3f9c2a");
    let mut expected = cr;
    expected["spec"]["storage"][0]["hosts"] = json!(["worker041-3f9c2a.example.com", "w1-3f9c2a"]);
    expected["spec"]["storage"][1]["hosts"] = json!(["w2-3f9c2a"]);
    assert_eq!(tagged, expected);
    // A spec alone (a spec patch) too.
    let spec = with_tagged_hosts(json!({"storage": [{"hosts": ["w1"]}]}), "ab");
    assert_eq!(spec, json!({"storage": [{"hosts": ["w1-ab"]}]}));
    // The reference sample: its hosts only.
    let sample = sample().expect("the sample");
    let hosts = crate::kubernetes::nodes::hosts_of(&with_tagged_hosts(sample.clone(), "ab"));
    let want: BTreeSet<String> = crate::kubernetes::nodes::hosts_of(&sample)
        .iter()
        .map(|h| tagged_host(h, "ab"))
        .collect();
    assert_eq!(hosts, want);
    assert!(!want.is_empty());
}

#[test]
fn a_tagged_host_is_known_by_its_tag_and_no_other() {
    for base in ["worker1", "worker041.example.com", "h-01"] {
        let host = tagged_host(base, "3f9c2a");
        assert!(is_tagged_host(&host, "3f9c2a"), "{host}");
        assert!(!is_tagged_host(&host, "3f9c2b"), "{host}");
    }
    // Not a tag's: the tag without its dash, the tag alone, the tag in a later label.
    for host in [
        "worker13f9c2a",
        "3f9c2a",
        "-3f9c2a",
        "worker.a-3f9c2a",
        "w-3f9c2a0",
    ] {
        assert!(!is_tagged_host(host, "3f9c2a"), "{host}");
    }
}
