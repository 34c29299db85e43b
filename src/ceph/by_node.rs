//! A key's ids from its node, for daemons that report no pod (the reference operator's
//! hostNetwork pods set no `POD_NAME`: their daemons report the node as `hostname`). Pure.
//!
//! Rules (only up OSDs count; a node's reported hostname as `node_names` finds it):
//! - the data device: the one up OSD on the key's node that reports no pod and the key's
//!   data device (`osd_devices`) is the key's;
//! - the count: on a node, the OSDs that report no pod and that no key claims (of this
//!   CephOSD, or recorded by another for its disks on that host) are the keys' there without
//!   ids when they are exactly as
//!   many, all up, none naming a data device that none of those keys lists, no key there has
//!   contradicting ids and no other CephOSD lists disks on that host without recorded ids. One
//!   key: its id. Several keys stopped in one step (one update domain, e.g. a whole host): the
//!   set is exact for the step, though not per key (not recorded). Otherwise the key stays
//!   unknown and its condition lists the candidates.

use super::answers::{OsdDump, OsdMetadata};
use super::key_ids::{
    is_up, IdSource, KeyIds, KeyToMap, MappedKey, NodeEvidence, NotExact, UnknownReason,
};
use super::node_names::{reported_node, ReportedNode};
use super::osd_id::OsdId;
use std::collections::{BTreeMap, BTreeSet};

/// What other CephOSDs (in any namespace) hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OtherCephOsds {
    /// Host → the ids they recorded in their status for their disks there. Only a host's
    /// records claim its daemons: ids elsewhere may be another Ceph cluster's.
    pub ids_on_host: BTreeMap<String, BTreeSet<OsdId>>,
    /// Host → a CephOSD (`namespace/name`) listing disks there without recorded ids.
    pub unrecorded_hosts: BTreeMap<String, String>,
}

/// The daemons that report no pod, by the hostname they report (up or not).
pub(crate) struct PodlessDaemons<'a> {
    by_node: BTreeMap<&'a str, Vec<&'a OsdMetadata>>,
}

impl<'a> PodlessDaemons<'a> {
    pub(crate) fn of(metadata: &'a BTreeMap<OsdId, OsdMetadata>) -> Self {
        let mut by_node: BTreeMap<&str, Vec<&OsdMetadata>> = BTreeMap::new();
        for m in metadata.values() {
            if m.pod_name.as_deref().is_none_or(str::is_empty) {
                if let Some(node) = m.hostname.as_deref().filter(|h| !h.is_empty()) {
                    by_node.entry(node).or_default().push(m);
                }
            }
        }
        Self { by_node }
    }

    /// The hostname the daemons of `k`'s node report (its names: the CephOSD's host, the
    /// pod's node).
    pub(crate) fn node_of(&self, k: &KeyToMap) -> ReportedNode {
        let (host, _) = k.host_and_data();
        let mut names = vec![host];
        if let Some(pod) = &k.pod {
            names.push(&pod.node);
        }
        reported_node(&names, self.by_node.keys().copied())
    }

    /// The daemons on `node` (a reported hostname).
    fn on(&self, node: &str) -> &[&'a OsdMetadata] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }

    /// The up daemons on `node` (`k`'s) that report `k`'s data device.
    pub(crate) fn on_data_device(
        &self,
        k: &KeyToMap,
        node: &ReportedNode,
        dump: &OsdDump,
    ) -> BTreeSet<OsdId> {
        let ReportedNode::One(node) = node else {
            return BTreeSet::new();
        };
        let (_, data) = k.host_and_data();
        self.on(node)
            .iter()
            .filter(|m| is_up(dump, m.id) && m.devices.is_data_device(data))
            .map(|m| m.id)
            .collect()
    }
}

fn no_evidence(ids: &KeyIds) -> bool {
    matches!(ids, KeyIds::Unknown(UnknownReason::NoEvidence { .. }))
}

/// The count rule (module docs) over every node with keys without evidence (`nodes`: each
/// key's node): maps them, or says in their reason what their node tells.
pub(crate) fn count_on_nodes(
    mapped: &mut [MappedKey],
    keys: &[KeyToMap],
    nodes: &[ReportedNode],
    daemons: &PodlessDaemons<'_>,
    dump: &OsdDump,
    others: &OtherCephOsds,
) {
    let claimed: BTreeSet<OsdId> = mapped
        .iter()
        .filter_map(|m| match &m.ids {
            KeyIds::Known { ids, .. } => Some(ids.iter().copied()),
            KeyIds::Unknown(_) => None,
        })
        .flatten()
        .collect();
    let mut by_node: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, node) in nodes.iter().enumerate() {
        if !no_evidence(&mapped[i].ids) {
            continue;
        }
        let (host, _) = keys[i].host_and_data();
        let evidence = match node {
            ReportedNode::One(node) => {
                by_node.entry(node).or_default().push(i);
                continue;
            }
            ReportedNode::None => NodeEvidence::NoDaemon {
                node: host.to_owned(),
            },
            ReportedNode::Several(names) => NodeEvidence::SeveralNames {
                node: host.to_owned(),
                names: names.clone(),
            },
        };
        set_evidence(&mut mapped[i].ids, evidence);
    }
    for (node, unknown) in by_node {
        let here: Vec<usize> = (0..keys.len())
            .filter(|&j| matches!(&nodes[j], ReportedNode::One(n) if n == node))
            .collect();
        let claimed_by_others: BTreeSet<OsdId> = unknown
            .iter()
            .filter_map(|&i| others.ids_on_host.get(keys[i].host_and_data().0))
            .flatten()
            .copied()
            .collect();
        let free: Vec<&OsdMetadata> = daemons
            .on(node)
            .iter()
            .copied()
            .filter(|m| !claimed.contains(&m.id) && !claimed_by_others.contains(&m.id))
            .collect();
        let free_up: BTreeSet<OsdId> = free
            .iter()
            .map(|m| m.id)
            .filter(|id| is_up(dump, *id))
            .collect();
        let not_exact = not_exact(&unknown, &here, &free, &free_up, mapped, keys, dump, others);
        match not_exact {
            None => {
                let source = if unknown.len() == 1 {
                    IdSource::Node
                } else {
                    IdSource::NodeSet
                };
                for &i in &unknown {
                    mapped[i].ids = KeyIds::Known {
                        ids: free_up.clone(),
                        source,
                    };
                }
            }
            Some(not_exact) => {
                for &i in &unknown {
                    let on_device = daemons.on_data_device(&keys[i], &nodes[i], dump);
                    set_evidence(
                        &mut mapped[i].ids,
                        NodeEvidence::Candidates {
                            node: node.to_owned(),
                            ids: free_up.clone(),
                            on_device,
                            not_exact: not_exact.clone(),
                        },
                    );
                }
            }
        }
    }
}

/// Why the free OSDs of a node are not the ids of its keys without evidence (`unknown`), if
/// they are not.
#[expect(
    clippy::too_many_arguments,
    reason = "the rule's inputs, each read once; a struct would only rename them"
)]
fn not_exact(
    unknown: &[usize],
    here: &[usize],
    free: &[&OsdMetadata],
    free_up: &BTreeSet<OsdId>,
    mapped: &[MappedKey],
    keys: &[KeyToMap],
    dump: &OsdDump,
    others: &OtherCephOsds,
) -> Option<NotExact> {
    if let Some(&j) = here
        .iter()
        .find(|&&j| matches!(mapped[j].ids, KeyIds::Unknown(_)) && !no_evidence(&mapped[j].ids))
    {
        return Some(NotExact::KeyInConflict(keys[j].key.clone()));
    }
    let hosts: BTreeSet<&str> = unknown.iter().map(|&i| keys[i].host_and_data().0).collect();
    if let Some(other) = hosts.iter().find_map(|h| others.unrecorded_hosts.get(*h)) {
        return Some(NotExact::OtherCephOsd(other.clone()));
    }
    if let Some(down) = free.iter().find(|m| !is_up(dump, m.id)) {
        return Some(NotExact::DownOnNode(down.id));
    }
    if free_up.len() != unknown.len() {
        return Some(NotExact::Count {
            keys: unknown.len(),
        });
    }
    let foreign = free.iter().find(|m| {
        m.devices.names_a_data_device()
            && !unknown
                .iter()
                .any(|&i| m.devices.is_data_device(keys[i].host_and_data().1))
    });
    if let Some(m) = foreign {
        let device = m
            .devices
            .data_node
            .clone()
            .or_else(|| m.devices.data.iter().next().map(|d| format!("/dev/{d}")))
            .unwrap_or_default();
        return Some(NotExact::OtherDevice { id: m.id, device });
    }
    let domains: BTreeSet<Option<&str>> = unknown
        .iter()
        .map(|&i| keys[i].step_domain.as_deref())
        .collect();
    let one_step = domains.len() == 1 && domains.iter().all(Option::is_some);
    if unknown.len() > 1 && !one_step {
        return Some(NotExact::NotOneStep {
            keys: unknown.len(),
        });
    }
    None
}

fn set_evidence(ids: &mut KeyIds, evidence: NodeEvidence) {
    if let KeyIds::Unknown(UnknownReason::NoEvidence { node, .. }) = ids {
        *node = evidence;
    }
}

#[cfg(test)]
mod tests;
