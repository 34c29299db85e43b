//! Which `hostname` the daemons of a node report, for daemons that report no pod. Pure.
//!
//! A daemon reports `NODE_NAME` when it is set, else the kernel hostname, which a hostNetwork
//! pod shares with its node: the Node's name, or its short name or FQDN. The rule: a reported
//! hostname equal to one of the node's names (the CephOSD's host, the pod's node), ignoring
//! ASCII case, is the node's; without one, a reported hostname that is the short name of one
//! of the node's names (`node1` for `node1.example.com`) or an FQDN starting with one
//! (`node1.example.com` for `node1`) is, if it is the only one so; two such (`node1.a`,
//! `node1.b`) stand for two machines: neither is taken. Two FQDNs match only when equal.

use std::collections::BTreeSet;

/// The hostname a node's daemons report, among those reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum ReportedNode {
    /// As reported (its case kept: the daemons of the node report exactly it).
    One(String),
    /// No daemon reports it.
    None,
    /// Several reported hostnames could be it.
    Several(BTreeSet<String>),
}

fn first_label(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// `short` is a name without dots and `long` an FQDN whose first label it is.
fn short_of(short: &str, long: &str) -> bool {
    !short.contains('.') && long.contains('.') && first_label(long).eq_ignore_ascii_case(short)
}

/// The hostname, among `reported`, that the daemons of the node called `names` report.
pub(super) fn reported_node<'a>(
    names: &[&str],
    reported: impl IntoIterator<Item = &'a str>,
) -> ReportedNode {
    let reported: BTreeSet<&str> = reported.into_iter().filter(|r| !r.is_empty()).collect();
    let equal: BTreeSet<&str> = reported
        .iter()
        .copied()
        .filter(|r| names.iter().any(|n| n.eq_ignore_ascii_case(r)))
        .collect();
    let close: BTreeSet<&str> = if equal.is_empty() {
        reported
            .iter()
            .copied()
            .filter(|r| names.iter().any(|n| short_of(r, n) || short_of(n, r)))
            .collect()
    } else {
        equal
    };
    let mut close = close.into_iter();
    match (close.next(), close.next()) {
        (None, _) => ReportedNode::None,
        (Some(one), None) => ReportedNode::One(one.to_owned()),
        (Some(a), Some(b)) => {
            ReportedNode::Several([a, b].into_iter().chain(close).map(str::to_owned).collect())
        }
    }
}

#[cfg(test)]
mod tests {
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
}
