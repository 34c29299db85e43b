use super::*;
use crate::ceph::fake::{Call, ScriptedCeph};
use crate::ceph::CephError;
use crate::crd::CephOsdStatus;
use crate::testing::CephOsdBuilder;
use k8s_openapi::jiff::Timestamp;

fn cr(out_of_date: i64) -> CephOsd {
    let mut cr = CephOsdBuilder::new("osds")
        .namespace("ceph")
        .build()
        .expect("a CephOSD");
    cr.status = Some(CephOsdStatus {
        out_of_date,
        ..CephOsdStatus::default()
    });
    cr
}

fn crash() -> CrashReport {
    CrashReport {
        id: "2026-11-29T18:40:01.123456Z_5d2c".into(),
        entity: "osd.3".into(),
        at: Timestamp::from_second(1_800_000_000).expect("time"),
    }
}

#[tokio::test]
async fn read_while_a_rollout_is_under_way_and_at_most_every_ten_seconds() {
    let ceph = ScriptedCeph::default().on_new_crashes(Ok(vec![crash()]));
    let memory = Memory::default();
    // Settled: not read.
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(0), CrashRead::Recent, true).await,
        None
    );
    assert!(ceph.calls().is_empty());
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(2), CrashRead::Recent, true).await,
        Some(vec![crash()])
    );
    // At once again: the read stands (asked again, the fake would answer none).
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(2), CrashRead::Recent, true).await,
        Some(vec![crash()])
    );
    assert_eq!(ceph.calls(), [Call::NewCrashes]);
    // For an answer that may start a step: read now (archived meanwhile: none).
    let ceph = ScriptedCeph::default().on_new_crashes(Ok(Vec::new()));
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(2), CrashRead::Now, true).await,
        Some(Vec::new())
    );
    assert_eq!(ceph.calls(), [Call::NewCrashes]);
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(2), CrashRead::Recent, true).await,
        Some(Vec::new()),
        "the fresh read stands for the next plans"
    );
}

#[tokio::test]
async fn reports_not_readable_are_none_known() {
    let denied = CephError::Failed {
        command: "crash ls-new".into(),
        exit_code: Some(13),
        stderr: "Error EACCES: access denied".into(),
    };
    let ceph = ScriptedCeph::default().on_new_crashes(Err(denied));
    let memory = Memory::default();
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(1), CrashRead::Recent, true).await,
        Some(Vec::new())
    );
    assert_eq!(ceph.calls(), [Call::NewCrashes]);
}

#[tokio::test]
async fn without_a_mgr_nothing_is_asked_and_the_last_read_stands() {
    let memory = Memory::default();
    // Nothing scripted: a call would answer none and be recorded by no one; none read yet.
    let ceph = ScriptedCeph::default();
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(1), CrashRead::Now, false).await,
        None
    );
    let ceph = ScriptedCeph::default().on_new_crashes(Ok(vec![crash()]));
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(1), CrashRead::Now, true).await,
        Some(vec![crash()])
    );
    let idle = ScriptedCeph::default().on_new_crashes(Ok(Vec::new()));
    assert_eq!(
        look_at_crashes(&idle, &memory, &cr(1), CrashRead::Now, false).await,
        Some(vec![crash()]),
        "the mgr away: the last read stands"
    );
    assert!(idle.calls().is_empty(), "not asked without a mgr");
}

#[tokio::test(start_paused = true)]
async fn a_read_that_hangs_is_given_up_and_the_last_read_stands() {
    let memory = Memory::default();
    let ceph = ScriptedCeph::default()
        .on_new_crashes(Ok(vec![crash()]))
        .on_new_crashes_hang();
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(1), CrashRead::Now, true).await,
        Some(vec![crash()])
    );
    // A mgr gone but not yet known gone: the read hangs, bounded.
    let started = tokio::time::Instant::now();
    assert_eq!(
        look_at_crashes(&ceph, &memory, &cr(1), CrashRead::Now, true).await,
        Some(vec![crash()])
    );
    assert_eq!(started.elapsed(), CRASH_LOOK_TIMEOUT);
}
