use super::*;
use crate::crd::UpdateDomain;
use crate::runtime::backoff::Backoff;
use crate::runtime::memory::expectations::Expected;
use crate::testing::CephOsdBuilder;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector;
use serde_json::json;
use std::time::{Duration, Instant};

fn cr(version: &str, updating: &[&str]) -> Arc<CephOsd> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
            "metadata": {"name": "c", "namespace": "n", "uid": "u", "resourceVersion": version},
            "spec": {"storage": [], "updateDomain": "OSD", "podTemplate": {}},
            "status": {"currentUpdate": updating},
        }))
        .expect("a CephOSD"),
    )
}

fn updating(cr: &CephOsd) -> Vec<String> {
    cr.status.clone().unwrap_or_default().current_update
}

#[test]
fn the_written_status_stands_in_until_the_cache_moves_on() {
    let written = Memory::default();
    let planned_from = cr("7", &[]);
    let mut status = planned_from.status.clone().unwrap_or_default();
    status.current_update = vec!["w1".into()];
    written.remember(&planned_from, &status);

    // The cache still shows version 7: our write replaces its status.
    assert_eq!(updating(&written.latest(cr("7", &[]))), ["w1"]);
    assert_eq!(updating(&written.latest(cr("7", &[]))), ["w1"]);
    // The cache has seen a newer version: it is used as it is, and the memory dropped.
    assert_eq!(updating(&written.latest(cr("8", &["w2"]))), ["w2"]);
    assert!(updating(&written.latest(cr("7", &[]))).is_empty());
}

#[test]
fn nothing_remembered_changes_nothing() {
    let written = Memory::default();
    assert!(updating(&written.latest(cr("7", &[]))).is_empty());
}

fn osds(version: &str, hosts: &[&str]) -> CephOsd {
    let mut cr = CephOsdBuilder::new("osds")
        .storage(hosts, &["/dev/sdb"])
        .update_domain(UpdateDomain::Host)
        .template(json!({"spec": {"containers": [{"name": "osd", "image": "ceph"}]}}))
        .namespace("ceph")
        .uid("uid-1")
        .build()
        .expect("a CephOSD");
    cr.metadata.resource_version = Some(version.into());
    cr
}

#[test]
fn one_version_is_expanded_once_and_a_new_one_anew() {
    let specs = Memory::default();
    let first = specs.expanded(&osds("1", &["h1"]));
    assert!(Arc::ptr_eq(&first, &specs.expanded(&osds("1", &["h1"]))));
    let edited = specs.expanded(&osds("2", &["h1", "h2"]));
    assert!(!Arc::ptr_eq(&first, &edited));
    assert_eq!(edited.desired.osds.len(), 2);
    let mut recreated = osds("2", &["h1"]);
    recreated.metadata.uid = Some("uid-2".into());
    assert_eq!(specs.expanded(&recreated).desired.osds.len(), 1);
    specs.forget("ceph/osds");
    assert!(!Arc::ptr_eq(
        &edited,
        &specs.expanded(&osds("2", &["h1", "h2"]))
    ));
}

#[test]
fn an_object_without_a_version_is_expanded_every_time() {
    let specs = Memory::default();
    let mut unversioned = osds("1", &["h1"]);
    unversioned.metadata.resource_version = None;
    assert!(!Arc::ptr_eq(
        &specs.expanded(&unversioned),
        &specs.expanded(&unversioned)
    ));
}

#[test]
fn doubles_caps_and_resets() {
    let memory = Memory::default();
    let backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(60));
    let start = Instant::now();
    let failed = |object: &str, at: u64| {
        let at = start + Duration::from_secs(at);
        memory.failed(object, at, |n| backoff.delay(n)).as_secs()
    };
    // Each retry fails when due: 5 s after 0, 10 s after 5, ...
    let mut at = 0;
    let delays: Vec<u64> = (0..6)
        .map(|_| {
            let delay = failed("ns/a", at);
            at += delay;
            delay
        })
        .collect();
    assert_eq!(delays, [5, 10, 20, 40, 60, 60]);
    assert_eq!(failed("ns/b", at), 5, "per object");
    memory.succeeded("ns/a");
    assert_eq!(failed("ns/a", at), 5);
}

/// A burst of failures (the failure's own status write triggers the next reconcile, which
/// fails the same way) counts once: the retry stays where the first put it.
#[test]
fn failures_before_the_retry_is_due_keep_it_where_it_was() {
    let memory = Memory::default();
    let backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(300));
    let start = Instant::now();
    let failed = |ms: u64| {
        let at = start + Duration::from_millis(ms);
        memory.failed("ns/a", at, |n| backoff.delay(n))
    };
    assert_eq!(failed(0), Duration::from_secs(5));
    assert_eq!(failed(30), Duration::from_millis(4_970));
    assert_eq!(failed(4_000), Duration::from_secs(1));
    // The retry itself fails: the next one doubles.
    assert_eq!(failed(5_000), Duration::from_secs(10));
    assert_eq!(failed(5_100), Duration::from_millis(9_900));
}

/// Remembers one of everything of `cr`: expectations, a quiet fingerprint, a written
/// status, an expanded spec and a failure.
fn remember_everything(memory: &Memory, cr: &CephOsd) {
    let key = cr.object_key();
    memory.with(&key, |r| {
        r.expectations.expect(
            Expected::Created { name: "p".into() },
            Timestamp::UNIX_EPOCH,
        );
        r.quiet = Some(7);
    });
    memory.remember(cr, &CephOsdStatus::default());
    memory.expanded(cr);
    memory.failed(&key, Instant::now(), |_| Duration::from_secs(5));
    memory.with(&key, |r| {
        assert!(
            !r.expectations.is_empty()
                && r.quiet.is_some()
                && r.written.is_some()
                && r.expanded.is_some()
                && r.failures == 1,
            "{r:?}"
        );
    });
}

fn remembered(memory: &Memory) -> Vec<String> {
    let mut keys: Vec<String> = locked(&memory.by_cr).keys().cloned().collect();
    keys.sort();
    keys
}

fn named(name: &str) -> CephOsd {
    let mut cr = osds("1", &["h1"]);
    cr.metadata.name = Some(name.into());
    cr.metadata.uid = Some(format!("uid-{name}"));
    cr
}

#[test]
fn nothing_of_a_deleted_cephosd_outlives_it() {
    let memory = Memory::default();
    let (a, b, c) = (named("a"), named("b"), named("c"));
    for cr in [&a, &b, &c] {
        remember_everything(&memory, cr);
    }
    let (store, mut writer) = reflector::store();
    for cr in [&a, &b, &c] {
        writer.apply_watcher_event(&watcher::Event::Apply(cr.clone()));
    }
    // Forgotten at once when the reconcile of a deleted CephOSD finds it gone.
    memory.forget(&a.object_key());
    assert_eq!(remembered(&memory), ["ceph/b", "ceph/c"]);
    // Deleted while the watch runs.
    let deleted = watcher::Event::Delete(b.clone());
    writer.apply_watcher_event(&deleted);
    memory.forget_gone(&store, &deleted);
    assert_eq!(remembered(&memory), ["ceph/c"]);
    // Deleted while the watch was down: gone once the relist is complete.
    remember_everything(&memory, &a);
    for event in [
        watcher::Event::Init,
        watcher::Event::InitApply(a.clone()),
        watcher::Event::InitDone,
    ] {
        writer.apply_watcher_event(&event);
        memory.forget_gone(&store, &event);
    }
    assert_eq!(remembered(&memory), ["ceph/a"]);
}

#[test]
fn an_entry_emptied_is_dropped() {
    let memory = Memory::default();
    let cr = named("a");
    memory.failed(&cr.object_key(), Instant::now(), |_| Duration::from_secs(5));
    memory.succeeded(&cr.object_key());
    assert!(remembered(&memory).is_empty());
}
