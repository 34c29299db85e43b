//! The checks must be able to fail: synthetic recordings of two racks, no Ceph.
use std::collections::BTreeMap;
use std::time::Duration;

use super::super::samples::{CephEvent, Observed};
use super::*;
use crate::ceph::{OsdInfo, PgBrief, PoolInfo};

/// osd.0, osd.1 on hosts a, b in rack-1; osd.2 on host c in rack-2; pool 1 of size 2.
fn map(down: &[u32]) -> Observed {
    let rack = |r: &str| BTreeMap::from([("rack".to_owned(), r.to_owned())]);
    Observed::OsdMap(OsdMap {
        epoch: 1,
        osds: (0..3)
            .map(|id| OsdInfo {
                id,
                up: !down.contains(&id),
                in_: true,
                up_from: 1,
                noout: false,
            })
            .collect(),
        hosts: [("a", 0), ("b", 1), ("c", 2)]
            .into_iter()
            .map(|(h, id)| (h.to_owned(), vec![id]))
            .collect(),
        ancestors: BTreeMap::from([
            ("a".to_owned(), rack("rack-1")),
            ("b".to_owned(), rack("rack-1")),
            ("c".to_owned(), rack("rack-2")),
        ]),
        pools: BTreeMap::from([(
            1,
            PoolInfo {
                size: 2,
                min_size: 1,
            },
        )]),
        ..OsdMap::default()
    })
}

/// One PG `1.0` acting on `acting`, in `state`.
fn pg(state: &str, acting: &[u32]) -> Observed {
    Observed::Pgs(PgStat {
        ready: true,
        num_pgs: 1,
        by_state: BTreeMap::from([(state.to_owned(), 1)]),
        pgs: vec![PgBrief {
            pgid: "1.0".into(),
            state: state.into(),
            acting: acting.to_vec(),
        }],
    })
}

fn recording(list: Vec<(u64, Observed)>) -> CephRecording {
    CephRecording {
        events: (list.into_iter())
            .map(|(ms, observed)| CephEvent {
                at: Duration::from_millis(ms),
                observed,
            })
            .collect(),
    }
}

#[test]
fn a_rack_down_is_one_bucket_two_racks_are_two() {
    let one = recording(vec![(0, map(&[])), (100, map(&[0, 1])), (200, map(&[]))]);
    one.check_buckets_down_at_most("rack", 1, Duration::ZERO)
        .expect("one rack");
    assert!(one.check_hosts_down_at_most(1, Duration::ZERO).is_err());
    let two = recording(vec![(0, map(&[1, 2]))]);
    let error = two
        .check_buckets_down_at_most("rack", 1, Duration::ZERO)
        .expect_err("two racks");
    assert!(error.to_string().contains("rack-1"), "{error:#}");
}

#[test]
fn copies_down_count_the_acting_set_shrunk_by_peering() {
    // osd.0 down, the PG re-peered on osd.1 alone: one copy down; then osd.1 down too: two.
    let r = recording(vec![
        (0, map(&[])),
        (10, pg("active+clean", &[0, 1])),
        (20, map(&[0])),
        (30, pg("active+undersized+degraded", &[1])),
    ]);
    r.check_copies_down_at_most(1, Duration::ZERO)
        .expect("one copy");
    let mut both = r.clone();
    both.events.extend(
        recording(vec![
            (40, map(&[0, 1])),
            (50, pg("stale+active+undersized+degraded", &[1])),
        ])
        .events,
    );
    let error = both
        .check_copies_down_at_most(1, Duration::ZERO)
        .expect_err("two copies");
    assert!(
        error.to_string().contains("2 copies of PG 1.0"),
        "{error:#}"
    );
}

#[test]
fn a_step_starts_only_after_every_pg_is_clean_again() {
    let r = recording(vec![
        (0, map(&[0])),
        (10, pg("active+undersized+degraded", &[1])),
        (20, map(&[])),
        (30, pg("active+clean+scrubbing", &[0, 1])),
    ]);
    let error = r
        .check_clean_before(Duration::from_millis(25), Duration::ZERO)
        .expect_err("degraded PGs");
    assert!(error.to_string().contains("undersized"), "{error:#}");
    r.check_clean_before(Duration::from_millis(35), Duration::ZERO)
        .expect("clean");
    // Samples older than the step before's end do not count.
    assert!(r
        .check_clean_before(Duration::from_millis(35), Duration::from_millis(32))
        .is_err());
}

#[test]
fn a_step_counts_from_when_ceph_sees_its_stop() {
    // The last samples before the stop (at 35) unclean; clean, every OSD up, after the stop
    // was asked and before Ceph saw it (osd.1 down at 50): the step started on a clean cluster.
    let r = recording(vec![
        (0, map(&[0])),
        (10, pg("active+undersized+degraded", &[1])),
        (20, map(&[])),
        (30, pg("active+undersized+degraded", &[1])),
        (40, pg("active+clean", &[0, 1])),
        (45, map(&[])),
        (50, map(&[1])),
        (55, pg("active+undersized+degraded", &[0])),
    ]);
    r.check_clean_before(Duration::from_millis(35), Duration::from_millis(20))
        .expect("clean before Ceph saw the stop");
    // Its first trace a stale PG (the stopped OSD no longer reports), before any clean sample.
    let stale_first = recording(vec![
        (0, map(&[])),
        (10, pg("active+undersized+degraded", &[1])),
        (20, pg("stale+active+clean", &[0, 1])),
        (25, map(&[])),
        (30, map(&[1])),
    ]);
    let error = stale_first
        .check_clean_before(Duration::from_millis(15), Duration::ZERO)
        .expect_err("degraded until the stop's first trace");
    assert!(error.to_string().contains("undersized"), "{error:#}");
    // Ceph saw the stop before any clean sample: not clean.
    let seen_first = recording(vec![
        (0, map(&[])),
        (10, pg("active+undersized+degraded", &[1])),
        (20, map(&[1])),
        (30, pg("active+clean", &[0, 1])),
    ]);
    let error = seen_first
        .check_clean_before(Duration::from_millis(15), Duration::ZERO)
        .expect_err("degraded until Ceph saw the stop");
    assert!(error.to_string().contains("undersized"), "{error:#}");
}

#[test]
fn a_stop_is_seen_at_its_first_trace_in_ceph() {
    let r = recording(vec![
        (0, map(&[])),
        (10, pg("active+clean", &[0, 1])),
        (20, map(&[])),
        (30, pg("active+clean", &[0, 1])),
        (40, map(&[1])),
        (50, pg("stale+active+clean", &[0, 1])),
    ]);
    // Asked at 15: the clean samples at 20 and 30 came before Ceph saw it (osd.1 down at 40).
    assert_eq!(
        r.stop_seen_at(Duration::from_millis(15)),
        Duration::from_millis(40)
    );
    // Asked at 45: the stale PG at 50 is its first trace.
    let after_map = recording(vec![(0, map(&[])), (50, pg("stale+active+clean", &[0, 1]))]);
    assert_eq!(
        after_map.stop_seen_at(Duration::from_millis(45)),
        Duration::from_millis(50)
    );
    // No trace at all: the time it was asked.
    let none = recording(vec![(0, map(&[])), (10, pg("active+clean", &[0, 1]))]);
    assert_eq!(
        none.stop_seen_at(Duration::from_millis(5)),
        Duration::from_millis(5)
    );
}
