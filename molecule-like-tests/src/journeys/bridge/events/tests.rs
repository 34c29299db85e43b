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
