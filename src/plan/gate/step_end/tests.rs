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
        pgs_trail_placement: None,
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

#[test]
fn a_look_that_failed_keeps_the_step_open_and_says_why() {
    let progress = StepProgress::unanswered(&"ceph timed out after 5s");
    assert_eq!(
        progress,
        StepProgress::Recovering {
            blockers: vec![Blocker::NoAnswer {
                error: "ceph timed out after 5s".into()
            }]
        }
    );
}

#[test]
fn clean_reports_do_not_end_a_step_while_pg_states_may_trail_a_crush_move() {
    let t0 = Instant::now();
    let mut w = watch();
    let mut moved = up_again_at_23();
    moved.pgs_trail_placement = Some(Duration::from_secs(3));
    let reports = on_osd_1("pg_ls_by_osd_clean_after_boot");
    let StepProgress::Recovering { blockers } = w.observe(t0, &moved, &reports) else {
        panic!("ended on PG states from before the move")
    };
    assert!(matches!(
        blockers[..],
        [Blocker::PgStatesTrailPlacement { .. }]
    ));
    assert_eq!(
        w.observe(t0 + Duration::from_secs(3), &up_again_at_23(), &reports),
        StepProgress::Done
    );
}
