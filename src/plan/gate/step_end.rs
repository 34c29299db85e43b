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
use crate::ceph::{is_clean_state, CephFacts, OsdId, PgsOnOsds};
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
        let pending: Vec<OsdId> = self
            .up_from_before
            .iter()
            .filter(|(id, before)| {
                !facts
                    .osds
                    .osds
                    .get(id)
                    .is_some_and(|o| o.up && o.up_from > **before)
            })
            .map(|(id, _)| *id)
            .collect();
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
mod tests {
    use super::*;
    use crate::ceph::test_data::{fixture, healthy_status};
    use crate::ceph::{parse_osd_dump, parse_pg_stat, OsdDump, PgStates};

    fn dump(name: &str) -> OsdDump {
        parse_osd_dump(&fixture(name)).unwrap()
    }

    fn pgs(name: &str) -> PgStates {
        parse_pg_stat(&fixture(name)).unwrap()
    }

    fn look(osds: &str, pg: &str) -> CephFacts {
        CephFacts {
            status: healthy_status(),
            osds: dump(osds),
            pgs: Some(pgs(pg)),
        }
    }

    const LAG: Duration = Duration::from_secs(2);

    /// A look without `pg ls-by-osd` (the key lacks the cap): the lag rule alone.
    fn without_reports(w: &mut StepWatch, at: Instant, facts: &CephFacts) -> StepProgress {
        w.observe(at, facts, &PgsOnOsds::new())
    }

    /// osd.1 (up_from 8) stopped and started again, as recorded from the real cluster.
    fn watch() -> StepWatch {
        StepWatch::new(BTreeMap::from([(OsdId(1), 8)]), LAG)
    }

    #[test]
    fn a_restart_as_ceph_showed_it() {
        let t0 = Instant::now();
        let s = |ms| t0 + Duration::from_millis(ms);
        let mut w = watch();
        // Right after the stop: still up in the dump (old up_from), PGs stale.
        assert_eq!(
            without_reports(
                &mut w,
                s(0),
                &look("osd_dump_noout_on_1", "pg_stat_stale_after_stop")
            ),
            StepProgress::Booting {
                pending: vec![OsdId(1)]
            }
        );
        assert!(matches!(
            without_reports(
                &mut w,
                s(500),
                &look("osd_dump_1_down", "pg_stat_one_osd_down")
            ),
            StepProgress::Booting { .. }
        ));
        // Up again with up_from 16; PG states still those of while it was down, then peering.
        assert!(matches!(
            without_reports(
                &mut w,
                s(4000),
                &look("osd_dump_1_up_again", "pg_stat_one_osd_down")
            ),
            StepProgress::Recovering { .. }
        ));
        let StepProgress::Recovering { blockers } = without_reports(
            &mut w,
            s(4500),
            &look("osd_dump_1_up_again", "pg_stat_peering"),
        ) else {
            panic!()
        };
        assert_eq!(
            blockers.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["33 of 33 PGs are not active+clean: 33 peering"]
        );
        assert_eq!(
            without_reports(
                &mut w,
                s(5000),
                &look("osd_dump_1_up_again", "pg_stat_clean")
            ),
            StepProgress::Confirming {
                clean_looks: 1,
                wait_at_least: Duration::from_secs(1)
            }
        );
        assert_eq!(
            without_reports(
                &mut w,
                s(6000),
                &look("osd_dump_1_up_again", "pg_stat_clean")
            ),
            StepProgress::Done
        );
    }

    #[test]
    fn a_pre_stop_clean_digest_right_after_the_boot_is_not_enough() {
        // The stop was shorter than the stats period: the mgr never showed it.
        let t0 = Instant::now();
        let mut w = watch();
        let up_and_clean = look("osd_dump_1_up_again", "pg_stat_clean");
        assert!(matches!(
            without_reports(&mut w, t0, &up_and_clean),
            StepProgress::Confirming { clean_looks: 1, .. }
        ));
        assert_eq!(
            without_reports(&mut w, t0 + Duration::from_millis(300), &up_and_clean),
            StepProgress::Confirming {
                clean_looks: 2,
                wait_at_least: Duration::from_millis(1700)
            }
        );
        assert_eq!(
            without_reports(&mut w, t0 + LAG, &up_and_clean),
            StepProgress::Done
        );
    }

    #[test]
    fn one_clean_look_is_not_enough_even_late() {
        let t0 = Instant::now();
        let mut w = watch();
        assert!(matches!(
            without_reports(&mut w, t0, &look("osd_dump_1_up_again", "pg_stat_peering")),
            StepProgress::Recovering { .. }
        ));
        assert!(matches!(
            without_reports(
                &mut w,
                t0 + 10 * LAG,
                &look("osd_dump_1_up_again", "pg_stat_clean")
            ),
            StepProgress::Confirming { clean_looks: 1, .. }
        ));
        // A relapse starts the count again.
        assert!(matches!(
            without_reports(
                &mut w,
                t0 + 11 * LAG,
                &look("osd_dump_1_up_again", "pg_stat_stale_after_stop")
            ),
            StepProgress::Recovering { .. }
        ));
        assert!(matches!(
            without_reports(
                &mut w,
                t0 + 12 * LAG,
                &look("osd_dump_1_up_again", "pg_stat_clean")
            ),
            StepProgress::Confirming { clean_looks: 1, .. }
        ));
        assert_eq!(
            without_reports(
                &mut w,
                t0 + 13 * LAG,
                &look("osd_dump_1_up_again", "pg_stat_clean")
            ),
            StepProgress::Done
        );
    }

    #[test]
    fn the_old_daemons_state_never_counts() {
        // Up with the up_from of before the stop (the stop is not in the osdmap yet).
        let t0 = Instant::now();
        let mut w = watch();
        for i in 0..5 {
            assert_eq!(
                without_reports(
                    &mut w,
                    t0 + i * LAG,
                    &look("osd_dump_all_up", "pg_stat_clean")
                ),
                StepProgress::Booting {
                    pending: vec![OsdId(1)]
                }
            );
        }
    }

    #[test]
    fn going_down_again_starts_over() {
        let t0 = Instant::now();
        let mut w = watch();
        without_reports(&mut w, t0, &look("osd_dump_1_up_again", "pg_stat_clean"));
        without_reports(
            &mut w,
            t0 + LAG / 2,
            &look("osd_dump_1_up_again", "pg_stat_clean"),
        );
        assert!(matches!(
            without_reports(&mut w, t0 + LAG, &look("osd_dump_1_down", "pg_stat_clean")),
            StepProgress::Booting { .. }
        ));
        // Back: the lag counts from this look on.
        let back = t0 + 2 * LAG;
        without_reports(&mut w, back, &look("osd_dump_1_up_again", "pg_stat_clean"));
        assert!(matches!(
            without_reports(
                &mut w,
                back + LAG / 2,
                &look("osd_dump_1_up_again", "pg_stat_clean")
            ),
            StepProgress::Confirming { .. }
        ));
        assert_eq!(
            without_reports(
                &mut w,
                back + LAG,
                &look("osd_dump_1_up_again", "pg_stat_clean")
            ),
            StepProgress::Done
        );
    }

    #[test]
    fn no_mgr_or_pg_states_unknown_is_not_clean() {
        let t0 = Instant::now();
        let mut w = watch();
        let mut no_mgr = look("osd_dump_1_up_again", "pg_stat_clean");
        no_mgr.status.mgr_available = false;
        no_mgr.pgs = None;
        let mut not_ready = look("osd_dump_1_up_again", "pg_stat_clean");
        not_ready.pgs = Some(PgStates {
            ready: false,
            ..pgs("pg_stat_clean")
        });
        for (i, facts) in [&no_mgr, &not_ready, &no_mgr, &not_ready]
            .into_iter()
            .enumerate()
        {
            let at = t0 + LAG * u32::try_from(i).unwrap();
            assert!(
                matches!(
                    without_reports(&mut w, at, facts),
                    StepProgress::Recovering { .. }
                ),
                "{i}"
            );
        }
    }

    #[test]
    fn an_osd_missing_from_the_osdmap_has_not_booted() {
        let mut w = StepWatch::new(BTreeMap::from([(OsdId(1), 8), (OsdId(7), 3)]), LAG);
        assert_eq!(
            without_reports(
                &mut w,
                Instant::now(),
                &look("osd_dump_1_up_again", "pg_stat_clean")
            ),
            StepProgress::Booting {
                pending: vec![OsdId(7)]
            }
        );
    }

    /// The PGs on osd.1 as `pg ls-by-osd` reported them, recorded from the real cluster where
    /// osd.1 was restarted and came back with up_from 23.
    fn on_osd_1(name: &str) -> PgsOnOsds {
        let pgs = crate::ceph::parse_pgs_on_osd(&fixture(name)).unwrap();
        PgsOnOsds::from([(OsdId(1), pgs)])
    }

    /// osd.1 up again with up_from 23 (the epoch of the recorded reports).
    fn up_again_at_23() -> CephFacts {
        let mut facts = look("osd_dump_1_up_again", "pg_stat_clean");
        facts.osds.osds.get_mut(&OsdId(1)).unwrap().up_from = 23;
        facts
    }

    #[test]
    fn the_recorded_reports_parse() {
        let before = &on_osd_1("pg_ls_by_osd_before_stop")[&OsdId(1)];
        assert_eq!(before.len(), 33);
        assert!(before
            .iter()
            .all(|p| p.reported_epoch == 19 && p.state == "active+clean"));
        let peering = &on_osd_1("pg_ls_by_osd_peering_after_boot")[&OsdId(1)];
        assert_eq!(peering.iter().filter(|p| p.state == "peering").count(), 11);
    }

    #[test]
    fn clean_reports_since_the_boot_end_the_step_at_the_first_look() {
        let t0 = Instant::now();
        let mut w = watch();
        assert_eq!(
            w.observe(
                t0,
                &up_again_at_23(),
                &on_osd_1("pg_ls_by_osd_clean_after_boot")
            ),
            StepProgress::Done,
            "no lag, no second look: every PG reported clean in epoch 24 >= up_from 23"
        );
    }

    #[test]
    fn reports_older_than_the_boot_or_not_clean_do_not_count() {
        let t0 = Instant::now();
        // Clean, but reported in epoch 19, before the boot in 23: the old daemon's state.
        let mut w = watch();
        assert!(matches!(
            w.observe(t0, &up_again_at_23(), &on_osd_1("pg_ls_by_osd_before_stop")),
            StepProgress::Confirming { clean_looks: 1, .. }
        ));
        // Since the boot, but 11 PGs still peering (pg stat already said clean).
        let mut w = watch();
        assert!(matches!(
            w.observe(
                t0,
                &up_again_at_23(),
                &on_osd_1("pg_ls_by_osd_peering_after_boot")
            ),
            StepProgress::Confirming { clean_looks: 1, .. }
        ));
        // No reports for a stopped OSD (the key lacks the cap): the lag rule decides.
        let mut w = watch();
        let none = PgsOnOsds::from([(OsdId(7), Vec::new())]);
        assert!(matches!(
            w.observe(t0, &up_again_at_23(), &none),
            StepProgress::Confirming { .. }
        ));
        // Clean reports, but the cluster is not clean (pg stat): not done.
        let mut w = watch();
        let mut unclean = up_again_at_23();
        unclean.pgs = Some(pgs("pg_stat_peering"));
        assert!(matches!(
            w.observe(t0, &unclean, &on_osd_1("pg_ls_by_osd_clean_after_boot")),
            StepProgress::Recovering { .. }
        ));
    }

    #[test]
    fn an_osd_down_outside_the_step_is_named_before_the_unclean_pgs() {
        let t0 = Instant::now();
        // osd.0's step: osd.0 back with a newer up_from; osd.1, outside it, down and in.
        let mut w = StepWatch::new(BTreeMap::from([(OsdId(0), 1)]), LAG);
        let facts = look("osd_dump_1_down", "pg_stat_one_osd_down");
        let StepProgress::Recovering { blockers } = w.observe(t0, &facts, &PgsOnOsds::new()) else {
            panic!("not recovering");
        };
        assert_eq!(blockers[0], Blocker::OtherOsdDown { id: OsdId(1) });
        assert!(matches!(blockers[1], Blocker::PgsNotClean { .. }));
    }

    #[test]
    fn the_last_look_is_recent_only_within_the_limit() {
        let t0 = Instant::now();
        let mut w = watch();
        assert_eq!(w.recent(t0, LAG), None, "no look yet");
        let found = w.observe(
            t0,
            &up_again_at_23(),
            &on_osd_1("pg_ls_by_osd_clean_after_boot"),
        );
        assert_eq!(w.recent(t0 + LAG / 2, LAG), Some(found));
        assert_eq!(w.recent(t0 + LAG, LAG), None);
    }
}
