use super::*;

const NO_PODS: &[Pod] = &[];
const NO_SETS: &[ReplicaSet] = &[];
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

fn pod(name: &str, uid: &str, state: &str, deleting: bool) -> Pod {
    let mut pod: Pod = serde_json::from_value(json!({"metadata": {
        "name": name, "uid": uid,
        "annotations": {"ceph.elemental.net/pod-state": state}
    }}))
    .expect("pod");
    if deleting {
        pod.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    }
    pod
}

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("time")
}

#[test]
fn each_kind_of_write_is_seen_when_the_cache_shows_it() {
    let timeout = SignedDuration::from_secs(10);
    let cases = [
        (
            Expected::Created { name: "a".into() },
            vec![],
            vec![pod("a", "u1", "wait-for-ready", false)],
        ),
        (
            Expected::Deleted { uid: "u1".into() },
            vec![pod("a", "u1", "up-to-date", false)],
            vec![pod("a", "u1", "up-to-date", true)],
        ),
        (
            Expected::State {
                name: "a".into(),
                state: "out-of-date".into(),
            },
            vec![pod("a", "u1", "up-to-date", false)],
            vec![pod("a", "u1", "out-of-date", false)],
        ),
    ];
    for (expected, before, after) in cases {
        let mut expectations = Expectations::default();
        expectations.expect(expected.clone(), at(0));
        assert_eq!(
            expectations.check(&before, NO_SETS, at(1), timeout),
            Readiness::Wait,
            "{expected:?}"
        );
        assert_eq!(
            expectations.check(&after, NO_SETS, at(2), timeout),
            Readiness::Cache,
            "{expected:?}"
        );
        assert!(expectations.is_empty());
    }
    // A deleted pod that is gone altogether, a patched pod that is gone: seen.
    let mut expectations = Expectations::default();
    expectations.expect(Expected::Deleted { uid: "u1".into() }, at(0));
    expectations.expect(
        Expected::State {
            name: "b".into(),
            state: "up-to-date".into(),
        },
        at(0),
    );
    assert_eq!(
        expectations.check(NO_PODS, NO_SETS, at(1), timeout),
        Readiness::Cache
    );
}

#[test]
fn a_write_never_seen_falls_back_to_a_list_after_the_timeout() {
    let timeout = SignedDuration::from_secs(10);
    let mut expectations = Expectations::default();
    expectations.expect(Expected::Created { name: "a".into() }, at(100));
    expectations.expect(Expected::Created { name: "b".into() }, at(105));
    let a = [pod("a", "u1", "wait-for-ready", false)];
    assert_eq!(
        expectations.check(&a, NO_SETS, at(109), timeout),
        Readiness::Wait
    );
    assert_eq!(
        expectations.check(&a, NO_SETS, at(110), timeout),
        Readiness::List
    );
    // The LIST shows b: the cache must show it too before it is trusted again.
    let listed = [a[0].clone(), pod("b", "u2", "wait-for-ready", false)];
    expectations.listed(&listed, NO_SETS, at(110));
    assert_eq!(
        expectations.check(&a, NO_SETS, at(115), timeout),
        Readiness::Wait
    );
    assert_eq!(
        expectations.check(&a, NO_SETS, at(120), timeout),
        Readiness::List
    );
    // This LIST no longer shows b (deleted meanwhile): nothing left to wait for.
    expectations.listed(&a, NO_SETS, at(120));
    assert_eq!(
        expectations.check(&a, NO_SETS, at(121), timeout),
        Readiness::Cache
    );
}
