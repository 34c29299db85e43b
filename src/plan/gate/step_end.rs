//! When a step is over, pure: every stopped OSD runs a new daemon and the PGs are clean by a
//! PG digest that cannot predate that daemon.
//!
//! The rule: each stopped OSD is up with an `up_from` newer than recorded before the stop (the
//! new daemon booted, not the old one's state), every PG is clean (quorum, a mgr, `pg_ready`),
//! and the PGs are known to be clean *since* the boot, by either signal:
//! - every PG on each stopped OSD (`pg ls-by-osd`) is clean in a report of an epoch at least
//!   that OSD's new `up_from` (the reporting OSD knew the new daemon was up: the PG peered
//!   with it). Exact, and as soon as Ceph itself knows;
//! - or, when those reports cannot be had (the key lacks the cap), two consecutive looks find
//!   every PG clean, the later one taken at least `pg_stats_lag` after the first look that
//!   found all of them up. PG states trail the osdmap by up to the mgr's stats period: right
//!   after a stop `stale+active+clean` (not clean), right after a restart the states of while
//!   the OSD was down, and after a stop shorter than that period the pre-stop `active+clean`
//!   itself. Waiting one stats period past the boot leaves only states reported after it.

use super::drain_end::DrainProgress;
use super::verdict::{cluster_blockers, others_down, Blocker};
use crate::ceph::{is_clean_state, CephFacts, OsdDump, OsdId, PgsOnOsds};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Default of `pg_stats_lag`: Ceph's `mgr_stats_period` (5 s) and a second.
pub const DEFAULT_PG_STATS_LAG: Duration = Duration::from_secs(6);

/// Follows one step from its stop to its end. A new leader rebuilds it from the `up_from`s
/// recorded before the stop; it then waits the lag again, which is only later, never wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepWatch {
    up_from_before: BTreeMap<OsdId, u64>,
    pg_stats_lag: Duration,
    /// When a look first found every stopped OSD back (reset when one is not).
    all_booted_at: Option<Instant>,
    /// Consecutive looks, since then, that found every PG clean.
    clean_looks: u32,
    /// The last look: when its calls were started, and what it found.
    last: Option<(Instant, StepProgress)>,
}

/// Where the step stands after a look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepProgress {
    /// These stopped OSDs have no new daemon up yet.
    Booting { pending: Vec<OsdId> },
    /// The new daemons are up; the cluster is not clean.
    Recovering { blockers: Vec<Blocker> },
    /// Clean, not yet confirmed by a second look taken late enough.
    Confirming {
        clean_looks: u32,
        wait_at_least: Duration,
    },
    /// Every stopped OSD runs a new daemon and every PG is clean: clear `noout`, go on.
    Done,
    /// A removal's drain (never a `StepWatch`'s answer): whether Ceph still needs its OSDs.
    Draining(DrainProgress),
}

impl StepProgress {
    /// Ceph could not be looked at (`error`): the step stays open, saying why.
    pub fn unanswered(error: &dyn std::fmt::Display) -> Self {
        Self::Recovering {
            blockers: vec![Blocker::NoAnswer {
                error: error.to_string(),
            }],
        }
    }
}

impl StepWatch {
    /// `up_from_before`: each OSD to be stopped and its `up_from` read before the stop.
    pub fn new(up_from_before: BTreeMap<OsdId, u64>, pg_stats_lag: Duration) -> Self {
        Self {
            up_from_before,
            pg_stats_lag,
            all_booted_at: None,
            clean_looks: 0,
            last: None,
        }
    }

    /// What the last look found, if it was started less than `within` before `now`: a
    /// reconcile brought by a pod's event then needs no look of its own.
    pub fn recent(&self, now: Instant, within: Duration) -> Option<StepProgress> {
        self.last
            .as_ref()
            .filter(|(at, _)| now.saturating_duration_since(*at) < within)
            .map(|(_, progress)| progress.clone())
    }

    /// Takes one look (`at`: when its calls were started; `pgs_on`: the PGs on the stopped
    /// OSDs, as far as asked) and says where the step stands.
    pub fn observe(&mut self, at: Instant, facts: &CephFacts, pgs_on: &PgsOnOsds) -> StepProgress {
        let progress = self.progress(at, facts, pgs_on);
        self.last = Some((at, progress.clone()));
        progress
    }

    fn progress(&mut self, at: Instant, facts: &CephFacts, pgs_on: &PgsOnOsds) -> StepProgress {
        let pending = not_booted(&self.up_from_before, &facts.osds);
        if !pending.is_empty() {
            self.all_booted_at = None;
            self.clean_looks = 0;
            return StepProgress::Booting { pending };
        }
        let booted_at = *self.all_booted_at.get_or_insert(at);
        // An OSD down outside the step is named before the PGs it leaves unclean.
        let (pgs_not_clean, mut blockers): (Vec<_>, Vec<_>) = cluster_blockers(facts)
            .into_iter()
            .partition(|b| matches!(b, Blocker::PgsNotClean { .. }));
        let stopped: BTreeSet<OsdId> = self.up_from_before.keys().copied().collect();
        blockers.extend(others_down(facts, &stopped));
        blockers.extend(pgs_not_clean);
        if !blockers.is_empty() {
            self.clean_looks = 0;
            return StepProgress::Recovering { blockers };
        }
        self.clean_looks = self.clean_looks.saturating_add(1);
        let since_boot = at.saturating_duration_since(booted_at);
        if self.reported_clean_since_boot(facts, pgs_on)
            || self.clean_looks >= 2 && since_boot >= self.pg_stats_lag
        {
            StepProgress::Done
        } else {
            StepProgress::Confirming {
                clean_looks: self.clean_looks,
                wait_at_least: self.pg_stats_lag.saturating_sub(since_boot),
            }
        }
    }
}

/// The stopped OSDs (each with its `up_from` before the stop) whose new daemon `osds` does not
/// show up yet: while any is, the step cannot end and Ceph's PG states say nothing about it.
pub(crate) fn not_booted(up_from_before: &BTreeMap<OsdId, u64>, osds: &OsdDump) -> Vec<OsdId> {
    up_from_before
        .iter()
        .filter(|(id, before)| {
            !osds
                .osds
                .get(id)
                .is_some_and(|o| o.up && o.up_from > **before)
        })
        .map(|(id, _)| *id)
        .collect()
}

impl StepWatch {
    /// Every PG on each stopped OSD clean in a report at least as new as its boot.
    fn reported_clean_since_boot(&self, facts: &CephFacts, pgs_on: &PgsOnOsds) -> bool {
        self.up_from_before.keys().all(|id| {
            let (Some(osd), Some(pgs)) = (facts.osds.osds.get(id), pgs_on.get(id)) else {
                return false;
            };
            pgs.iter()
                .all(|pg| is_clean_state(&pg.state) && pg.reported_epoch >= osd.up_from)
        })
    }
}

#[cfg(test)]
mod tests;
