//! OSDs that are `out` in Ceph, pure: the operator keeps a record of those it marked out (a
//! removal's drain) after the drain ends and the pod is gone, so that a key put back in the
//! spec gets its OSD marked `in` again once its daemon is up; a record is forgotten once Ceph
//! has the OSD `in` again or no longer has it (purged, destroyed). OSDs of the spec's keys
//! that are out without such a record (an admin's `ceph osd out`, Ceph's down-out interval)
//! are named, never marked in: the `OsdsIn` condition says which and why.

use crate::ceph::{osd_list, OsdDump, OsdId};
use crate::crd::{CephStep, MarkedBy, OsdOut};
use crate::plan::says::actions::Action;
use crate::plan::says::conditions::{ConditionReason, StatedCondition};
use crate::plan::says::events::OTHERS_OUT;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// Look at Ceph this often while an OSD waits for its daemon to be marked in (its boot
/// triggers no Kubernetes event).
pub(crate) const MARK_IN_LOOKS: SignedDuration = SignedDuration::from_secs(2);

/// What the out OSDs are judged from.
pub(crate) struct OutInput<'a> {
    /// The records of the status so far.
    pub previous: &'a [OsdOut],
    /// Ceph's `osd dump` of this reconcile; None: the gate is off or Ceph was not read (the
    /// records stay as they are, nothing is marked in).
    pub osds: Option<&'a OsdDump>,
    /// The spec's keys (`host:data`).
    pub desired: &'a BTreeSet<String>,
    /// The OSD ids of each key as the status keeps them.
    pub known: &'a BTreeMap<String, Vec<u32>>,
    /// The Ceph step after this plan: a drain's marked-out ids are recorded, and left to it.
    pub step: Option<&'a CephStep>,
    /// The ids the gate marks in itself in this plan (a key back before its pod stopped).
    pub gate_marks_in: &'a BTreeSet<u32>,
    pub now: Timestamp,
}

/// What the out OSDs come to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OutOutcome {
    /// `status.osdsOut` after this plan.
    pub records: Vec<OsdOut>,
    /// Marked in by this plan: the operator marked them out, their key is back, their
    /// daemon is up.
    pub mark_in: Vec<OsdId>,
    /// The `OsdsIn` condition; None without Ceph's answer.
    pub condition: Option<StatedCondition>,
    /// Why the CephOSD is not converged yet: OSDs the operator marks in once their daemon
    /// is up (or is marking in now).
    pub marking_in: Option<String>,
    pub requeue_after: Option<SignedDuration>,
}

/// The out OSDs after this plan.
pub(crate) fn out_osds(input: &OutInput<'_>) -> OutOutcome {
    let draining: BTreeMap<u32, String> = drain_marked_out(input.step);
    let Some(dump) = input.osds else {
        let mut records = input.previous.to_vec();
        record_drain(&mut records, &draining, input.now);
        return OutOutcome {
            records,
            mark_in: Vec::new(),
            condition: None,
            marking_in: None,
            requeue_after: None,
        };
    };
    let records = records_after(input, &draining, dump);
    let up = |id: u32| dump.osds.get(&OsdId(id)).is_some_and(|o| o.up);
    // The operator's own, whose key is back: marked in once up, waited for until then.
    let back: Vec<&OsdOut> = (records.iter())
        .filter(|r| r.marked_by == MarkedBy::Operator)
        .filter(|r| input.desired.contains(&r.key) && !draining.contains_key(&r.id))
        .collect();
    let (up_again, waiting): (Vec<&OsdOut>, Vec<&OsdOut>) = back.iter().partition(|r| up(r.id));
    let mark_in: Vec<OsdId> = up_again.iter().map(|r| OsdId(r.id)).collect();
    let marking = marking_text(&up_again, &waiting);
    let others: Vec<&OsdOut> = (records.iter())
        .filter(|r| r.marked_by == MarkedBy::Other)
        .collect();
    let mut said: Vec<String> = marking.iter().cloned().collect();
    said.extend(others_text(&others, &up));
    let condition = if said.is_empty() {
        StatedCondition {
            holds: true,
            reason: ConditionReason::AllOsdsIn,
            message: "every OSD of the spec's keys that Ceph knows is in".to_owned(),
        }
    } else {
        StatedCondition {
            holds: false,
            reason: ConditionReason::OsdsOut,
            message: said.join("; "),
        }
    };
    let requeue_after = (!back.is_empty()).then_some(MARK_IN_LOOKS);
    OutOutcome {
        records,
        mark_in,
        condition: Some(condition),
        marking_in: marking,
        requeue_after,
    }
}

/// The records of an open drain's `draining` ids added (or taken over).
fn record_drain(records: &mut Vec<OsdOut>, draining: &BTreeMap<u32, String>, now: Timestamp) {
    for (id, key) in draining {
        match records.iter_mut().find(|r| r.id == *id) {
            Some(r) => {
                r.marked_by = MarkedBy::Operator;
                r.key.clone_from(key);
            }
            None => records.push(OsdOut {
                id: *id,
                key: key.clone(),
                marked_by: MarkedBy::Operator,
                since: Time(now),
            }),
        }
    }
    records.sort_by_key(|r| r.id);
}

/// The records after Ceph's `dump`: the operator's kept while Ceph has them out (an open
/// drain's always: its `out` may not be written yet), forgotten once in again, gone from Ceph
/// or marked in by the gate; someone else's recounted from the spec's keys' known ids.
fn records_after(
    input: &OutInput<'_>,
    draining: &BTreeMap<u32, String>,
    dump: &OsdDump,
) -> Vec<OsdOut> {
    let is_out = |id: u32| {
        (dump.osds.get(&OsdId(id)))
            .filter(|o| !o.is_destroyed())
            .is_some_and(|o| !o.is_in)
    };
    let mut records = input.previous.to_vec();
    record_drain(&mut records, draining, input.now);
    records.retain(|r| {
        r.marked_by == MarkedBy::Operator
            && (draining.contains_key(&r.id)
                || is_out(r.id) && !input.gate_marks_in.contains(&r.id))
    });
    let listed = (input.known.iter()).filter(|(k, _)| input.desired.contains(*k));
    for (key, ids) in listed {
        for &id in ids {
            if is_out(id) && records.iter().all(|r| r.id != id) {
                let since = (input.previous.iter())
                    .find(|r| r.id == id && r.marked_by == MarkedBy::Other)
                    .map_or(Time(input.now), |r| r.since.clone());
                records.push(OsdOut {
                    id,
                    key: key.clone(),
                    marked_by: MarkedBy::Other,
                    since,
                });
            }
        }
    }
    records.sort_by_key(|r| r.id);
    records
}

/// In words: the operator's own marked in now (`up_again`), and those waiting for their
/// daemon.
fn marking_text(up_again: &[&OsdOut], waiting: &[&OsdOut]) -> Option<String> {
    let ids = |records: &[&OsdOut]| records.iter().map(|r| OsdId(r.id)).collect::<Vec<_>>();
    let mut marking = Vec::new();
    if !up_again.is_empty() {
        let one = up_again.len() == 1;
        marking.push(format!(
            "{} ({}) back in the spec with {} daemon up: marked in again (the operator had \
             marked {} out)",
            osd_list(&ids(up_again)),
            keys_of(up_again.iter().copied()),
            if one { "its" } else { "their" },
            if one { "it" } else { "them" },
        ));
    }
    if !waiting.is_empty() {
        marking.push(format!(
            "{} ({}) back in the spec, out since the operator drained it: marked in once its \
             daemon is up",
            osd_list(&ids(waiting)),
            keys_of(waiting.iter().copied()),
        ));
    }
    (!marking.is_empty()).then(|| marking.join("; "))
}

/// In words: the OSDs someone else has out (`others`), and which of them are down.
fn others_text(others: &[&OsdOut], up: &dyn Fn(u32) -> bool) -> Option<String> {
    if others.is_empty() {
        return None;
    }
    let ids: Vec<OsdId> = others.iter().map(|r| OsdId(r.id)).collect();
    let down: Vec<OsdId> = ids.iter().filter(|id| !up(id.0)).copied().collect();
    let mut text = format!(
        "{} ({}) out in Ceph, {OTHERS_OUT}: {} no data; `ceph osd in <id>` puts it back",
        osd_list(&ids),
        keys_of(others.iter().copied()),
        if ids.len() == 1 {
            "it takes"
        } else {
            "they take"
        },
    );
    if !down.is_empty() {
        text.push_str(&format!(" ({} down)", osd_list(&down)));
    }
    Some(text)
}

/// Each id an open drain marked out, with its key.
fn drain_marked_out(step: Option<&CephStep>) -> BTreeMap<u32, String> {
    let Some(drain) = step.and_then(|s| s.drain.as_ref()) else {
        return BTreeMap::new();
    };
    let marked: BTreeSet<u32> = drain.marked_out.iter().copied().collect();
    (drain.ids.iter())
        .flat_map(|(key, ids)| ids.iter().map(move |id| (*id, key.clone())))
        .filter(|(id, _)| marked.contains(id))
        .collect()
}

fn keys_of<'r>(records: impl Iterator<Item = &'r OsdOut>) -> String {
    let keys: BTreeSet<&str> = records.map(|r| r.key.as_str()).collect();
    keys.into_iter().collect::<Vec<_>>().join(", ")
}

/// Whether Ceph's `osds` differ from what `records` say of the recorded ids and those
/// `known` of the `desired` keys: an OSD out that none names, one named that is in again or
/// gone. A CephOSD otherwise settled is planned again then (an admin's `out` triggers no
/// Kubernetes event).
pub(crate) fn out_changed(
    records: &[OsdOut],
    known: &BTreeMap<String, Vec<u32>>,
    desired: &BTreeSet<String>,
    osds: &OsdDump,
) -> bool {
    let named: BTreeSet<u32> = records.iter().map(|r| r.id).collect();
    let listed = (known.iter())
        .filter(|(key, _)| desired.contains(*key))
        .flat_map(|(_, ids)| ids);
    let ids = listed.chain(&named);
    ids.into_iter().any(|id| {
        let out = (osds.osds.get(&OsdId(*id)))
            .filter(|o| !o.is_destroyed())
            .map(|o| !o.is_in);
        match out {
            Some(out) => out != named.contains(id),
            None => named.contains(id),
        }
    })
}

/// The actions that mark in, of `first` (the gate's first writes).
pub(crate) fn marked_in_by(first: &[Action]) -> BTreeSet<u32> {
    first
        .iter()
        .filter_map(|a| match a {
            Action::MarkIn { ids } => Some(ids.iter().map(|id| id.0)),
            _ => None,
        })
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests;
