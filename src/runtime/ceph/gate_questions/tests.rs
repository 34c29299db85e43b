//! Asking Ceph for the planner, against the scripted Ceph: what is asked, and that any
//! failure to ask is a `Wait`.

use super::*;
use crate::ceph::fake::{Call, ScriptedCeph};
use crate::ceph::{CephError, OkToStop, OsdDump, OsdInfo, OsdMetadata, PgStateCount, PgStates};
use crate::crd::osd::OsdKey;
use crate::testing::CephOsdBuilder;
use std::time::Duration;

fn cr() -> CephOsd {
    CephOsdBuilder::new("ceph-osds")
        .namespace("ceph")
        .uid("cr-uid")
        .build()
        .expect("a CephOSD")
}

fn healthy() -> crate::ceph::ClusterStatus {
    crate::ceph::test_data::healthy_status()
}

fn clean() -> PgStates {
    PgStates {
        ready: true,
        num_pgs: 8,
        by_state: vec![PgStateCount {
            state: "active+clean".into(),
            count: 8,
        }],
    }
}

fn dump() -> OsdDump {
    let info = OsdInfo {
        id: OsdId(3),
        up: true,
        is_in: true,
        up_from: 12,
        noout: false,
        state: vec!["exists".into(), "up".into()],
    };
    OsdDump {
        epoch: 20,
        osds: BTreeMap::from([(OsdId(3), info)]),
        require_osd_release: None,
        placement: crate::ceph::Placement::default(),
    }
}

/// osd.3 reports pod `osd-h1-sdb-x` in namespace `ceph` on node `h1`.
fn metadata() -> BTreeMap<OsdId, OsdMetadata> {
    BTreeMap::from([(
        OsdId(3),
        OsdMetadata {
            id: OsdId(3),
            pod_name: Some("osd-h1-sdb-x".into()),
            pod_namespace: Some("ceph".into()),
            ceph_version: None,
            hostname: Some("h1".into()),
            devices: crate::ceph::ReportedDevices::default(),
        },
    )])
}

async fn ask(
    ceph: &ScriptedCeph,
    cr: &CephOsd,
    observed: &[ObservedPod],
    pods: &[Arc<Pod>],
    question: &[GateSubject],
) -> GateAnswer {
    ask_with_image(ceph, cr, observed, pods, question, None).await
}

/// [`ask`], the template's image having reported `image_release`.
async fn ask_with_image(
    ceph: &ScriptedCeph,
    cr: &CephOsd,
    observed: &[ObservedPod],
    pods: &[Arc<Pod>],
    question: &[GateSubject],
    image_release: Option<crate::ceph::Release>,
) -> GateAnswer {
    let others = OtherCephOsds::default();
    let asked = Question {
        cr,
        observed,
        pods,
        subjects: question,
        others: &others,
        image_release,
        placement: None,
    };
    answer(ceph, &asked, None).await
}

fn question() -> Vec<GateSubject> {
    vec![GateSubject {
        key: OsdKey::new("h1", "/dev/sdb"),
        pod: Some("osd-h1-sdb-x".into()),
        domain: "h1".into(),
        leaving: false,
    }]
}

#[tokio::test]
async fn a_mapped_healthy_domain_is_asked_about_exactly_its_ids() {
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata()))
        .on_ok_to_stop(Ok(OkToStop {
            ok_to_stop: true,
            osds: BTreeSet::from([OsdId(3)]),
            ..OkToStop::default()
        }));
    let answer = ask(&ceph, &cr(), &[], &[], &question()).await;
    assert_eq!(
        answer.decision,
        GateDecision::Proceed {
            ids: BTreeSet::from([OsdId(3)])
        }
    );
    assert_eq!(answer.up_from, BTreeMap::from([(OsdId(3), 12)]));
    assert_eq!(
        answer.learned,
        BTreeMap::from([(OsdKey::new("h1", "/dev/sdb"), BTreeSet::from([OsdId(3)]))])
    );
    assert!(ceph.calls().contains(&Call::OkToStop(vec![OsdId(3)])));
}

#[tokio::test]
async fn a_failure_to_ask_is_a_wait_that_says_why() {
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata()))
        .on_ok_to_stop(Err(CephError::Timeout {
            command: "osd ok-to-stop 3".into(),
            timeout: Duration::from_secs(15),
        }));
    let answer = ask(&ceph, &cr(), &[], &[], &question()).await;
    assert!(matches!(answer.decision, GateDecision::Wait { .. }));
    assert_eq!(decision_label(&answer.decision), "CephUnavailable");
    assert!(answer
        .decision
        .to_string()
        .contains("gave no answer within 15s"));

    let ceph = ScriptedCeph::default()
        .on_status(Err(CephError::Failed {
            command: "status".into(),
            exit_code: Some(1),
            stderr: "timed out".into(),
        }))
        .on_osd_dump(Ok(dump()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata()));
    let answer = ask(&ceph, &cr(), &[], &[], &question()).await;
    assert_eq!(decision_label(&answer.decision), "CephUnavailable");
    assert!(
        !ceph.calls().iter().any(|c| matches!(c, Call::OkToStop(_))),
        "nothing stopped on no answer"
    );
}

#[tokio::test]
async fn an_unmapped_pod_halts_without_asking_ok_to_stop() {
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(BTreeMap::new()));
    let answer = ask(&ceph, &cr(), &[], &[], &question()).await;
    assert_eq!(decision_label(&answer.decision), "CephOsdIdUnknown");
    assert!(matches!(answer.decision, GateDecision::Halt { .. }));
}

#[test]
fn stated_ids_are_a_list_of_numbers_or_nothing() {
    let pod = |ids: &str| -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"annotations": {labels::OSD_IDS: ids}}
        }))
        .expect("pod")
    };
    assert_eq!(
        stated_ids(&pod("3, 7")),
        Some(Ok(BTreeSet::from([OsdId(3), OsdId(7)])))
    );
    assert_eq!(stated_ids(&pod("3,x")), Some(Err("3,x".to_owned())));
    assert_eq!(stated_ids(&pod("")), Some(Err(String::new())));
    let none: Pod = serde_json::from_value(serde_json::json!({"metadata": {}})).expect("pod");
    assert_eq!(stated_ids(&none), None);
}

/// osd.3 on h1 and osd.4 on h2, both up, each reporting its pod.
fn two_hosts() -> (OsdDump, BTreeMap<OsdId, OsdMetadata>) {
    let mut dump = dump();
    let mut four = dump.osds[&OsdId(3)].clone();
    four.id = OsdId(4);
    dump.osds.insert(OsdId(4), four);
    let mut metadata = metadata();
    metadata.insert(
        OsdId(4),
        OsdMetadata {
            id: OsdId(4),
            pod_name: Some("osd-h2-sdb-y".into()),
            pod_namespace: Some("ceph".into()),
            ceph_version: None,
            hostname: Some("h2".into()),
            devices: crate::ceph::ReportedDevices::default(),
        },
    );
    (dump, metadata)
}

fn two_domains() -> Vec<GateSubject> {
    let mut subjects = question();
    subjects.push(GateSubject {
        key: OsdKey::new("h2", "/dev/sdb"),
        pod: Some("osd-h2-sdb-y".into()),
        domain: "h2".into(),
        leaving: false,
    });
    subjects
}

fn ok_to_stop(ok: bool, ids: &[u32]) -> OkToStop {
    OkToStop {
        ok_to_stop: ok,
        osds: ids.iter().copied().map(OsdId).collect(),
        num_not_ok_pgs: if ok { 0 } else { 8 },
        ..OkToStop::default()
    }
}

#[tokio::test]
async fn two_domains_refused_together_are_asked_again_as_the_first_alone() {
    let (dump, metadata) = two_hosts();
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump.clone()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata.clone()))
        .on_ok_to_stop(Ok(ok_to_stop(false, &[3, 4])))
        .on_ok_to_stop(Ok(ok_to_stop(true, &[3])));
    let answer = ask(&ceph, &cr(), &[], &[], &two_domains()).await;
    assert_eq!(
        answer.decision,
        GateDecision::Proceed {
            ids: BTreeSet::from([OsdId(3)])
        }
    );
    assert_eq!(
        answer.keys,
        BTreeMap::from([(OsdKey::new("h1", "/dev/sdb"), BTreeSet::from([OsdId(3)]))])
    );
    let asked: Vec<Call> = ceph
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Call::OkToStop(_)))
        .collect();
    assert_eq!(
        asked,
        [
            Call::OkToStop(vec![OsdId(3), OsdId(4)]),
            Call::OkToStop(vec![OsdId(3)])
        ]
    );

    // The pair is ok: one question, both domains.
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump.clone()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata.clone()))
        .on_ok_to_stop(Ok(ok_to_stop(true, &[3, 4])));
    let answer = ask(&ceph, &cr(), &[], &[], &two_domains()).await;
    assert_eq!(answer.keys.len(), 2);
    assert!(matches!(answer.decision, GateDecision::Proceed { .. }));

    // The first alone refused too: its answer stands.
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata))
        .on_ok_to_stop(Ok(ok_to_stop(false, &[3, 4])))
        .on_ok_to_stop(Ok(ok_to_stop(false, &[3])));
    let answer = ask(&ceph, &cr(), &[], &[], &two_domains()).await;
    assert_eq!(decision_label(&answer.decision), "CephNotOkToStop");
    assert_eq!(answer.keys.len(), 1);
}

#[tokio::test]
async fn an_answer_starts_from_a_look_just_taken() {
    let ceph = ScriptedCeph::default()
        .on_osd_metadata(Ok(metadata()))
        .on_ok_to_stop(Ok(ok_to_stop(true, &[3])));
    let looked = crate::ceph::CephFacts {
        status: healthy(),
        osds: dump(),
        pgs: Some(clean()),
        pgs_trail_placement: None,
    };
    let (cr, subjects, others) = (cr(), question(), OtherCephOsds::default());
    let asked = Question {
        cr: &cr,
        observed: &[],
        pods: &[],
        subjects: &subjects,
        others: &others,
        image_release: None,
        placement: None,
    };
    let answer = answer(&ceph, &asked, Some(looked)).await;
    assert!(matches!(answer.decision, GateDecision::Proceed { .. }));
    assert_eq!(
        ceph.calls(),
        [Call::OsdMetadata, Call::OkToStop(vec![OsdId(3)])],
        "no second look"
    );
}

/// A daemon of the reference operator's pods on `node`: no pod reported, BlueStore on a file
/// (no device of its own) or on `/dev/<device>`.
fn reference_daemon(id: u32, node: &str, device: Option<&str>) -> OsdMetadata {
    let devices = match device {
        Some(d) => serde_json::json!({
            "bluestore_bdev_access_mode": "blk",
            "bluestore_bdev_devices": d,
            "bluestore_bdev_dev_node": format!("/dev/{d}"),
            "devices": d,
        }),
        None => {
            serde_json::json!({"bluestore_bdev_access_mode": "file", "bluestore_bdev_devices": "vda"})
        }
    };
    OsdMetadata {
        id: OsdId(id),
        hostname: Some(node.into()),
        pod_name: None,
        pod_namespace: None,
        ceph_version: None,
        devices: serde_json::from_value(devices).expect("devices"),
    }
}

fn up(ids: &[u32]) -> OsdDump {
    let mut d = dump();
    let three = d.osds[&OsdId(3)].clone();
    d.osds = ids
        .iter()
        .map(|&id| {
            (
                OsdId(id),
                OsdInfo {
                    id: OsdId(id),
                    ..three.clone()
                },
            )
        })
        .collect();
    d
}

#[tokio::test]
async fn an_adopted_pods_osd_is_its_nodes_daemon_on_its_data_device_and_is_learnt() {
    let metadata = BTreeMap::from([
        (OsdId(3), reference_daemon(3, "h1", Some("sdb"))),
        (OsdId(4), reference_daemon(4, "h1", Some("sdc"))),
    ]);
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(up(&[3, 4])))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata))
        .on_ok_to_stop(Ok(ok_to_stop(true, &[3])));
    let answer = ask(&ceph, &cr(), &[], &[], &question()).await;
    assert_eq!(
        answer.decision,
        GateDecision::Proceed {
            ids: BTreeSet::from([OsdId(3)])
        }
    );
    assert_eq!(
        answer.learned,
        BTreeMap::from([(OsdKey::new("h1", "/dev/sdb"), BTreeSet::from([OsdId(3)]))])
    );
}

#[tokio::test]
async fn a_host_of_file_backed_osds_is_asked_about_as_a_set_and_nothing_is_learnt() {
    let metadata = BTreeMap::from([
        (OsdId(3), reference_daemon(3, "h1", None)),
        (OsdId(5), reference_daemon(5, "h1", None)),
    ]);
    let mut subjects = question();
    subjects.push(GateSubject {
        key: OsdKey::new("h1", "/dev/sdc"),
        pod: Some("osd-h1-sdc-z".into()),
        domain: "h1".into(),
        leaving: false,
    });
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(up(&[3, 5])))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata.clone()))
        .on_ok_to_stop(Ok(ok_to_stop(true, &[3, 5])));
    let answer = ask(&ceph, &cr(), &[], &[], &subjects).await;
    assert_eq!(
        answer.decision,
        GateDecision::Proceed {
            ids: BTreeSet::from([OsdId(3), OsdId(5)])
        }
    );
    assert!(ceph
        .calls()
        .contains(&Call::OkToStop(vec![OsdId(3), OsdId(5)])));
    assert!(answer.learned.is_empty(), "{:?}", answer.learned);

    // One OSD at a time: Ceph cannot tell which is whose; the condition says what resolves it.
    for s in &mut subjects {
        s.domain = s.key.to_string();
    }
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(up(&[3, 5])))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata));
    let answer = ask(&ceph, &cr(), &[], &[], &subjects[..1]).await;
    assert_eq!(decision_label(&answer.decision), "CephOsdIdUnknown");
    let text = answer.decision.to_string();
    assert!(
        text.contains("osd.3, osd.5")
            && text.contains(
                "kubectl annotate pod --overwrite -n ceph osd-h1-sdb-x ceph.elemental.net/osd-ids=N"
            ),
        "{text}"
    );
    assert!(!ceph.calls().iter().any(|c| matches!(c, Call::OkToStop(_))));
}

#[tokio::test]
async fn an_unreadable_statement_is_reported_with_its_pod() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "osd-h1-sdb-x", "annotations": {labels::OSD_IDS: "three"}}
    }))
    .expect("pod");
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(BTreeMap::new()));
    let answer = ask(&ceph, &cr(), &[], &[Arc::new(pod)], &question()).await;
    assert_eq!(
        answer.unreadable_statements,
        BTreeMap::from([("osd-h1-sdb-x".to_owned(), "three".to_owned())])
    );
    assert!(
        answer.decision.to_string().contains(
            "its ceph.elemental.net/osd-ids annotation \"three\" is not a list of OSD ids"
        ),
        "{}",
        answer.decision
    );
}

#[tokio::test]
async fn a_drain_is_asked_without_ok_to_stop_and_learns_which_ids_are_out() {
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata()));
    let mut leaving = question();
    leaving[0].leaving = true;
    let answer = ask(&ceph, &cr(), &[], &[], &leaving).await;
    assert_eq!(
        answer.decision,
        GateDecision::Proceed {
            ids: BTreeSet::from([OsdId(3)])
        }
    );
    assert!(answer.out.is_empty(), "osd.3 is in");
    assert!(
        !ceph.calls().iter().any(|c| matches!(c, Call::OkToStop(_))),
        "{:?}",
        ceph.calls()
    );

    // Out already (an admin's): said, so the drain does not claim it.
    let mut out = dump();
    out.osds.get_mut(&OsdId(3)).expect("osd.3").is_in = false;
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(out))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(metadata()));
    let answer = ask(&ceph, &cr(), &[], &[], &leaving).await;
    assert_eq!(answer.out, BTreeSet::from([OsdId(3)]));
}

fn drain_step() -> crate::crd::CephStep {
    crate::crd::CephStep {
        keys: vec!["h1:/dev/sdb".into()],
        osds: vec![crate::crd::StepOsd { id: 3, up_from: 12 }],
        noout: Vec::new(),
        started: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ),
        drain: Some(crate::crd::StepDrain::default()),
        domains: std::collections::BTreeMap::new(),
    }
}

/// A placement clock whose PG states never trail (no lag).
fn settled(memory: &Memory) -> PlacementClock<'_> {
    PlacementClock {
        memory,
        key: "ceph/ceph-osds",
        lag: Duration::ZERO,
    }
}

#[tokio::test]
async fn an_open_drain_is_looked_at_with_safe_to_destroy_for_exactly_its_ids() {
    let safe = crate::ceph::SafeToDestroy {
        safe_to_destroy: BTreeSet::from([OsdId(3)]),
        ..crate::ceph::SafeToDestroy::default()
    };
    let ceph = ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump()))
        .on_pg_states(Ok(clean()))
        .on_pgs_on_osd(Ok(Vec::new()))
        .on_safe_to_destroy(Ok(safe))
        .on_crush_tree(Ok(crate::ceph::CrushTree::default()));
    let memory = Memory::default();
    let (progress, facts) = look_at_drain(&ceph, &drain_step(), &settled(&memory)).await;
    assert_eq!(progress, crate::plan::gate::DrainProgress::Safe);
    assert!(facts.is_some());
    assert!(ceph.calls().contains(&Call::SafeToDestroy(vec![OsdId(3)])));
}

#[tokio::test(start_paused = true)]
async fn an_open_drain_without_a_mgr_is_not_asked_and_says_so() {
    let ceph = ScriptedCeph::default()
        .on_status(Ok(crate::ceph::ClusterStatus {
            mgr_available: false,
            ..healthy()
        }))
        .on_osd_dump(Ok(dump()))
        .on_pg_states_hang()
        .on_pgs_on_osd_hang()
        .on_safe_to_destroy_hang()
        .on_crush_tree(Ok(crate::ceph::CrushTree::default()));
    let memory = Memory::default();
    let (progress, _) = look_at_drain(&ceph, &drain_step(), &settled(&memory)).await;
    assert!(
        matches!(&progress, crate::plan::gate::DrainProgress::NoAnswer { why } if why.contains("no mgr")),
        "{progress:?}"
    );
    assert!(!ceph
        .calls()
        .iter()
        .any(|c| matches!(c, Call::SafeToDestroy(_))));
}

/// osd.3 on Pacific, as `metadata`.
fn pacific_metadata() -> BTreeMap<OsdId, OsdMetadata> {
    let mut metadata = metadata();
    for m in metadata.values_mut() {
        m.ceph_version = Some("ceph version 16.2.15 (618f44) pacific (stable)".into());
    }
    metadata
}

/// A healthy look whose osd.3 runs Pacific.
fn healthy_with_pacific_osds() -> ScriptedCeph {
    ScriptedCeph::default()
        .on_status(Ok(healthy()))
        .on_osd_dump(Ok(dump()))
        .on_pg_states(Ok(clean()))
        .on_osd_metadata(Ok(pacific_metadata()))
}

async fn ask_for_reef(ceph: &ScriptedCeph) -> GateAnswer {
    let reef = Some(crate::ceph::Release::REEF);
    ask_with_image(ceph, &cr(), &[], &[], &question(), reef).await
}

#[tokio::test]
async fn a_step_to_a_release_the_monitors_do_not_run_is_refused_before_ok_to_stop() {
    let versions = crate::ceph::test_data::fixture("versions_all_pacific");
    let ceph = healthy_with_pacific_osds()
        .on_versions(Ok(crate::ceph::parse_versions(&versions).unwrap()));
    let answer = ask_for_reef(&ceph).await;
    let GateDecision::Wait { blockers } = &answer.decision else {
        panic!("{:?}", answer.decision);
    };
    assert_eq!(blockers[0].category(), "MonitorsOlder");
    assert!(ceph.calls().contains(&Call::Versions));
    assert!(
        !(ceph.calls().iter()).any(|c| matches!(c, Call::OkToStop(_))),
        "{:?}",
        ceph.calls()
    );
}

#[tokio::test]
async fn with_the_monitors_and_managers_on_the_release_the_step_is_asked_about() {
    let versions = crate::ceph::test_data::fixture("versions_mons_reef_osds_pacific");
    let ceph = healthy_with_pacific_osds()
        .on_versions(Ok(crate::ceph::parse_versions(&versions).unwrap()))
        .on_ok_to_stop(Ok(OkToStop {
            ok_to_stop: true,
            osds: BTreeSet::from([OsdId(3)]),
            ..OkToStop::default()
        }));
    let answer = ask_for_reef(&ceph).await;
    assert!(
        matches!(answer.decision, GateDecision::Proceed { .. }),
        "{:?}",
        answer.decision
    );
}

#[tokio::test]
async fn a_release_change_without_ceph_versions_waits() {
    let ceph = healthy_with_pacific_osds().on_versions(Err(CephError::Timeout {
        command: "versions".into(),
        timeout: Duration::from_secs(15),
    }));
    let answer = ask_for_reef(&ceph).await;
    assert_eq!(
        answer.decision.blockers()[0].category(),
        "CephVersionsUnknown"
    );
}
