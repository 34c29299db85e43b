use super::*;
use proptest::prelude::*;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("time")
}

fn place(kubernetes: &str, namespace: &str) -> LockPlace {
    LockPlace {
        kubernetes: kubernetes.into(),
        namespace: namespace.into(),
    }
}

fn record(place: &LockPlace, renewed: i64) -> String {
    PlaceRecord::new(place, "cg/osds", at(renewed)).to_json()
}

const T: i64 = 1_800_000_000;

#[test]
fn no_record_is_claimed() {
    let mine = place("k1", "cg");
    assert_eq!(
        decide(None, &mine, at(T)),
        PlaceDecision::Write { claim: true }
    );
    assert_eq!(
        decide(Some("  \n"), &mine, at(T)),
        PlaceDecision::Write { claim: true }
    );
}

#[test]
fn our_recent_record_is_kept_and_renewed_once_a_minute_old() {
    let mine = place("k1", "cg");
    let ours = record(&mine, T);
    assert_eq!(decide(Some(&ours), &mine, at(T + 59)), PlaceDecision::Ours);
    assert_eq!(
        decide(Some(&ours), &mine, at(T + 60)),
        PlaceDecision::Write { claim: false }
    );
    // Stale even if ours: claimed again (read back).
    assert_eq!(
        decide(Some(&ours), &mine, at(T + 600)),
        PlaceDecision::Write { claim: true }
    );
}

#[test]
fn another_namespace_fresh_is_refused_naming_both_and_the_flag() {
    let (mine, theirs) = (place("k1", "cg2"), place("k1", "cg"));
    let PlaceDecision::Refused(Refused::Differs(refusal)) =
        decide(Some(&record(&theirs, T)), &mine, at(T + 599))
    else {
        panic!("refused");
    };
    assert_eq!(refusal.theirs.place, theirs);
    let said = refusal.to_string();
    for part in [
        "Lease namespace cg of the Kubernetes cluster whose kube-system uid is k1",
        "this operator's is Lease namespace cg2 of the Kubernetes cluster whose kube-system uid is k1",
        "written by CephOSD cg/osds",
        "--ceph-lock-namespace=cg on every operator",
        "ceph.lockNamespace",
        "not renewed for 10 min is taken over",
    ] {
        assert!(said.contains(part), "{part:?} in {said}");
    }
}

#[test]
fn another_kubernetes_cluster_is_refused_saying_a_lease_cannot_be_shared() {
    let (mine, theirs) = (place("k2", "cg"), place("k1", "cg"));
    let PlaceDecision::Refused(Refused::Differs(refusal)) =
        decide(Some(&record(&theirs, T)), &mine, at(T))
    else {
        panic!("refused");
    };
    let said = refusal.to_string();
    assert!(
        said.contains("two Kubernetes clusters cannot share a Lease"),
        "{said}"
    );
    assert!(
        said.contains("ceph config-key rm ceph-osd-operator/step-lock-place"),
        "{said}"
    );
    assert!(!said.contains("--ceph-lock-namespace"), "{said}");
}

#[test]
fn another_places_stale_record_is_taken_over() {
    let (mine, theirs) = (place("k1", "cg2"), place("k1", "cg"));
    assert_eq!(
        decide(Some(&record(&theirs, T)), &mine, at(T + 600)),
        PlaceDecision::Write { claim: true }
    );
}

#[test]
fn a_record_from_the_future_is_fresh() {
    let (mine, theirs) = (place("k1", "cg2"), place("k1", "cg"));
    assert!(matches!(
        decide(Some(&record(&theirs, T + 3600)), &mine, at(T)),
        PlaceDecision::Refused(Refused::Differs(_))
    ));
}

#[test]
fn a_record_not_understood_fails_closed_quoting_it() {
    let mine = place("k1", "cg");
    let PlaceDecision::Refused(Refused::NotUnderstood(why)) = decide(Some("hello"), &mine, at(T))
    else {
        panic!("not understood");
    };
    assert!(why.contains("\"hello\""), "{why}");
    let bad_time =
        r#"{"place":{"kubernetes":"k1","namespace":"cg"},"writer":"w","renewedAt":"soon"}"#;
    let PlaceDecision::Refused(Refused::NotUnderstood(why)) = decide(Some(bad_time), &mine, at(T))
    else {
        panic!("not understood");
    };
    assert!(why.contains("\"soon\""), "{why}");
}

#[test]
fn the_record_is_camel_case_json() {
    let json = record(&place("k1", "cg"), T);
    assert_eq!(
        json,
        r#"{"place":{"kubernetes":"k1","namespace":"cg"},"writer":"cg/osds","renewedAt":"2027-01-15T08:00:00Z"}"#
    );
}

#[test]
fn read_back_ours_steps_and_anothers_refuses() {
    let (mine, theirs) = (place("k1", "cg2"), place("k1", "cg"));
    assert_eq!(check_back(Some(&record(&mine, T)), &mine), Ok(()));
    assert!(matches!(
        check_back(Some(&record(&theirs, T)), &mine),
        Err(Refused::Differs(r)) if r.theirs.place == theirs
    ));
    assert!(matches!(
        check_back(None, &mine),
        Err(Refused::NotUnderstood(_))
    ));
    assert!(matches!(
        check_back(Some("{}"), &mine),
        Err(Refused::NotUnderstood(_))
    ));
}

proptest! {
    /// Whatever the record and the time, a step is allowed (`Ours` or a write) only when the
    /// record is absent, stale, or names exactly this place; a fresh record of another place
    /// always refuses.
    #[test]
    fn only_our_place_or_no_fresh_record_lets_a_step_start(
        k in prop::sample::select(vec!["k1", "k2"]),
        ns in prop::sample::select(vec!["cg", "cg2"]),
        age in -1000i64..2000,
    ) {
        let mine = place("k1", "cg");
        let theirs = place(k, ns);
        let decision = decide(Some(&record(&theirs, T)), &mine, at(T + age));
        let fresh = age < 600;
        match decision {
            PlaceDecision::Refused(Refused::Differs(r)) => {
                prop_assert!(fresh && theirs != mine && r.theirs.place == theirs);
            }
            PlaceDecision::Ours => prop_assert!(theirs == mine && age < 60),
            PlaceDecision::Write { claim } => {
                prop_assert!(!fresh || theirs == mine);
                prop_assert_eq!(claim, !fresh);
            }
            PlaceDecision::Refused(Refused::NotUnderstood(why)) => prop_assert!(false, "{}", why),
        }
    }
}
