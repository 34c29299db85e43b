//! Whether Ceph's own metadata refutes the ids an admin stated on a pod (`osd-ids`). Pure.
//!
//! Ceph's word beats an annotation. Only up OSDs' hostnames are trusted (a down OSD's
//! metadata is its last report). A key whose ids come from its pod's statement is refused (its
//! ids unknown: nothing is asked about or stopped on them) when a stated id is:
//! - up and reports a hostname that names another node of the CephOSD (another key's host or
//!   pod's node) and not the pod's own (names compared as `node_names` does): that daemon runs
//!   elsewhere (`refute_elsewhere`, before shared ids are unmapped and before the count rule:
//!   the id stays the other key's, and the node's daemons stay free for its other keys);
//! - not up (down, or no such OSD) while the pod's node has up daemons that report no pod and
//!   that no disk claims (of this CephOSD, or recorded by another for that host): one of them
//!   may be the pod's, and stopping the pod would stop it unasked (`refute_not_running`,
//!   after the count rule has claimed what it can).
//!
//! An up id whose hostname names no node the CephOSD knows, or a down one on a node without
//! unclaimed daemons, is not refuted.

use super::answers::{OsdDump, OsdMetadata};
use super::by_node::OtherCephOsds;
use super::key_ids::{is_up, IdSource, KeyIds, KeyToMap, MappedKey, StatedRefusal, UnknownReason};
use super::node_names::{reported_node, ReportedNode};
use super::osd_id::OsdId;
use std::collections::{BTreeMap, BTreeSet};

/// The names of `k`'s node: the CephOSD's host and its pod's node.
fn names_of(k: &KeyToMap) -> Vec<&str> {
    let (host, _) = k.host_and_data();
    let mut names = vec![host];
    if let Some(pod) = &k.pod {
        names.push(&pod.node);
    }
    names
}

/// Whether a daemon reporting `hostname` runs on the node called `names`.
fn on_node(names: &[&str], hostname: &str) -> bool {
    matches!(reported_node(names, [hostname]), ReportedNode::One(_))
}

/// The hostname `id` reports, while it is up.
fn up_hostname<'a>(
    metadata: &'a BTreeMap<OsdId, OsdMetadata>,
    dump: &OsdDump,
    id: OsdId,
) -> Option<&'a str> {
    let hostname = metadata.get(&id)?.hostname.as_deref()?;
    (is_up(dump, id) && !hostname.is_empty()).then_some(hostname)
}

/// The stated ids of key `i`, when its ids are those.
fn stated(mapped: &[MappedKey], i: usize) -> Option<&BTreeSet<OsdId>> {
    match &mapped[i].ids {
        KeyIds::Known {
            ids,
            source: IdSource::Stated,
        } => Some(ids),
        _ => None,
    }
}

/// What Ceph reports on `k`'s node: its up OSDs, and those that report no pod and are not in
/// `claimed`.
fn daemons_on_node(
    k: &KeyToMap,
    metadata: &BTreeMap<OsdId, OsdMetadata>,
    dump: &OsdDump,
    claimed: &BTreeSet<OsdId>,
) -> (BTreeSet<OsdId>, BTreeSet<OsdId>) {
    let names = names_of(k);
    let up_here: Vec<&OsdMetadata> = (metadata.values())
        .filter(|m| up_hostname(metadata, dump, m.id).is_some_and(|h| on_node(&names, h)))
        .collect();
    let unclaimed = (up_here.iter())
        .filter(|m| m.pod_name.as_deref().is_none_or(str::is_empty) && !claimed.contains(&m.id))
        .map(|m| m.id)
        .collect();
    (up_here.iter().map(|m| m.id).collect(), unclaimed)
}

/// The ids every key has (but key `except`), and those other CephOSDs recorded for `k`'s
/// host.
fn claimed_for(
    mapped: &[MappedKey],
    except: Option<usize>,
    k: &KeyToMap,
    others: &OtherCephOsds,
) -> BTreeSet<OsdId> {
    let mut claimed: BTreeSet<OsdId> = (mapped.iter().enumerate())
        .filter(|(j, _)| Some(*j) != except)
        .filter_map(|(_, m)| match &m.ids {
            KeyIds::Known { ids, .. } => Some(ids.iter().copied()),
            KeyIds::Unknown(_) => None,
        })
        .flatten()
        .collect();
    if let Some(theirs) = others.ids_on_host.get(k.host_and_data().0) {
        claimed.extend(theirs);
    }
    claimed
}

/// The first rule (module docs): a stated id up on another node of the CephOSD.
pub(crate) fn refute_elsewhere(
    mapped: &mut [MappedKey],
    keys: &[KeyToMap],
    metadata: &BTreeMap<OsdId, OsdMetadata>,
    dump: &OsdDump,
    others: &OtherCephOsds,
) {
    for (i, k) in keys.iter().enumerate() {
        let (Some(pod), Some(ids)) = (&k.pod, stated(mapped, i)) else {
            continue;
        };
        let names = names_of(k);
        let elsewhere = ids.iter().find_map(|&id| {
            let host = up_hostname(metadata, dump, id)?;
            let another = keys.iter().any(|o| on_node(&names_of(o), host));
            (another && !on_node(&names, host)).then(|| (id, host.to_owned()))
        });
        let Some((id, host)) = elsewhere else {
            continue;
        };
        // The refused statement claims nothing.
        let claimed = claimed_for(mapped, Some(i), k, others);
        let (on_node, unclaimed) = daemons_on_node(k, metadata, dump, &claimed);
        let refusal = StatedRefusal {
            pod: pod.clone(),
            stated: ids.clone(),
            id,
            up_on: Some(host),
            exists: true,
            on_node,
            unclaimed,
        };
        mapped[i].ids = KeyIds::Unknown(UnknownReason::StatedRefuted(refusal));
    }
}

/// The second rule (module docs): a stated id not up while the pod's node runs unclaimed
/// daemons.
pub(crate) fn refute_not_running(
    mapped: &mut [MappedKey],
    keys: &[KeyToMap],
    metadata: &BTreeMap<OsdId, OsdMetadata>,
    dump: &OsdDump,
    others: &OtherCephOsds,
) {
    let mut refused = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let (Some(pod), Some(ids)) = (&k.pod, stated(mapped, i)) else {
            continue;
        };
        let Some(&id) = ids.iter().find(|&&id| !is_up(dump, id)) else {
            continue;
        };
        // The statement's other ids are asked about with it: they are claimed.
        let claimed = claimed_for(mapped, None, k, others);
        let (on_node, unclaimed) = daemons_on_node(k, metadata, dump, &claimed);
        if unclaimed.is_empty() {
            continue;
        }
        let refusal = StatedRefusal {
            pod: pod.clone(),
            stated: ids.clone(),
            id,
            up_on: None,
            exists: dump.osds.contains_key(&id),
            on_node,
            unclaimed,
        };
        refused.push((i, refusal));
    }
    for (i, refusal) in refused {
        mapped[i].ids = KeyIds::Unknown(UnknownReason::StatedRefuted(refusal));
    }
}

#[cfg(test)]
mod tests;
