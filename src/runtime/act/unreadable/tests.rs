use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn unreadable(generation: i64, error: &str) -> Unreadable {
    Unreadable {
        metadata: ObjectMeta {
            uid: Some("u1".into()),
            generation: Some(generation),
            ..ObjectMeta::default()
        },
        field: "spec.partition".into(),
        error: error.into(),
        conditions: Vec::new(),
    }
}

#[test]
fn each_generation_and_reason_is_reported_once() {
    let mut reported = Reported::default();
    assert!(reported.is_new(&unreadable(1, "too large")));
    assert!(!reported.is_new(&unreadable(1, "too large")));
    assert!(reported.is_new(&unreadable(2, "too large")));
    assert!(reported.is_new(&unreadable(2, "negative")));
}

#[test]
fn the_condition_replaces_its_own_type_only_and_keeps_its_time() {
    let at = |s| Timestamp::from_second(s).expect("time");
    let others = vec![json!({"type": "Ready", "status": "True", "reason": "AllOsdsReady"})];
    let first = with_condition(&others, "cannot read", Some(3), at(10));
    assert_eq!(first.len(), 2);
    assert_eq!(first[0], others[0]);
    assert_eq!(first[1]["reason"], "Unreadable");
    assert_eq!(first[1]["lastTransitionTime"], json!(Time(at(10))));
    let again = with_condition(&first, "cannot read", Some(3), at(20));
    assert_eq!(again.len(), 2);
    assert_eq!(again[1]["lastTransitionTime"], json!(Time(at(10))));
    assert!(message(&unreadable(1, "invalid value"))
        .starts_with("the operator cannot read this CephOSD (spec.partition: invalid value)"));
}
