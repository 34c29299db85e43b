use super::*;
use crate::ceph::answers::PgStateCount;
use crate::ceph::fake::ScriptedCeph;
use crate::ceph::test_data::healthy_status;
use std::time::Duration;

fn clean() -> PgStates {
    PgStates {
        ready: true,
        num_pgs: 1,
        by_state: vec![PgStateCount {
            state: "active+clean".into(),
            count: 1,
        }],
    }
}

#[tokio::test]
async fn asks_the_three_at_once() {
    let fake = ScriptedCeph::default()
        .on_status(Ok(healthy_status()))
        .on_osd_dump(Ok(OsdDump::default()))
        .on_pg_states(Ok(clean()));
    let facts = gather_facts(&fake).await.unwrap();
    assert_eq!(facts.pgs, Some(clean()));
    assert_eq!(fake.calls().len(), 3);
}

#[tokio::test]
async fn a_steps_look_adds_the_pgs_on_its_osds_those_refused_left_out() {
    let pg = PgBrief {
        pgid: "1.0".into(),
        state: "active+clean".into(),
        reported_epoch: 24,
    };
    let fake = ScriptedCeph::default()
        .on_status(Ok(healthy_status()))
        .on_osd_dump(Ok(OsdDump::default()))
        .on_pg_states(Ok(clean()))
        .on_pgs_on_osd(Ok(vec![pg.clone()]))
        .on_pgs_on_osd(Err(CephError::Failed {
            command: "pg ls-by-osd osd.4".into(),
            exit_code: Some(11),
            stderr: "Error EAGAIN: osd 4 is not up".into(),
        }));
    let (facts, pgs_on) = gather_step_facts(&fake, &[OsdId(3), OsdId(4)], &|_| true)
        .await
        .unwrap();
    assert_eq!(facts.pgs, Some(clean()));
    assert_eq!(pgs_on.len(), 1, "{pgs_on:?}");
    assert_eq!(pgs_on.values().next(), Some(&vec![pg]));
    assert_eq!(fake.calls().len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_steps_look_does_not_wait_for_the_pgs_on_its_osds_without_a_mgr() {
    let fake = ScriptedCeph::default()
        .on_status(Ok(crate::ceph::answers::ClusterStatus {
            mgr_available: false,
            ..healthy_status()
        }))
        .on_osd_dump(Ok(OsdDump::default()))
        .on_pg_states_hang()
        .on_pgs_on_osd_hang();
    let looked = tokio::time::timeout(
        Duration::from_secs(60),
        gather_step_facts(&fake, &[OsdId(3)], &|_| true),
    )
    .await
    .expect("not waited for");
    let (facts, pgs_on) = looked.unwrap();
    assert!(facts.pgs.is_none() && pgs_on.is_empty());
}

/// A mgr gone but not yet known gone (`status` still says available): a look that has no use
/// for the PG states (a stopped OSD's new daemon not up) does not wait for their calls.
#[tokio::test(start_paused = true)]
async fn a_steps_look_that_wants_no_pgs_does_not_wait_for_them() {
    let fake = ScriptedCeph::default()
        .on_status(Ok(healthy_status()))
        .on_osd_dump(Ok(OsdDump::default()))
        .on_pg_states_hang()
        .on_pgs_on_osd_hang();
    let looked = tokio::time::timeout(
        Duration::from_secs(60),
        gather_step_facts(&fake, &[OsdId(3)], &|_| false),
    )
    .await
    .expect("not waited for");
    let (facts, pgs_on) = looked.unwrap();
    assert!(facts.status.mgr_available);
    assert!(facts.pgs.is_none() && pgs_on.is_empty());
    // Wanted, the same hanging calls are waited for.
    let fake = ScriptedCeph::default()
        .on_status(Ok(healthy_status()))
        .on_osd_dump(Ok(OsdDump::default()))
        .on_pg_states_hang()
        .on_pgs_on_osd_hang();
    let waited = tokio::time::timeout(
        Duration::from_secs(60),
        gather_step_facts(&fake, &[OsdId(3)], &|_| true),
    )
    .await;
    assert!(waited.is_err(), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn does_not_wait_for_pg_stat_without_a_mgr() {
    let fake = ScriptedCeph::default()
        .on_status(Ok(crate::ceph::answers::ClusterStatus {
            mgr_available: false,
            ..healthy_status()
        }))
        .on_osd_dump(Ok(OsdDump::default()))
        .on_pg_states_hang();
    let facts = tokio::time::timeout(Duration::from_secs(1), gather_facts(&fake))
        .await
        .expect("gather waited for the hanging pg stat")
        .unwrap();
    assert_eq!(facts.pgs, None);
}

#[tokio::test]
async fn the_first_error_wins() {
    let fake = ScriptedCeph::default()
        .on_status(Ok(healthy_status()))
        .on_osd_dump(Err(CephError::Failed {
            command: "osd dump".into(),
            exit_code: Some(13),
            stderr: "Error EACCES: access denied".into(),
        }))
        .on_pg_states(Ok(clean()));
    let e = gather_facts(&fake).await.unwrap_err();
    assert!(e.is_access_denied());

    let fake = ScriptedCeph::default()
        .on_status(Ok(healthy_status()))
        .on_osd_dump(Ok(OsdDump::default()))
        .on_pg_states(Err(CephError::Timeout {
            command: "pg stat".into(),
            timeout: Duration::from_secs(15),
        }));
    let e = gather_facts(&fake).await.unwrap_err();
    assert_eq!(e.category(), "CephTimeout");
}
