use super::*;

fn one(name: &str) -> ReportedNode {
    ReportedNode::One(name.to_owned())
}

#[test]
fn an_equal_name_wins_whatever_its_case() {
    assert_eq!(reported_node(&["node1"], ["node1", "node2"]), one("node1"));
    assert_eq!(reported_node(&["node1"], ["NODE1"]), one("NODE1"));
    // The pod's node name counts as well as the CephOSD's host.
    assert_eq!(
        reported_node(
            &["node1", "ip-10-0-0-1.ec2.internal"],
            ["ip-10-0-0-1.ec2.internal"]
        ),
        one("ip-10-0-0-1.ec2.internal")
    );
    // An exact name leaves the short/FQDN forms aside.
    assert_eq!(
        reported_node(&["node1"], ["node1", "node1.example.com"]),
        one("node1")
    );
}

#[test]
fn a_short_name_and_its_fqdn_match_when_alone() {
    assert_eq!(
        reported_node(&["node1"], ["node1.example.com", "node2.example.com"]),
        one("node1.example.com")
    );
    assert_eq!(
        reported_node(&["node1.example.com"], ["node1", "node2"]),
        one("node1")
    );
}

#[test]
fn two_machines_with_one_short_name_are_not_told_apart() {
    assert_eq!(
        reported_node(&["node1"], ["node1.a.example", "node1.b.example"]),
        ReportedNode::Several(BTreeSet::from([
            "node1.a.example".to_owned(),
            "node1.b.example".to_owned()
        ]))
    );
}

#[test]
fn other_names_do_not_match() {
    for reported in ["node10", "xnode1", "node1.other.example", ""] {
        assert_eq!(
            reported_node(&["node1.example.com"], [reported]),
            ReportedNode::None,
            "{reported}: two FQDNs match only when equal"
        );
    }
    assert_eq!(
        reported_node(&["node1"], ["node10", "node"]),
        ReportedNode::None
    );
    assert_eq!(reported_node(&["node1"], []), ReportedNode::None);
}
