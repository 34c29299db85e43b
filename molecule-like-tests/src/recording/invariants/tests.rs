//! The replay checks must be able to fail: synthetic recordings, no control plane.
use std::time::Duration;

use super::*;
use ceph_osd_operator::crd::UpdateDomain;
use serde_json::json;

#[test]
fn a_pod_is_keyed_by_the_disk_it_held_when_first_seen() {
    use EventKind::{Added, Modified};
    // p1's host annotation is edited to h5; p2 then appears on p1's disk: two pods.
    let edited = events(&[
        (Added, "p1", "h1", "/dev/sdb", true, false),
        (Modified, "p1", "h5", "/dev/sdb", true, false),
        (Added, "p2", "h1", "/dev/sdb", false, false),
    ]);
    let error = check_one_pod_per_key(&edited).expect_err("two pods on h1:/dev/sdb");
    assert!(error.contains("h1:/dev/sdb"), "{error}");
    // And another spelling of one disk is that disk.
    let respelled = events(&[
        (Added, "p1", "h1", "/dev/sdb", true, false),
        (Added, "p2", "h1", "/dev//sdb", false, false),
    ]);
    assert!(check_one_pod_per_key(&respelled).is_err());
}

fn pod(name: &str, host: &str, data: &str, ready: bool, deleting: bool) -> Pod {
    let mut v = json!({
        "metadata": {"name": name, "annotations": {labels::HOST: host, labels::DATA: data}},
        "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    });
    if deleting {
        v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    serde_json::from_value(v).expect("pod")
}

/// Events from (kind, name, host, data, ready, deleting).
fn events(list: &[(EventKind, &str, &str, &str, bool, bool)]) -> Vec<PodEvent> {
    list.iter()
        .enumerate()
        .map(
            |(seq, (kind, name, host, data, ready, deleting))| PodEvent {
                seq,
                at: Duration::ZERO,
                kind: *kind,
                pod: pod(name, host, data, *ready, *deleting),
            },
        )
        .collect()
}

use EventKind::{Added as A, Deleted as D, Modified as M};

/// Replace `old` (key h:d) by `new`: terminate, gone, create, Ready.
fn replace<'a>(
    old: &'a str,
    new: &'a str,
    h: &'a str,
    d: &'a str,
) -> Vec<(EventKind, &'a str, &'a str, &'a str, bool, bool)> {
    vec![
        (M, old, h, d, true, true),
        (D, old, h, d, true, true),
        (A, new, h, d, false, false),
        (M, new, h, d, true, false),
    ]
}

fn initial() -> Vec<(
    EventKind,
    &'static str,
    &'static str,
    &'static str,
    bool,
    bool,
)> {
    vec![
        (A, "p1", "h1", "/dev/B", true, false),
        (A, "p2", "h1", "/dev/c", true, false),
        (A, "p3", "H2", "/dev/a", true, false),
    ]
}

fn old() -> BTreeMap<String, OsdKey> {
    [
        ("p1", "h1", "/dev/B"),
        ("p2", "h1", "/dev/c"),
        ("p3", "H2", "/dev/a"),
    ]
    .iter()
    .map(|(n, h, d)| ((*n).to_owned(), OsdKey::new(*h, *d)))
    .collect()
}

#[test]
fn two_pods_for_one_key_are_caught_even_while_terminating() {
    let ok = events(&[
        (A, "a", "h", "/dev/sdb", true, false),
        (M, "a", "h", "/dev/sdb", true, true),
        (D, "a", "h", "/dev/sdb", true, true),
        (A, "b", "h", "/dev/sdb", false, false),
    ]);
    assert!(check_one_pod_per_key(&ok).is_ok());
    let bad = events(&[
        (A, "a", "h", "/dev/sdb", true, false),
        (M, "a", "h", "/dev/sdb", true, true),
        (A, "b", "h", "/dev/sdb", false, false),
        (D, "a", "h", "/dev/sdb", true, true),
    ]);
    let err = check_one_pod_per_key(&bad).expect_err("overlap");
    assert!(
        err.contains("event #2") && err.contains("h:/dev/sdb"),
        "{err}"
    );
}

#[test]
fn osd_rollout_in_case_insensitive_key_order_passes() {
    // Order: h1:/dev/B < h1:/dev/c < H2:/dev/a (bytewise H2 would come first).
    let mut list = initial();
    list.extend(replace("p1", "n1", "h1", "/dev/B"));
    list.extend(replace("p2", "n2", "h1", "/dev/c"));
    list.extend(replace("p3", "n3", "H2", "/dev/a"));
    let t = Timeline::from_events(&events(&list));
    t.check_rollout(&old(), UpdateDomain::Osd).expect("valid");
    // The same recording is not a Host rollout (h1's pods were not deleted together).
    assert!(t.check_rollout(&old(), UpdateDomain::Host).is_err());
}

#[test]
fn osd_rollout_in_bytewise_order_fails() {
    let mut list = initial();
    list.extend(replace("p3", "n3", "H2", "/dev/a"));
    list.extend(replace("p1", "n1", "h1", "/dev/B"));
    list.extend(replace("p2", "n2", "h1", "/dev/c"));
    let t = Timeline::from_events(&events(&list));
    let err = t
        .check_rollout(&old(), UpdateDomain::Osd)
        .expect_err("order");
    assert!(err.to_string().contains("deleted in the order"), "{err}");
}

#[test]
fn next_deletion_before_the_replacement_is_ready_fails() {
    let mut list = initial();
    list.extend([
        (M, "p1", "h1", "/dev/B", true, true),
        (D, "p1", "h1", "/dev/B", true, true),
        (A, "n1", "h1", "/dev/B", false, false),
        (M, "p2", "h1", "/dev/c", true, true), // too early: n1 is not Ready yet
        (M, "n1", "h1", "/dev/B", true, false),
    ]);
    list.extend([
        (D, "p2", "h1", "/dev/c", true, true),
        (A, "n2", "h1", "/dev/c", false, false),
        (M, "n2", "h1", "/dev/c", true, false),
    ]);
    list.extend(replace("p3", "n3", "H2", "/dev/a"));
    let t = Timeline::from_events(&events(&list));
    let err = t
        .check_rollout(&old(), UpdateDomain::Osd)
        .expect_err("gate");
    assert!(err.to_string().contains("before the previous"), "{err}");
}

#[test]
fn host_rollout_deletes_all_pods_of_a_host_then_the_next_host() {
    let mut list = initial();
    list.extend([
        (M, "p1", "h1", "/dev/B", true, true),
        (M, "p2", "h1", "/dev/c", true, true),
        (D, "p1", "h1", "/dev/B", true, true),
        (D, "p2", "h1", "/dev/c", true, true),
        (A, "n1", "h1", "/dev/B", false, false),
        (A, "n2", "h1", "/dev/c", false, false),
        (M, "n1", "h1", "/dev/B", true, false),
        (M, "n2", "h1", "/dev/c", true, false),
    ]);
    list.extend(replace("p3", "n3", "H2", "/dev/a"));
    let t = Timeline::from_events(&events(&list));
    t.check_rollout(&old(), UpdateDomain::Host).expect("valid");
    // Replacement created before the old pod was gone: caught.
    let mut early = initial();
    early.extend([
        (M, "p1", "h1", "/dev/B", true, true),
        (A, "n1", "h1", "/dev/B", false, false),
        (D, "p1", "h1", "/dev/B", true, true),
    ]);
    let t = Timeline::from_events(&events(&early));
    assert!(t.check_rollout(&old(), UpdateDomain::Host).is_err());
}

#[test]
fn bucket_rollout_takes_every_host_of_a_bucket_at_once() {
    let buckets = |h2: &str| {
        Domains::Buckets(BTreeMap::from([
            ("h1".to_owned(), "rack-a".to_owned()),
            ("H2".to_owned(), h2.to_owned()),
        ]))
    };
    // h1 then H2, one after the other: right when they are in two racks.
    let mut by_host = initial();
    by_host.extend([
        (M, "p1", "h1", "/dev/B", true, true),
        (M, "p2", "h1", "/dev/c", true, true),
        (D, "p1", "h1", "/dev/B", true, true),
        (D, "p2", "h1", "/dev/c", true, true),
        (A, "n1", "h1", "/dev/B", false, false),
        (A, "n2", "h1", "/dev/c", false, false),
        (M, "n1", "h1", "/dev/B", true, false),
        (M, "n2", "h1", "/dev/c", true, false),
    ]);
    by_host.extend(replace("p3", "n3", "H2", "/dev/a"));
    let t = Timeline::from_events(&events(&by_host));
    t.check_rollout(&old(), buckets("rack-b"))
        .expect("two racks");
    // One rack: h1's replacements Ready before H2's pod went — caught.
    let error = t
        .check_rollout(&old(), buckets("rack-a"))
        .expect_err("one rack, host by host");
    assert!(error.to_string().contains("not all at once"), "{error:#}");
    // The whole rack at once passes.
    let mut by_rack = initial();
    by_rack.extend([
        (M, "p1", "h1", "/dev/B", true, true),
        (M, "p2", "h1", "/dev/c", true, true),
        (M, "p3", "H2", "/dev/a", true, true),
        (D, "p1", "h1", "/dev/B", true, true),
        (D, "p2", "h1", "/dev/c", true, true),
        (D, "p3", "H2", "/dev/a", true, true),
        (A, "n1", "h1", "/dev/B", false, false),
        (A, "n2", "h1", "/dev/c", false, false),
        (A, "n3", "H2", "/dev/a", false, false),
        (M, "n1", "h1", "/dev/B", true, false),
        (M, "n2", "h1", "/dev/c", true, false),
        (M, "n3", "H2", "/dev/a", true, false),
    ]);
    let t = Timeline::from_events(&events(&by_rack));
    t.check_rollout(&old(), buckets("rack-a"))
        .expect("one rack at once");
}
