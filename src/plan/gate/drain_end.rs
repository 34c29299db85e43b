//! Whether a removal's drain is over, pure: its OSDs were marked out; their pods may stop
//! once Ceph says no PG needs them (`safe-to-destroy`) and every PG is clean (none left
//! degraded). Until then it says why with Ceph's numbers, and whether Ceph is moving the data
//! at all: with fewer failure domains in than a pool's size it cannot place the copies, and
//! the PGs stay remapped with nothing moving.

use super::verdict::cluster_blockers;
use crate::ceph::{osd_list, CephError, CephFacts, OsdId, PgStates, PgsOnOsds, SafeToDestroy};
use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

/// Where a drain stands after a look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrainProgress {
    /// No PG needs the leaving OSDs and every PG is clean: their pods may stop.
    Safe,
    /// Ceph still needs them and is moving their data (or its PG states trail the `out`).
    Moving { why: String },
    /// Ceph still needs them and no PG moves: it cannot place their data elsewhere.
    Stuck { why: String },
    /// Ceph could not be asked, or cannot tell.
    NoAnswer { why: String },
}

/// How far apart two looks must both find a drain safe before its pods stop: one look's
/// `safe-to-destroy` and PG states may be the mgr's of a moment ago.
pub const DRAIN_CONFIRM_GAP: Duration = Duration::from_secs(1);

/// A drain's `progress` at `at`, confirmed: `Safe` only once a look at least `gap` before
/// (`safe_since`, the first of the looks in a row that found it safe) found it safe too;
/// until then `Moving`, saying so. Also when it was first found safe (None: not safe now).
pub fn confirmed(
    progress: DrainProgress,
    safe_since: Option<Instant>,
    at: Instant,
    gap: Duration,
) -> (DrainProgress, Option<Instant>) {
    match progress {
        DrainProgress::Safe => {
            let since = safe_since.unwrap_or(at);
            if at.saturating_duration_since(since) >= gap {
                (DrainProgress::Safe, Some(since))
            } else {
                let why = format!(
                    "no PG needs the leaving OSDs and every PG is clean: confirmed by a look {}s \
                     later before their pods stop",
                    gap.as_secs_f64()
                );
                (DrainProgress::Moving { why }, Some(since))
            }
        }
        other => (other, None),
    }
}

/// PG state words of data on its way: peering, recovery or backfill under way or queued.
const MOVING: [&str; 8] = [
    "peering",
    "activating",
    "recovering",
    "recovery_wait",
    "forced_recovery",
    "backfilling",
    "backfill_wait",
    "forced_backfill",
];

/// Judges one look at a drain of `ids`: `facts` (status, osd dump, pg stat), `answer`
/// (`safe-to-destroy` for exactly `ids`, not asked without a mgr) and `pgs_on` (the PGs
/// still mapped to each, as far as asked).
pub fn judge_drain(
    ids: &BTreeSet<OsdId>,
    facts: &CephFacts,
    answer: Option<&Result<SafeToDestroy, CephError>>,
    pgs_on: &PgsOnOsds,
) -> DrainProgress {
    let cluster = cluster_blockers(facts);
    if let Some(unavailable) = cluster
        .iter()
        .find(|b| matches!(b.category(), "CephUnavailable" | "CephPgStatesUnknown"))
    {
        return DrainProgress::NoAnswer {
            why: unavailable.to_string(),
        };
    }
    let answer = match answer {
        Some(Ok(answer)) => answer,
        Some(Err(error)) => return DrainProgress::unanswered(error),
        None => {
            return DrainProgress::NoAnswer {
                why: "safe-to-destroy was not asked".to_owned(),
            }
        }
    };
    let needed: BTreeSet<OsdId> = ids.difference(&answer.safe_to_destroy).copied().collect();
    let pgs_unclean: Vec<String> = cluster.iter().map(ToString::to_string).collect();
    if needed.is_empty() && pgs_unclean.is_empty() {
        return DrainProgress::Safe;
    }
    let mut reasons = Vec::new();
    for id in &needed {
        reasons.push(needed_because(*id, answer, pgs_on));
    }
    reasons.extend(pgs_unclean);
    let why = reasons.join("; ");
    let moving = facts.pgs.as_ref().is_some_and(|pgs| {
        pgs.by_state
            .iter()
            .any(|s| s.count > 0 && s.state.split('+').any(|w| MOVING.contains(&w)))
    });
    let all_clean = facts.pgs.as_ref().is_some_and(PgStates::all_clean);
    // Every PG clean yet the OSD still needed: the PG states trail the `out` (moments).
    if moving || all_clean {
        DrainProgress::Moving { why }
    } else if needed.is_empty() {
        DrainProgress::Stuck { why }
    } else {
        DrainProgress::Stuck {
            why: format!(
                "{why}; no PG is peering, recovering or backfilling: Ceph cannot place the data \
                 of {} elsewhere (fewer failure domains in than a pool's size?)",
                osd_list(&needed)
            ),
        }
    }
}

/// Why Ceph still needs `id`, in its own words and numbers.
fn needed_because(id: OsdId, answer: &SafeToDestroy, pgs_on: &PgsOnOsds) -> String {
    if answer.active.contains(&id) {
        match pgs_on.get(&id) {
            Some(pgs) => format!("{} PGs still map to {id}", pgs.len()),
            None => format!("PGs still map to {id}"),
        }
    } else if answer.stored_pgs.contains(&id) {
        format!("{id} last reported storing PG data and not every PG is active+clean")
    } else if answer.missing_stats.contains(&id) {
        format!("Ceph has no stats of {id} and not every PG is active+clean: it cannot tell")
    } else {
        format!("Ceph does not list {id} as safe to destroy")
    }
}

/// Whether `safe-to-destroy` is asked about the drain of `ids` after the look `facts`: only
/// with a mgr (without one it would hang until its bound) and something to ask about.
pub fn asks_safe_to_destroy(facts: &CephFacts, ids: &[OsdId]) -> bool {
    facts.status.mgr_available && !ids.is_empty()
}

impl DrainProgress {
    /// Ceph could not be asked (`error`): no pod stops on no answer.
    pub fn unanswered(error: &dyn fmt::Display) -> Self {
        Self::NoAnswer {
            why: format!("Ceph gave no usable answer: {error}"),
        }
    }

    /// In words, for the condition.
    pub fn describe(&self) -> &str {
        match self {
            Self::Safe => "no PG needs them and every PG is clean",
            Self::Moving { why } | Self::Stuck { why } | Self::NoAnswer { why } => why,
        }
    }
}

#[cfg(test)]
mod tests;
