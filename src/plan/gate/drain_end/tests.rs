use super::*;
use crate::ceph::test_data::{fixture, healthy_status, ids};
use crate::ceph::{parse_pg_stat, parse_safe_to_destroy, ClusterStatus, OsdDump, PgBrief};

fn facts(pg_stat: &str) -> CephFacts {
    CephFacts {
        status: healthy_status(),
        osds: OsdDump::default(),
        pgs: Some(parse_pg_stat(&fixture(pg_stat)).unwrap()),
        pgs_trail_placement: None,
    }
}

fn answer(name: &str) -> Result<SafeToDestroy, CephError> {
    parse_safe_to_destroy(&fixture(name)).map_err(|source| CephError::NotUnderstood {
        command: "osd safe-to-destroy".into(),
        source,
    })
}

fn pgs(n: usize) -> Vec<PgBrief> {
    (0..n)
        .map(|i| PgBrief {
            pgid: format!("1.{i:x}"),
            state: "active+clean+remapped".into(),
            reported_epoch: 30,
        })
        .collect()
}

#[test]
fn safe_once_ceph_says_so_and_every_pg_is_clean() {
    let progress = judge_drain(
        &ids(&[3]),
        &facts("pg_stat_clean"),
        Some(&answer("safe_to_destroy_safe")),
        &PgsOnOsds::new(),
    );
    assert_eq!(progress, DrainProgress::Safe);
    // Safe to destroy, but PGs are degraded elsewhere: not yet.
    let progress = judge_drain(
        &ids(&[3]),
        &facts("pg_stat_one_osd_down"),
        Some(&answer("safe_to_destroy_safe")),
        &PgsOnOsds::new(),
    );
    assert!(
        matches!(&progress, DrainProgress::Stuck { why } if why.contains("not active+clean") && !why.contains("cannot place")),
        "{progress:?}"
    );
}

#[test]
fn right_after_the_out_the_data_is_on_its_way() {
    // PG states trail the `out`: every PG still active+clean, the OSD still needed.
    let progress = judge_drain(
        &ids(&[3]),
        &facts("pg_stat_clean"),
        Some(&answer("safe_to_destroy_out_still_active")),
        &PgsOnOsds::from([(OsdId(3), pgs(24))]),
    );
    assert_eq!(
        progress,
        DrainProgress::Moving {
            why: "24 PGs still map to osd.3".into()
        }
    );
    let progress = judge_drain(
        &ids(&[3]),
        &facts("pg_stat_peering"),
        Some(&answer("safe_to_destroy_out_still_active")),
        &PgsOnOsds::new(),
    );
    assert!(
        matches!(&progress, DrainProgress::Moving { why } if why.starts_with("PGs still map to osd.3; ")),
        "{progress:?}"
    );
}

#[test]
fn data_ceph_cannot_place_is_stuck_with_cephs_numbers() {
    let progress = judge_drain(
        &ids(&[2]),
        &facts("pg_stat_remapped_cannot_place"),
        Some(&answer("safe_to_destroy_cannot_place")),
        &PgsOnOsds::from([(OsdId(2), pgs(33))]),
    );
    let DrainProgress::Stuck { why } = &progress else {
        panic!("{progress:?}")
    };
    assert_eq!(
        why,
        "33 PGs still map to osd.2; 33 of 33 PGs are not active+clean: 33 \
             active+clean+remapped; no PG is peering, recovering or backfilling: Ceph cannot \
             place the data of osd.2 elsewhere (fewer failure domains in than a pool's size?)"
    );
    // Two leaving OSDs, one of them safe: only the other is named.
    let progress = judge_drain(
        &ids(&[2, 3]),
        &facts("pg_stat_remapped_cannot_place"),
        Some(&answer("safe_to_destroy_one_of_two")),
        &PgsOnOsds::new(),
    );
    assert!(
        progress.describe().starts_with("PGs still map to osd.2; ")
            && !progress.describe().contains("osd.3"),
        "{progress:?}"
    );
}

#[test]
fn no_mgr_or_no_answer_is_no_answer() {
    let mut no_mgr = facts("pg_stat_clean");
    no_mgr.status = ClusterStatus {
        mgr_available: false,
        ..healthy_status()
    };
    no_mgr.pgs = None;
    let progress = judge_drain(&ids(&[3]), &no_mgr, None, &PgsOnOsds::new());
    assert!(
        matches!(&progress, DrainProgress::NoAnswer { why } if why.starts_with("no mgr is available")),
        "{progress:?}"
    );
    let failed = Err(CephError::Failed {
        command: "osd safe-to-destroy 3".into(),
        exit_code: Some(11),
        stderr: "Error EAGAIN: 33 pgs have unknown state; cannot draw any conclusions".into(),
    });
    let progress = judge_drain(
        &ids(&[3]),
        &facts("pg_stat_clean"),
        Some(&failed),
        &PgsOnOsds::new(),
    );
    assert!(
        matches!(&progress, DrainProgress::NoAnswer { why } if why.contains("EAGAIN")),
        "{progress:?}"
    );
}

#[test]
fn safe_to_destroy_is_asked_only_with_a_mgr_and_ids_to_ask_about() {
    let with_mgr = facts("pg_stat_clean");
    assert!(asks_safe_to_destroy(&with_mgr, &[OsdId(3)]));
    assert!(
        !asks_safe_to_destroy(&with_mgr, &[]),
        "nothing to ask about"
    );
    let no_mgr = CephFacts {
        status: ClusterStatus {
            mgr_available: false,
            ..healthy_status()
        },
        ..with_mgr
    };
    assert!(!asks_safe_to_destroy(&no_mgr, &[OsdId(3)]), "it would hang");
    assert_eq!(
        DrainProgress::unanswered(&"timed out").describe(),
        "Ceph gave no usable answer: timed out"
    );
}

#[test]
fn a_safe_drain_is_confirmed_by_a_look_at_least_the_gap_later() {
    let t0 = Instant::now();
    let gap = Duration::from_secs(1);
    let (first, since) = confirmed(DrainProgress::Safe, None, t0, gap);
    assert!(matches!(&first, DrainProgress::Moving { why } if why.contains("confirmed")));
    assert_eq!(since, Some(t0));
    // A look 50 ms later (another event's reconcile) confirms nothing yet.
    let (soon, since) = confirmed(DrainProgress::Safe, since, t0 + gap / 20, gap);
    assert!(matches!(soon, DrainProgress::Moving { .. }));
    assert_eq!(since, Some(t0));
    let (later, since) = confirmed(DrainProgress::Safe, since, t0 + gap, gap);
    assert_eq!(later, DrainProgress::Safe);
    assert_eq!(since, Some(t0));
    // A look that is not safe starts the count again.
    let moving = DrainProgress::Moving {
        why: "3 PGs".into(),
    };
    let (again, since) = confirmed(moving.clone(), since, t0 + gap * 2, gap);
    assert_eq!((again, since), (moving, None));
}
