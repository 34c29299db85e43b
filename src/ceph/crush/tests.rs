use super::*;
use crate::ceph::test_data::fixture;

fn placed(tree: &CrushTree, nodes: &[&str]) -> BTreeMap<String, BTreeMap<String, String>> {
    tree.ancestors_of_nodes(nodes.iter().copied())
}

fn chain(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(t, n)| ((*t).to_owned(), (*n).to_owned()))
        .collect()
}

#[test]
fn hosts_in_racks_have_their_rack_and_root_above_them() {
    let tree = parse_crush_tree(&fixture("crush_tree_racks")).unwrap();
    let placed = placed(&tree, &["host-0", "host-1", "host-2", "host-9"]);
    assert_eq!(
        placed["host-0"],
        chain(&[("host", "host-0"), ("rack", "r1"), ("root", "default")])
    );
    assert_eq!(placed["host-1"]["rack"], "r1");
    assert_eq!(placed["host-2"]["rack"], "r2");
    assert!(!placed.contains_key("host-9"), "{placed:?}");
    assert_eq!(tree.type_ids()["rack"], 3);
    assert_eq!(tree.type_ids()["host"], 1);
    assert_eq!(tree.type_ids()["osd"], 0);
}

#[test]
fn a_host_moved_to_another_rack_is_under_that_rack() {
    let tree = parse_crush_tree(&fixture("crush_tree_host_moved")).unwrap();
    let placed = placed(&tree, &["host-0", "host-1"]);
    assert_eq!(placed["host-0"]["rack"], "r1");
    assert_eq!(placed["host-1"]["rack"], "r2");
}

#[test]
fn hosts_right_under_the_root_have_no_rack() {
    let tree = parse_crush_tree(&fixture("crush_tree_hosts")).unwrap();
    let placed = placed(&tree, &["host-0"]);
    assert_eq!(
        placed["host-0"],
        chain(&[("host", "host-0"), ("root", "default")])
    );
}

#[test]
fn a_host_linked_into_two_racks_has_no_rack_but_its_root() {
    let tree = parse_crush_tree(&fixture("crush_tree_host_linked_twice")).unwrap();
    let placed = placed(&tree, &["host-2", "host-1"]);
    assert_eq!(
        placed["host-2"],
        chain(&[("host", "host-2"), ("root", "default")])
    );
    assert_eq!(placed["host-1"]["rack"], "r2");
}

/// The tree of `crush_tree_racks` with its host buckets renamed.
fn tree_with_hosts(names: [&str; 3]) -> CrushTree {
    let text = String::from_utf8(fixture("crush_tree_racks")).unwrap();
    let text = (0..3).fold(text, |text, i| {
        text.replace(&format!("\"host-{i}\""), &format!("\"{}\"", names[i]))
    });
    parse_crush_tree(text.as_bytes()).unwrap()
}

#[test]
fn node_names_meet_host_buckets_as_reported_hostnames_do() {
    let tree = tree_with_hosts(["Node1", "node2.example.com", "node3"]);
    let placed = placed(&tree, &["node1", "node2", "node3.example.com", "node4"]);
    // Case ignored; a short node name meets its FQDN bucket and the other way round.
    assert_eq!(placed["node1"]["host"], "Node1");
    assert_eq!(placed["node2"]["host"], "node2.example.com");
    assert_eq!(placed["node3.example.com"]["host"], "node3");
    assert!(!placed.contains_key("node4"));
}

#[test]
fn a_node_two_host_buckets_could_be_is_not_placed() {
    let tree = tree_with_hosts(["node1.a", "node1.b", "node2"]);
    let placed = placed(&tree, &["node1", "node1.a", "node2"]);
    assert!(!placed.contains_key("node1"), "{placed:?}");
    // An exact name is that bucket.
    assert_eq!(placed["node1.a"]["host"], "node1.a");
    assert_eq!(placed["node2"]["rack"], "r2");
}

#[test]
fn a_bucket_listed_twice_differently_is_an_error() {
    let json = br#"{"nodes":[
        {"id":-1,"name":"default","type":"root","type_id":11,"children":[-2]},
        {"id":-2,"name":"h","type":"host","type_id":1,"children":[]},
        {"id":-2,"name":"g","type":"host","type_id":1,"children":[]}]}"#;
    let error = parse_crush_tree(json).unwrap_err();
    assert_eq!(error.path, "nodes[2]");
    assert!(error.message.contains("-2"), "{error}");
}

#[test]
fn a_tree_that_is_not_one_names_the_field() {
    let error = parse_crush_tree(br#"{"nodes":[{"id":-1,"name":"x","type":"root"}]}"#).unwrap_err();
    assert!(error.message.contains("type_id"), "{error}");
    assert!(parse_crush_tree(b"[]").is_err());
    assert!(parse_crush_tree(b"").is_err());
}

#[test]
fn rules_are_read_with_their_choose_steps() {
    let rules = parse_crush_rules(&fixture("crush_rule_dump_racks")).unwrap();
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[&0].name, "replicated_rule");
    let choose = |type_name: &str| RuleStep::Choose {
        num: 0,
        type_name: type_name.to_owned(),
    };
    assert_eq!(
        rules[&0].steps,
        vec![RuleStep::Take, choose("host"), RuleStep::Emit]
    );
    assert_eq!(
        rules[&1].steps,
        vec![RuleStep::Take, choose("rack"), RuleStep::Emit]
    );
    // The erasure-coded rule: tunables first, then chooseleaf_indep across racks.
    assert_eq!(rules[&2].name, "ec-by-rack");
    assert_eq!(
        rules[&2].steps,
        vec![
            RuleStep::Other,
            RuleStep::Other,
            RuleStep::Take,
            choose("rack"),
            RuleStep::Emit
        ]
    );
}

#[test]
fn a_choose_step_without_a_type_names_the_step() {
    let json = br#"[{"rule_id":4,"rule_name":"odd","steps":[{"op":"take","item":-1},{"op":"choose_firstn","num":0}]}]"#;
    let error = parse_crush_rules(json).unwrap_err();
    assert_eq!(error.path, "[0].steps[1].type");
}

#[test]
fn pools_are_read_with_their_rule_and_size() {
    let pools = parse_pool_rules(&fixture("osd_pool_ls_detail_racks")).unwrap();
    let brief: Vec<(&str, i64, u32)> = pools
        .iter()
        .map(|p| (p.name.as_str(), p.crush_rule, p.size))
        .collect();
    assert_eq!(
        brief,
        vec![
            ("test", 0, 3),
            ("device_health_metrics", 0, 3),
            ("rackpool", 1, 3),
            ("ecpool", 2, 3)
        ]
    );
    let error = parse_pool_rules(br#"[{"pool_name":"p","size":3}]"#).unwrap_err();
    assert!(error.message.contains("crush_rule"), "{error}");
}
