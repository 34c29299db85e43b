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
mod tests;
