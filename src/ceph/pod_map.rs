//! Which OSD ids an OSD key (`host:data`) stands for, from what the daemons reported
//! (`osd metadata`, trusted only while that OSD is up: the pod name, namespace and node; for a
//! daemon that reports no pod, as those of the reference operator's hostNetwork pods, its node
//! and data device), the ids recorded in the CephOSD's status, and ids an admin stated by
//! annotation. Pure. Never a guess: without evidence, or with contradicting evidence, the
//! key's ids are unknown, and an unknown id is never asked about (`ok-to-stop` says yes for
//! ids that do not exist).

use super::answers::{OsdDump, OsdMetadata};
use super::by_node::{self, OtherCephOsds, PodlessDaemons};
use super::key_ids::{
    is_up, IdSource, KeyIds, KeyToMap, MappedKey, NodeEvidence, PodRef, UnknownReason,
};
use super::node_names::ReportedNode;
use super::osd_id::OsdId;
use super::stated_ids;
use std::collections::{BTreeMap, BTreeSet};

/// Maps every key to its ids. Pass all the keys the operator runs (not only those about to be
/// stopped): an id that comes out for two keys is unknown for both; and what other CephOSDs
/// hold (`others`).
///
/// Per key, in order: ids stated by annotation (unless up daemons of the key's pod, or of its
/// node and data device, report others); else the up OSDs whose metadata names the key's pod,
/// namespace and node; else the one up OSD that reports no pod, the key's node and its data
/// device (`by_node`); else the recorded ids; else what the node's other daemons that report
/// no pod allow (`by_node::count_on_nodes`), or unknown. A recorded or stated id whose up
/// daemon reports another pod is unknown; a statement Ceph's metadata refutes (`stated_ids`)
/// is refused.
pub fn map_osd_ids(
    keys: &[KeyToMap],
    metadata: &BTreeMap<OsdId, OsdMetadata>,
    dump: &OsdDump,
    others: &OtherCephOsds,
) -> Vec<MappedKey> {
    let daemons = PodlessDaemons::of(metadata);
    let nodes: Vec<ReportedNode> = keys.iter().map(|k| daemons.node_of(k)).collect();
    let mut mapped: Vec<MappedKey> = keys
        .iter()
        .zip(&nodes)
        .map(|(k, node)| MappedKey {
            key: k.key.clone(),
            pod: k.pod.clone(),
            ids: map_one(k, metadata, dump, &daemons.on_data_device(k, node, dump)),
        })
        .collect();
    // A refuted statement claims nothing, not even an id another key has.
    stated_ids::refute_elsewhere(&mut mapped, keys, metadata, dump, others);
    unmap_shared_ids(&mut mapped);
    by_node::count_on_nodes(&mut mapped, keys, &nodes, &daemons, dump, others);
    stated_ids::refute_not_running(&mut mapped, keys, metadata, dump, others);
    mapped
}

/// The one OSD whose daemon, now down, last reported `k`'s pod (namespace, name and node),
/// when no up daemon reports it: the id of a disk that failed under a pod still standing (a
/// disk replacement learns it so). None when none or several did.
pub fn reported_by_down_daemon(
    k: &KeyToMap,
    metadata: &BTreeMap<OsdId, OsdMetadata>,
    dump: &OsdDump,
) -> Option<OsdId> {
    let pod = k.pod.as_ref()?;
    let reporting: Vec<OsdId> = (metadata.values())
        .filter(|m| reported_pod(m).as_ref() == Some(pod))
        .map(|m| m.id)
        .collect();
    match reporting.as_slice() {
        [id] if dump.osds.contains_key(id) && !is_up(dump, *id) => Some(*id),
        _ => None,
    }
}

/// What a disk replacement learns of each key's ids from `mapped` (as `map_osd_ids` mapped
/// `keys`): those learnt from Ceph for the key, else the one down daemon that last reported its
/// pod (`reported_by_down_daemon`); an id two keys came to is neither's.
pub fn ids_learnt(
    keys: &[KeyToMap],
    mapped: Vec<MappedKey>,
    metadata: &BTreeMap<OsdId, OsdMetadata>,
    dump: &OsdDump,
) -> BTreeMap<String, BTreeSet<OsdId>> {
    let mut learnt: BTreeMap<String, BTreeSet<OsdId>> = BTreeMap::new();
    for m in mapped {
        let ids = match m.ids {
            KeyIds::Known { ids, source } if source.learnt() => ids,
            KeyIds::Unknown(_) => {
                let key = keys.iter().find(|k| k.key == m.key);
                match key.and_then(|k| reported_by_down_daemon(k, metadata, dump)) {
                    Some(id) => BTreeSet::from([id]),
                    None => continue,
                }
            }
            KeyIds::Known { .. } => continue,
        };
        learnt.insert(m.key, ids);
    }
    let mut claims: BTreeMap<OsdId, usize> = BTreeMap::new();
    for id in learnt.values().flatten() {
        *claims.entry(*id).or_default() += 1;
    }
    learnt.retain(|_, ids| ids.iter().all(|id| claims[id] == 1));
    learnt
}

/// The pod a daemon reported, when it reported all three of namespace, name and node.
fn reported_pod(m: &OsdMetadata) -> Option<PodRef> {
    Some(PodRef {
        namespace: m.pod_namespace.clone()?,
        name: m.pod_name.clone()?,
        node: m.hostname.clone()?,
    })
}

/// `on_device`: the up OSDs that report no pod, the key's node and its data device.
fn map_one(
    k: &KeyToMap,
    metadata: &BTreeMap<OsdId, OsdMetadata>,
    dump: &OsdDump,
    on_device: &BTreeSet<OsdId>,
) -> KeyIds {
    let reporting: Vec<OsdId> = k.pod.as_ref().map_or_else(Vec::new, |pod| {
        metadata
            .values()
            .filter(|m| reported_pod(m).as_ref() == Some(pod))
            .map(|m| m.id)
            .collect()
    });
    let (reported, reported_by_down): (BTreeSet<OsdId>, Vec<OsdId>) = {
        let (up, down): (Vec<OsdId>, Vec<OsdId>) =
            reporting.into_iter().partition(|id| is_up(dump, *id));
        (up.into_iter().collect(), down)
    };
    // Only one up OSD on the device is exact; several are left to `count_on_nodes`.
    let device_id = (on_device.len() == 1).then_some(on_device);
    let known = |ids: &BTreeSet<OsdId>, source: IdSource| {
        if source != IdSource::Stated && source != IdSource::Recorded {
            return KeyIds::Known {
                ids: ids.clone(),
                source,
            };
        }
        for &id in ids {
            let other_pod = metadata
                .get(&id)
                .filter(|_| is_up(dump, id))
                .and_then(reported_pod)
                .filter(|pod| Some(pod) != k.pod.as_ref());
            if let Some(pod) = other_pod {
                return KeyIds::Unknown(UnknownReason::IdInOtherPod { id, pod });
            }
        }
        KeyIds::Known {
            ids: ids.clone(),
            source,
        }
    };
    match (&k.stated, device_id) {
        (Some(stated), _) if !reported.is_empty() && *stated != reported => {
            KeyIds::Unknown(UnknownReason::StatedContradictsMetadata {
                stated: stated.clone(),
                reported,
                device: None,
            })
        }
        (Some(stated), Some(device_id))
            if reported.is_empty() && !stated.is_empty() && stated != device_id =>
        {
            KeyIds::Unknown(UnknownReason::StatedContradictsMetadata {
                stated: stated.clone(),
                reported: device_id.clone(),
                device: Some(k.key.clone()),
            })
        }
        (Some(stated), _) if !stated.is_empty() => known(stated, IdSource::Stated),
        _ if !reported.is_empty() => known(&reported, IdSource::Metadata),
        (_, Some(device_id)) => known(device_id, IdSource::Device),
        _ if !k.recorded.is_empty() => known(&k.recorded, IdSource::Recorded),
        _ => KeyIds::Unknown(UnknownReason::NoEvidence {
            pod: k.pod.clone(),
            reported_by_down,
            node: NodeEvidence::NotLooked,
            unreadable_statement: k.unreadable_statement.clone(),
        }),
    }
}

fn unmap_shared_ids(mapped: &mut [MappedKey]) {
    let mut keys_of: BTreeMap<OsdId, Vec<usize>> = BTreeMap::new();
    for (i, m) in mapped.iter().enumerate() {
        if let KeyIds::Known { ids, .. } = &m.ids {
            for id in ids {
                keys_of.entry(*id).or_default().push(i);
            }
        }
    }
    for (id, holders) in keys_of {
        for &this in &holders {
            let Some(other) = holders.iter().copied().find(|&o| o != this) else {
                continue;
            };
            if matches!(mapped[this].ids, KeyIds::Known { .. }) {
                mapped[this].ids = KeyIds::Unknown(UnknownReason::IdSharedWith {
                    id,
                    other_key: mapped[other].key.clone(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
