//! Disk replacements keeping the OSD id, pure: each asked-for key goes Draining → Destroying →
//! AwaitingDisk → Preparing → Backfilling → Done, judged anew from the CephOSD's records, the
//! admin's requests, its pods and Ceph on every plan, so a restarted operator resumes where
//! Ceph and the status stand.
//!
//! - Draining: the key is withheld from the spec, so its pod goes as a removal's does (marked
//!   out, drained until Ceph says no PG needs it, stopped in its update domain's turn, under
//!   the Ceph cluster's step lock). An OSD already down is marked out at once (nothing can
//!   drain from it; Ceph would after its down-out interval).
//! - Destroying: once no pod of the key is left and the OSD is down: `osd destroy` with the
//!   OSD map epoch of a `safe-to-destroy` that passed in this plan (the executor destroys only
//!   at that epoch; any change asks again). Never `purge`: CRUSH position and weight stay.
//! - AwaitingDisk: the id is destroyed; no pod until the admin confirms the new disk.
//! - Preparing: the pod is created again carrying `OSD_ID`; its template prepares the new disk
//!   with that id. A pod that ends in error or whose container exits non-zero fails the
//!   prepare (PrepareFailed): the id stays destroyed, the pod is withheld again until another
//!   confirmation.
//! - Backfilling: the daemon is up with the id; marked in if out; done once every PG is clean.
//!
//! A confirmation counts only once and only once the id is destroyed (one given earlier could
//! be the old disk's). One replacement at a time per CephOSD. A request withdrawn before the
//! destroy gives the OSD back (its key returns to the spec); after it, the replacement goes on
//! until the new disk is in.

use crate::ceph::{is_clean_state, BackfillLook, DestroyLook, OsdDump, OsdId, OsdInfo, PgStates};
use crate::crd::osd::OsdKey;
use crate::crd::replacement::{ReplaceRequest, Replacement, ReplacementPhase};
use crate::crd::CephStep;
use crate::plan::says::actions::Action;
use crate::plan::says::events::{EventReason, PlannedEvent};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// Look at Ceph this often while a replacement is under way (its progress triggers no watch).
pub(crate) const REPLACEMENT_LOOKS: SignedDuration = SignedDuration::from_secs(2);

/// What this plan sees of the pods of one key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyPods {
    /// Some pod of the key exists (terminating ones too).
    pub any: bool,
    /// Why a pod of the key failed (ended in error, or a container exited non-zero).
    pub failed: Option<String>,
}

/// What the replacements are judged from.
pub(crate) struct ReplaceInput<'a> {
    pub previous: &'a [Replacement],
    pub requests: &'a [ReplaceRequest],
    /// The spec's keys, and those it is ambiguous about.
    pub spec_keys: &'a BTreeSet<OsdKey>,
    pub blocked: &'a BTreeSet<OsdKey>,
    /// The OSD ids of each key as the status keeps them.
    pub known_ids: &'a BTreeMap<String, Vec<u32>>,
    pub pods: &'a BTreeMap<OsdKey, KeyPods>,
    /// Why Ceph cannot be used (the gate is off), if so.
    pub gate_off: Option<&'a str>,
    /// Ceph's OSD map and PG states of this reconcile, when read.
    pub osds: Option<&'a OsdDump>,
    pub pgs: Option<&'a PgStates>,
    pub destroy_look: Option<&'a DestroyLook>,
    /// The PGs of the new daemon of a replacement in `Backfilling`.
    pub backfill_look: Option<&'a BackfillLook>,
    /// This CephOSD's open Ceph step.
    pub step: Option<&'a CephStep>,
    pub now: Timestamp,
}

/// What the replacements come to.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReplaceOutcome {
    /// `status.replacements` after this plan.
    pub records: Vec<Replacement>,
    /// Keys taken out of the spec for this plan: their pods go and are not created.
    pub withheld: BTreeSet<OsdKey>,
    /// Keys whose pod is created carrying the id to prepare.
    pub preparing: BTreeMap<OsdKey, u32>,
    /// Ceph writes (`MarkOut`, `DestroyOsd`, `MarkIn`), before the rollout's.
    pub actions: Vec<Action>,
    pub events: Vec<PlannedEvent>,
    /// What a replacement under way waits for: the CephOSD is not converged.
    pub under_way: Option<String>,
    pub requeue_after: Option<SignedDuration>,
    /// Entries of the annotation that cannot be read, each named.
    pub unreadable: Vec<String>,
    /// A request waits for its key's OSD id: the runtime learns the ids from Ceph's metadata.
    pub wants_osd_ids: bool,
    /// Why no rollout step starts: a replacement destroys its id or prepares its new disk.
    pub holds_rollout: Option<String>,
}

/// The replacements after this plan (see the module docs).
pub(crate) fn replacements(input: &ReplaceInput<'_>) -> ReplaceOutcome {
    let mut out = ReplaceOutcome::default();
    let requested: BTreeMap<String, &ReplaceRequest> = (input.requests.iter())
        .map(|r| (r.key.to_string(), r))
        .collect();
    withdrawn(&mut out, input, &requested);
    let mut busy = (out.records.iter())
        .find(|r| !r.phase.is_over())
        .map(|r| r.key.clone());
    for request in input.requests {
        let key = request.key.to_string();
        let previous = input.previous.iter().find(|r| r.key == key);
        let record = match previous {
            Some(r) if r.phase != ReplacementPhase::Refused => r.clone(),
            _ => match start(input, request, busy.as_deref()) {
                Ok(record) => {
                    out.events.push(event(
                        false,
                        format!(
                            "osd.{} ({key}): replacement asked for: draining it before its pod \
                             stops",
                            record.id
                        ),
                    ));
                    record
                }
                Err(why) => {
                    let known = input.known_ids.get(&key).is_some_and(|ids| !ids.is_empty());
                    out.wants_osd_ids |= !known && input.gate_off.is_none();
                    let id = match input.known_ids.get(&key).map(Vec::as_slice) {
                        Some([id]) => Some(*id),
                        _ => None,
                    };
                    let refused = refused(previous, &key, id, why, input.now);
                    if previous.is_none_or(|p| p.message != refused.message) {
                        out.events.push(event(true, refused.message.clone()));
                    }
                    out.records.push(refused);
                    continue;
                }
            },
        };
        if !record.phase.is_over() {
            busy.get_or_insert_with(|| key.clone());
        }
        keep(&mut out, input, record, Some(request));
    }
    summarize(&mut out);
    out
}

/// The records whose request is gone: dropped (the OSD given back), unless the id is
/// destroyed already: then kept, saying so.
fn withdrawn(
    out: &mut ReplaceOutcome,
    input: &ReplaceInput<'_>,
    requested: &BTreeMap<String, &ReplaceRequest>,
) {
    // Records whose request is gone: dropped, unless the id is destroyed already.
    for record in input.previous {
        if requested.contains_key(&record.key) {
            continue;
        }
        if record.phase.id_destroyed() {
            keep(out, input, record.clone(), None);
            if let Some(kept) = out.records.last_mut() {
                let withdrawn = format!(
                    "the request was withdrawn, but osd.{} is destroyed: no pod runs on the old \
                     disk; put the entry back (`=swapped` once the new disk is in); ",
                    kept.id
                );
                let said = kept
                    .message
                    .strip_prefix(&withdrawn)
                    .unwrap_or(&kept.message);
                kept.message = format!("{withdrawn}{said}");
            }
        } else if !record.phase.is_over() {
            out.events.push(event(
                false,
                format!(
                    "osd.{} ({}): the replacement was called off in {}: its OSD is given back",
                    record.id, record.key, record.phase
                ),
            ));
        }
    }
}

/// The records in key order, and what the replacements under way hold and say.
fn summarize(out: &mut ReplaceOutcome) {
    out.records.sort_by(|a, b| a.key.cmp(&b.key));
    let under_way: Vec<String> = (out.records.iter())
        .filter(|r| !r.phase.is_over())
        .map(|r| format!("osd.{} ({}) {}: {}", r.id, r.key, r.phase, r.message))
        .collect();
    out.holds_rollout = (out.records.iter())
        .find(|r| {
            matches!(
                r.phase,
                ReplacementPhase::Destroying | ReplacementPhase::Preparing
            )
        })
        .map(|r| {
            format!(
                "the disk replacement of osd.{} ({}) is {}: no rollout step starts until its new \
                 daemon is up",
                r.id, r.key, r.phase
            )
        });
    if !under_way.is_empty() {
        out.under_way = Some(format!("replacing the disk of {}", under_way.join("; ")));
        out.requeue_after = Some(REPLACEMENT_LOOKS);
    }
}

/// Moves `record` on as far as this plan's view lets it, and keeps it in `out`.
fn keep(
    out: &mut ReplaceOutcome,
    input: &ReplaceInput<'_>,
    record: Replacement,
    request: Option<&ReplaceRequest>,
) {
    let before = record.phase;
    let next = advance(input, record, request, &mut out.actions);
    if next.phase != before {
        let warning = next.phase == ReplacementPhase::PrepareFailed;
        out.events.push(event(
            warning,
            format!(
                "osd.{} ({}): {before} → {}: {}",
                next.id, next.key, next.phase, next.message
            ),
        ));
    }
    let key = parse_key(&next.key);
    if next.phase.withholds_pod() {
        out.withheld.insert(key);
    } else if next.phase == ReplacementPhase::Preparing {
        out.preparing.insert(key, next.id);
    }
    out.records.push(next);
}

fn parse_key(key: &str) -> OsdKey {
    let (host, data) = key.split_once(':').unwrap_or((key, ""));
    OsdKey::new(host, data)
}

fn event(warning: bool, note: String) -> PlannedEvent {
    PlannedEvent {
        warning,
        reason: EventReason::DiskReplacement,
        note,
        pod: None,
    }
}

/// A new replacement of `request`'s key, or why none may start now.
fn start(
    input: &ReplaceInput<'_>,
    request: &ReplaceRequest,
    busy: Option<&str>,
) -> Result<Replacement, String> {
    let key = request.key.to_string();
    if let Some(off) = input.gate_off {
        return Err(format!(
            "{key}: a disk replacement needs Ceph, and the Ceph gate is off ({off})"
        ));
    }
    if !input.spec_keys.contains(&request.key) {
        return Err(format!(
            "{key} is not in the spec (an OSD being removed is not replaced)"
        ));
    }
    if input.blocked.contains(&request.key) {
        return Err(format!(
            "{key}: the spec is ambiguous about this disk (see InvalidSpec)"
        ));
    }
    let id = match input.known_ids.get(&key).map(Vec::as_slice) {
        Some([id]) => *id,
        Some([]) | None => {
            return Err(format!(
                "{key}: its OSD id is not known yet (learnt from `ceph osd metadata` while its \
                 daemon is up)"
            ))
        }
        Some(ids) => {
            return Err(format!(
                "{key} runs several OSDs ({ids:?}): only a disk of one OSD is replaced"
            ))
        }
    };
    if let Some((other, _)) =
        (input.known_ids.iter()).find(|(other, ids)| **other != key && ids.contains(&id))
    {
        return Err(format!(
            "{key}: osd.{id} is also claimed by {other}: the id must be one disk's"
        ));
    }
    if let Some(busy) = busy.filter(|b| *b != key) {
        return Err(format!(
            "{key} (osd.{id}) waits: the replacement of {busy} is under way (one at a time)"
        ));
    }
    if input
        .step
        .is_some_and(|s| s.drain.is_none() && s.keys.contains(&key))
    {
        return Err(format!(
            "{key} (osd.{id}) waits: its update domain is being rolled (the open step)"
        ));
    }
    let Some(dump) = input.osds else {
        return Err(format!(
            "{key} (osd.{id}) waits: Ceph's OSD map was not read"
        ));
    };
    let Some(osd) = dump.osds.get(&OsdId(id)) else {
        return Err(format!("{key}: Ceph has no osd.{id}"));
    };
    let destroyed = osd.is_destroyed();
    let (phase, message) = if destroyed {
        (
            ReplacementPhase::AwaitingDisk,
            "the id is destroyed already: waiting for the new disk".to_owned(),
        )
    } else {
        (
            ReplacementPhase::Draining,
            "marked out: Ceph moves its data to other OSDs".to_owned(),
        )
    };
    Ok(Replacement {
        key,
        id,
        phase,
        started: Time(input.now),
        since: Time(input.now),
        message,
        pgs_remaining: None,
        pgs_at_most: None,
        eta: None,
        disk_swapped: None,
    })
}

/// A refused record of `key` (OSD `id` when known: else 0), keeping when it was first refused.
fn refused(
    previous: Option<&Replacement>,
    key: &str,
    id: Option<u32>,
    why: String,
    now: Timestamp,
) -> Replacement {
    let started = previous.map_or(Time(now), |p| p.started.clone());
    let id = id.unwrap_or(0);
    Replacement {
        key: key.to_owned(),
        id,
        phase: ReplacementPhase::Refused,
        started: started.clone(),
        since: started,
        message: why,
        pgs_remaining: None,
        pgs_at_most: None,
        eta: None,
        disk_swapped: None,
    }
}

/// What one record is judged from in this plan.
struct Look<'a> {
    input: &'a ReplaceInput<'a>,
    id: OsdId,
    osd: &'a OsdInfo,
    pods: KeyPods,
    /// The annotation's confirmation of the new disk, if any.
    confirmation: Option<String>,
}

impl Look<'_> {
    /// Moves `record` to `phase` saying `message` (its `since` only on a change of phase).
    fn to(&self, record: &mut Replacement, phase: ReplacementPhase, message: String) {
        if record.phase != phase {
            record.since = Time(self.input.now);
            (record.pgs_at_most, record.eta) = (None, None);
        }
        record.phase = phase;
        record.message = message;
    }
}

/// `record` stays in its phase, saying `message`.
fn says(record: &mut Replacement, message: String) {
    record.message = message;
}

/// `record` after this plan; Ceph writes into `actions`.
fn advance(
    input: &ReplaceInput<'_>,
    mut record: Replacement,
    request: Option<&ReplaceRequest>,
    actions: &mut Vec<Action>,
) -> Replacement {
    let id = OsdId(record.id);
    let Some(osd) = input.osds.and_then(|d| d.osds.get(&id)) else {
        if input.osds.is_some() && !record.phase.is_over() {
            record.message = format!(
                "Ceph has no osd.{} any more (purged?): nothing to keep",
                id.0
            );
        }
        return record;
    };
    let look = Look {
        input,
        id,
        osd,
        pods: (input.pods.get(&parse_key(&record.key)).cloned()).unwrap_or_default(),
        confirmation: request.and_then(|r| r.swapped.clone()),
    };
    match record.phase {
        ReplacementPhase::Draining => draining(&look, &mut record, actions),
        ReplacementPhase::Destroying => destroying_phase(&look, &mut record, actions),
        ReplacementPhase::AwaitingDisk | ReplacementPhase::PrepareFailed => {
            awaiting_disk(&look, &mut record);
        }
        ReplacementPhase::Preparing => preparing(&look, &mut record, actions),
        ReplacementPhase::Backfilling => backfilling(&look, &mut record, actions),
        ReplacementPhase::Done | ReplacementPhase::Refused => {}
    }
    record
}

/// Draining: out (a down OSD at once, an up one by its drain), until its pod is gone.
fn draining(look: &Look<'_>, record: &mut Replacement, actions: &mut Vec<Action>) {
    let (osd, id) = (look.osd, look.id);
    // A confirmation before the destroy may be the old disk's: spent, not taken.
    if look.confirmation.is_some() {
        record.disk_swapped.clone_from(&look.confirmation);
    }
    if osd.is_in && !osd.up {
        actions.push(Action::MarkOut { ids: vec![id] });
    }
    let stepping = (look.input.step).is_some_and(|s| s.keys.contains(&record.key));
    if look.osd.is_destroyed() {
        look.to(record, ReplacementPhase::AwaitingDisk, awaiting(id));
    } else if !look.pods.any && !osd.is_in && !stepping {
        let message = destroying(look, &record.key, actions);
        look.to(record, ReplacementPhase::Destroying, message);
    } else {
        let message = if osd.up {
            "marked out in its update domain's turn; its pod stops once Ceph says no PG needs it"
        } else {
            "down and marked out: its pod stops once Ceph has recovered its PGs elsewhere"
        };
        says(record, message.to_owned());
        moving(record, remaining(look.input.pgs), look.input.now);
    }
}

/// Destroying: once the pod is gone, at the epoch of a passing `safe-to-destroy`.
fn destroying_phase(look: &Look<'_>, record: &mut Replacement, actions: &mut Vec<Action>) {
    if look.confirmation.is_some() {
        record.disk_swapped.clone_from(&look.confirmation);
    }
    if look.osd.is_destroyed() {
        look.to(record, ReplacementPhase::AwaitingDisk, awaiting(look.id));
    } else {
        let message = destroying(look, &record.key, actions);
        says(record, message);
    }
}

/// AwaitingDisk and PrepareFailed: a confirmation not spent yet prepares the new disk.
fn awaiting_disk(look: &Look<'_>, record: &mut Replacement) {
    let fresh = (look.confirmation.clone()).filter(|c| record.disk_swapped.as_ref() != Some(c));
    if let Some(word) = fresh.filter(|_| look.osd.is_destroyed()) {
        record.disk_swapped = Some(word);
        let message = format!(
            "new disk confirmed: its pod prepares it with OSD_ID={}",
            look.id.0
        );
        look.to(record, ReplacementPhase::Preparing, message);
    } else if record.phase == ReplacementPhase::AwaitingDisk {
        says(record, awaiting(look.id));
    }
}

/// Preparing: until the daemon is up with the id, or the pod failed.
fn preparing(look: &Look<'_>, record: &mut Replacement, actions: &mut Vec<Action>) {
    let (osd, id) = (look.osd, look.id);
    if let Some(why) = &look.pods.failed {
        let message = format!(
            "the prepare failed ({why}): osd.{} stays destroyed; confirm the disk again to \
             retry (`=swapped-<token>`, another than {:?})",
            id.0,
            record.disk_swapped.as_deref().unwrap_or_default()
        );
        look.to(record, ReplacementPhase::PrepareFailed, message);
    } else if osd.up && !look.osd.is_destroyed() {
        if !osd.is_in {
            actions.push(Action::MarkIn { ids: vec![id] });
        }
        let message = format!("osd.{} is up on the new disk: data moves back", id.0);
        look.to(record, ReplacementPhase::Backfilling, message);
        moving(record, remaining(look.input.pgs), look.input.now);
    } else {
        says(
            record,
            format!(
                "waiting for the pod to prepare the new disk and its daemon to boot as osd.{}",
                id.0
            ),
        );
    }
}

/// Backfilling: in, until every PG is clean.
fn backfilling(look: &Look<'_>, record: &mut Replacement, actions: &mut Vec<Action>) {
    let (osd, id) = (look.osd, look.id);
    if osd.up && !osd.is_in {
        actions.push(Action::MarkIn { ids: vec![id] });
    }
    moving(record, remaining(look.input.pgs), look.input.now);
    match look.input.pgs {
        Some(pgs) if pgs.ready && pgs.all_clean() && osd.up && osd.is_in => {
            match counted_by_the_mgr(look) {
                Ok(held) => {
                    record.pgs_remaining = Some(0);
                    let message = format!(
                        "osd.{} serves the new disk ({held} PGs); every PG is clean",
                        id.0
                    );
                    look.to(record, ReplacementPhase::Done, message);
                }
                Err(why) => says(record, why),
            }
        }
        Some(pgs) => says(
            record,
            format!("data moves back: {}", pgs.describe_not_clean()),
        ),
        None => {}
    }
}

/// How many PGs the new daemon holds, all clean and reported since it booted: the mgr's PG
/// states count it (right after its boot they may still say clean of the placement without
/// it); or why not yet.
fn counted_by_the_mgr(look: &Look<'_>) -> Result<usize, String> {
    let id = look.id;
    let Some(asked) = look.input.backfill_look.filter(|l| l.id == id) else {
        return Err(format!("looking at the PGs of osd.{}", id.0));
    };
    let pgs = (asked.pgs.as_ref())
        .map_err(|why| format!("Ceph did not list the PGs of osd.{}: {why}", id.0))?;
    let reported = |p: &&crate::ceph::PgBrief| p.reported_epoch >= look.osd.up_from;
    let settled = pgs
        .iter()
        .filter(reported)
        .filter(|p| is_clean_state(&p.state))
        .count();
    if pgs.is_empty() || settled < pgs.len() {
        return Err(format!(
            "every PG is clean, but the mgr does not count osd.{} yet ({settled} of {} PGs on it \
             reported clean since it booted)",
            id.0,
            pgs.len()
        ));
    }
    Ok(settled)
}

/// The destroy of `id` if this plan's `safe-to-destroy` allows it, and what the phase says.
fn destroying(look: &Look<'_>, key: &str, actions: &mut Vec<Action>) -> String {
    let (input, id) = (look.input, look.id);
    if look.osd.up {
        return format!(
            "osd.{} is still up: destroyed once its daemon is down",
            id.0
        );
    }
    if look.pods.any {
        return format!(
            "a pod of {key} is still there: osd.{} is destroyed once it is gone",
            id.0
        );
    }
    let Some(asked) = input.destroy_look else {
        return format!("asking Ceph whether osd.{} is safe to destroy", id.0);
    };
    match &asked.answer {
        Err(why) => format!(
            "Ceph did not say whether osd.{} is safe to destroy: {why}",
            id.0
        ),
        Ok(answer) if answer.safe_to_destroy.contains(&id) => {
            actions.push(Action::DestroyOsd {
                id,
                epoch: asked.epoch,
            });
            format!(
                "safe to destroy at OSD map epoch {}: destroying osd.{} (its id, CRUSH place and \
                 weight stay)",
                asked.epoch, id.0
            )
        }
        Ok(_) => format!(
            "Ceph says PGs still need osd.{}: never destroyed while they do",
            id.0
        ),
    }
}

fn awaiting(id: OsdId) -> String {
    format!(
        "osd.{} is destroyed: swap the disk, then confirm it (`kubectl ceph-osd replace … \
         --disk-swapped`)",
        id.0
    )
}

/// `record` with `left` PGs to move at `now`: the most seen in its phase, and when the rest
/// should be moved at the pace since then (None before any progress, or with nothing left).
fn moving(record: &mut Replacement, left: Option<u64>, now: Timestamp) {
    record.pgs_remaining = left;
    let Some(left) = left else {
        return;
    };
    let most = record.pgs_at_most.map_or(left, |m| m.max(left));
    record.pgs_at_most = Some(most);
    let moved = most - left;
    let elapsed = u64::try_from(now.duration_since(record.since.0).as_secs()).unwrap_or(0);
    record.eta = (moved > 0 && left > 0 && elapsed > 0).then(|| {
        let rest = elapsed.saturating_mul(left) / moved;
        let rest = SignedDuration::from_secs(i64::try_from(rest).unwrap_or(i64::MAX));
        Time(now.saturating_add(rest).unwrap_or(now))
    });
}

/// PGs not clean, when Ceph said.
fn remaining(pgs: Option<&PgStates>) -> Option<u64> {
    pgs.filter(|p| p.ready).map(PgStates::not_clean_count)
}

#[cfg(test)]
mod tests;
