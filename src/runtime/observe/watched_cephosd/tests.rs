use super::*;
use serde_json::json;

fn cephosd(partition: &serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "ceph.elemental.net/v1alpha1",
        "kind": "CephOSD",
        "metadata": {"name": "big", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": {
            "storage": [{"hosts": ["h"], "osds": [{"data": "/dev/sdb"}]}],
            "updateDomain": "Host",
            "podTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
            "partition": partition,
        }
    })
}

#[test]
fn a_value_the_type_does_not_hold_is_unreadable_naming_the_field() {
    let watched: WatchedCephOsd =
        serde_json::from_value(cephosd(&json!(2_147_483_648_i64))).expect("decoded");
    let WatchedCephOsd::Unreadable(u) = watched else {
        panic!("read a partition past i32");
    };
    assert_eq!(u.metadata.name.as_deref(), Some("big"));
    assert_eq!(u.field, "spec.partition");
    assert!(u.error.contains("2147483648"), "{}", u.error);
    assert_eq!(u.to_string(), format!("spec.partition: {}", u.error));
}

#[test]
fn a_readable_one_is_the_cephosd_itself() {
    let watched: WatchedCephOsd = serde_json::from_value(cephosd(&json!(2))).expect("decoded");
    let WatchedCephOsd::Readable(cr) = watched else {
        panic!("a good CephOSD unreadable");
    };
    let direct: CephOsd = serde_json::from_value(cephosd(&json!(2))).expect("read");
    assert_eq!(cr.spec, direct.spec);
    assert_eq!(cr.metadata, direct.metadata);
}

#[test]
fn a_list_with_one_unreadable_object_reads_the_others() {
    let list = json!([
        cephosd(&json!(1)),
        cephosd(&json!(-1_i64 << 40)),
        cephosd(&json!("10%"))
    ]);
    let watched: Vec<WatchedCephOsd> = serde_json::from_value(list).expect("the list");
    let readable = watched
        .iter()
        .filter(|w| matches!(w, WatchedCephOsd::Readable(_)))
        .count();
    assert_eq!(readable, 2);
}

#[test]
fn events_keep_the_readable_and_report_the_unreadable() {
    let unreadable: WatchedCephOsd =
        serde_json::from_value(cephosd(&json!(2_147_483_648_i64))).expect("decoded");
    let readable: WatchedCephOsd = serde_json::from_value(cephosd(&json!(1))).expect("decoded");
    let (cached, reported) = split_event(watcher::Event::Apply(unreadable.clone()));
    assert!(cached.is_none());
    assert_eq!(reported.expect("reported").field, "spec.partition");
    let (cached, reported) = split_event(watcher::Event::InitApply(readable));
    assert!(matches!(cached, Some(watcher::Event::InitApply(_))) && reported.is_none());
    // Deleted while unreadable: removed from the cache by name.
    let (cached, reported) = split_event(watcher::Event::Delete(unreadable));
    let Some(watcher::Event::Delete(shell)) = cached else {
        panic!("not removed");
    };
    assert_eq!(
        (
            shell.metadata.name.as_deref(),
            shell.metadata.namespace.as_deref()
        ),
        (Some("big"), Some("ns"))
    );
    assert!(reported.is_none());
}
