use super::*;
use crate::crd::desired::desired_osds;
use crate::crd::{CephOsdSpec, OsdDevices, StorageEntry, UpdateDomain};
use serde_json::json;

/// Stands for the current template's hash in `pod()`.
const HASH: &str = "current";

fn current() -> TemplateHash {
    TemplateHash::of(&json!({"spec": {}}))
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("time")
}

/// A pod for OSD `host:/dev/sdb`: `controller` names its controller kind ("CephOSD" is
/// ours), `ready_at` when it turned Ready.
fn pod(
    name: &str,
    host: &str,
    hash: &str,
    state: &str,
    controller: Option<&str>,
    ready_at: Option<i64>,
) -> Pod {
    let current = current();
    let hash = if hash == HASH { current.as_str() } else { hash };
    let mut value = json!({
        "metadata": {
            "name": name,
            "creationTimestamp": "1970-01-01T00:00:10Z",
            "annotations": {
                labels::HOST: host,
                labels::DATA: "/dev/sdb",
                labels::TEMPLATE_HASH: hash,
                labels::POD_STATE: state,
            },
        },
        "status": {"phase": "Running"},
    });
    if let Some(kind) = controller {
        value["metadata"]["ownerReferences"] = json!([{
            "apiVersion": if kind == "CephOSD" { "ceph.elemental.net/v1alpha1" } else { "apps/v1" },
            "kind": kind, "name": "owner", "uid": if kind == "CephOSD" { "cr-uid" } else { "other" },
            "controller": true,
        }]);
    }
    if let Some(seconds) = ready_at {
        value["status"]["conditions"] = json!([{
            "type": "Ready", "status": "True",
            "lastTransitionTime": Time(at(seconds)),
        }]);
    }
    serde_json::from_value(value).expect("pod")
}

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn classes(pods: &[Pod], min_ready: i64, now: i64) -> Vec<(String, PodClass)> {
    let desired = desired_osds(&CephOsdSpec::new(
        vec![StorageEntry {
            hosts: vec!["h1".into(), "h2".into()],
            osds: vec![OsdDevices {
                data: "/dev/sdb".into(),
                db: None,
                wal: None,
            }],
        }],
        UpdateDomain::Osd,
        json!({}),
    ));
    let owner = Owner {
        name: "ceph-osds",
        uid: Some("cr-uid"),
    };
    let timing = Timing {
        now: at(now),
        min_ready: SignedDuration::from_secs(min_ready),
    };
    classify(
        &pods.iter().collect::<Vec<_>>(),
        &owner,
        &current(),
        &desired,
        &timing,
    )
    .into_iter()
    .map(|p| (p.name, p.class))
    .collect()
}

#[test]
fn each_pod_on_its_own_disk_gets_its_class() {
    let mut ended = pod(
        "osd-h2-sdb-ended",
        "h2",
        HASH,
        "up-to-date",
        Some("CephOSD"),
        None,
    );
    ended.status = Some(serde_json::from_value(json!({"phase": "Failed"})).expect("status"));
    let got = classes(
        &[
            pod("osd-h1-sdb-adopt", "h1", HASH, "up-to-date", None, Some(20)),
            ended,
        ],
        0,
        100,
    );
    assert_eq!(got[0].1, PodClass::UpToDate);
    assert_eq!(got[1].1, PodClass::Ended("Failed".into()));
    let old = classes(
        &[pod(
            "osd-h1-sdb-old",
            "h1",
            "older",
            "up-to-date",
            None,
            Some(20),
        )],
        0,
        100,
    );
    assert_eq!(old[0].1, PodClass::OutOfDate);
    let foreign = classes(
        &[pod(
            "osd-h1-sdb-rs",
            "h1",
            HASH,
            "up-to-date",
            Some("ReplicaSet"),
            Some(20),
        )],
        0,
        100,
    );
    assert!(matches!(&foreign[0].1, PodClass::Foreign(c) if c.kind == "ReplicaSet"));
    let misnamed = classes(
        &[pod("debug-copy", "h1", HASH, "up-to-date", None, Some(20))],
        0,
        100,
    );
    assert!(matches!(&misnamed[0].1, PodClass::Invalid(why) if why.contains("osd-h1-sdb-")));
}

#[test]
fn a_replacement_is_ready_only_after_its_soak() {
    let fresh = pod(
        "osd-h1-sdb-new",
        "h1",
        HASH,
        "wait-for-ready",
        Some("CephOSD"),
        Some(90),
    );
    assert_eq!(
        classes(std::slice::from_ref(&fresh), 30, 100)[0].1,
        PodClass::Unready
    );
    assert_eq!(
        classes(std::slice::from_ref(&fresh), 30, 120)[0].1,
        PodClass::Ready
    );
    assert_eq!(
        classes(std::slice::from_ref(&fresh), 0, 90)[0].1,
        PodClass::Ready
    );
    let unready = pod(
        "osd-h1-sdb-new",
        "h1",
        HASH,
        "wait-for-ready",
        Some("CephOSD"),
        None,
    );
    assert_eq!(classes(&[unready], 0, 100)[0].1, PodClass::Unready);
}

#[test]
fn one_keeper_per_disk_ours_then_ready_then_oldest_and_invalid_pods_claim_nothing() {
    // An adopted Ready pod and our own unready one: ours is kept.
    let got = classes(
        &[
            pod("osd-h1-sdb-aaaaa", "h1", HASH, "up-to-date", None, Some(20)),
            pod(
                "osd-h1-sdb-bbbbb",
                "h1",
                HASH,
                "wait-for-ready",
                Some("CephOSD"),
                None,
            ),
        ],
        0,
        100,
    );
    assert!(matches!(&got[0].1, PodClass::Invalid(why) if why.contains("osd-h1-sdb-bbbbb")));
    assert_eq!(got[1].1, PodClass::Unready);
    // Two adopted pods: the Ready one, whatever the name order.
    let got = classes(
        &[
            pod("osd-h1-sdb-aaaaa", "h1", HASH, "up-to-date", None, None),
            pod("osd-h1-sdb-bbbbb", "h1", HASH, "up-to-date", None, Some(20)),
        ],
        0,
        100,
    );
    assert!(matches!(got[0].1, PodClass::Invalid(_)));
    assert_eq!(got[1].1, PodClass::UpToDate);
    // A misnamed copy never takes the disk from the real pod.
    let got = classes(
        &[
            pod(
                "debug-copy",
                "h1",
                HASH,
                "up-to-date",
                Some("CephOSD"),
                Some(20),
            ),
            pod("osd-h1-sdb-bbbbb", "h1", HASH, "up-to-date", None, None),
        ],
        0,
        100,
    );
    assert!(matches!(got[0].1, PodClass::Invalid(_)));
    assert_eq!(got[1].1, PodClass::UpToDate);
}

#[test]
fn another_spelling_of_a_listed_disk_claims_that_disk_and_the_listed_one_is_kept() {
    // A Ready copy naming the disk `/dev//sdb` (not in the CR) and the adopted, unready
    // pod of `h1:/dev/sdb`: one disk, and the pod of the listed OSD keeps it.
    let mut respelled = pod("osd-h1-sdb-aaaaa", "h1", HASH, "up-to-date", None, Some(5));
    respelled
        .annotations_mut()
        .insert(labels::DATA.into(), "/dev//sdb".into());
    let listed = pod("osd-h1-sdb-bbbbb", "h1", HASH, "up-to-date", None, None);
    for pods in [[respelled.clone(), listed.clone()], [listed, respelled]] {
        let got = classes(&pods, 0, 100);
        let class = |name: &str| got.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone());
        assert_eq!(class("osd-h1-sdb-bbbbb"), Some(PodClass::UpToDate));
        assert!(
            matches!(class("osd-h1-sdb-aaaaa"), Some(PodClass::Invalid(why)) if why.contains("osd-h1-sdb-bbbbb")),
            "{got:?}"
        );
    }
}
