use super::*;

fn event(ms: u64, osd: u32, pod: &str, kind: BridgeEventKind) -> BridgeEvent {
    BridgeEvent {
        at: Duration::from_millis(ms),
        osd: Some(osd),
        pod: pod.to_owned(),
        uid: format!("uid-{pod}"),
        kind,
    }
}

fn started() -> BridgeEventKind {
    BridgeEventKind::Started {
        node: "n".into(),
        up_from_before: 0,
        release: crate::ceph::Release::Pacific,
    }
}

#[test]
fn a_pod_gone_before_its_daemon_stopped_fails_the_check() {
    use BridgeEventKind::{Booted, Gone, Stopped};
    let ok = vec![
        event(0, 0, "a", started()),
        event(1, 0, "a", Booted { up_from: 9 }),
        event(2, 0, "a", Stopped),
        event(3, 0, "a", Gone),
        event(4, 0, "b", started()),
    ];
    check(&ok).expect("stopped first");
    let d = &daemons(&ok)[&0];
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].booted, Some((Duration::from_millis(1), 9)));
    let bad = vec![
        event(0, 0, "a", started()),
        event(3, 0, "a", Gone),
        event(4, 0, "a", Stopped),
    ];
    let err = check(&bad).expect_err("gone first");
    assert!(err.contains("before its daemon stopped"), "{err}");
    let violation = vec![event(0, 0, "b", BridgeEventKind::Violation("two".into()))];
    assert!(check(&violation).is_err());
}

#[test]
fn a_daemon_killed_by_its_failed_disk_and_a_failed_prepare_pass_the_check() {
    use BridgeEventKind::{Booted, DiskFailed, Gone, PrepareFailed, Prepared, Removed};
    let events = vec![
        event(0, 0, "a", started()),
        event(1, 0, "a", Booted { up_from: 9 }),
        event(
            2,
            0,
            "a",
            DiskFailed {
                disk: "h1:/dev/sdb".into(),
            },
        ),
        event(3, 0, "a", Removed),
        event(4, 0, "a", Gone),
        event(
            5,
            0,
            "b",
            PrepareFailed {
                reason: "no OSD_ID".into(),
            },
        ),
        event(6, 0, "b", Removed),
        event(7, 0, "b", Gone),
        event(8, 0, "c", Prepared),
        event(9, 0, "c", started()),
    ];
    check(&events).expect("killed as its disk failed, then a prepare that failed");
    let d = &daemons(&events)[&0];
    assert_eq!(d.len(), 2, "b never had a daemon");
    assert_eq!(d[0].disk_failed, Some(Duration::from_millis(2)));
    assert_eq!(d[0].stopped, Some(Duration::from_millis(2)));
    assert_eq!(d[1].pod, "c");
}
