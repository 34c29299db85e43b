use super::*;
use crate::crd::osd::OsdKey;
use crate::plan::observed::classify::PodClass;
use crate::testing::observed_pods::observed_pod;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("time")
}

fn pod(host: &str, class: PodClass, created: i64) -> ObservedPod {
    observed_pod(OsdKey::new(host, "/dev/sdb"), class, at(created))
}

fn crash(entity: &str, at_second: i64) -> CrashReport {
    CrashReport {
        id: format!("{at_second}_{entity}"),
        entity: entity.to_owned(),
        at: at(at_second),
    }
}

/// h1 runs osd.1, h2 osd.2, h3 osd.3.
fn ids() -> BTreeMap<String, Vec<u32>> {
    (1..=3)
        .map(|n| (format!("h{n}:/dev/sdb"), vec![n]))
        .collect()
}

#[test]
fn a_crash_of_a_new_daemon_after_its_pod_started_halts() {
    let pods = [
        pod("h1", PodClass::UpToDate, 100),
        pod("h2", PodClass::OutOfDate, 10),
        pod("h3", PodClass::OutOfDate, 10),
    ];
    let halt = crash_halt(&pods, &ids(), &[crash("osd.1", 130)]).expect("halted");
    assert_eq!(halt.osd, OsdId(1));
    assert_eq!(halt.crash_id, "130_osd.1");
    assert!(halt.pod.contains("h1:/dev/sdb"), "{}", halt.pod);
    let said = halt.to_string();
    for part in [
        "osd.1 crashed",
        "130_osd.1",
        "ceph crash archive 130_osd.1",
        "no further",
    ] {
        assert!(said.contains(part), "{part}: {said}");
    }
}

#[test]
fn a_replacement_not_ready_yet_counts_and_the_earliest_crash_is_named() {
    let pods = [
        pod("h1", PodClass::Ready, 100),
        pod("h2", PodClass::Unready, 100),
        pod("h3", PodClass::OutOfDate, 10),
    ];
    let crashes = [
        crash("osd.1", 150),
        crash("osd.2", 120),
        crash("osd.1", 110),
    ];
    let halt = crash_halt(&pods, &ids(), &crashes).expect("halted");
    assert_eq!((halt.osd, halt.at), (OsdId(1), at(110)));
}

#[test]
fn crashes_that_are_not_the_new_templates_never_halt() {
    let pods = [
        pod("h1", PodClass::UpToDate, 100),
        pod("h2", PodClass::OutOfDate, 10),
        pod("h3", PodClass::Terminating, 100),
    ];
    let crashes = [
        // Before the new pod started: the old daemon's crash.
        crash("osd.1", 99),
        // An old template's daemon; a pod going away.
        crash("osd.2", 120),
        crash("osd.3", 120),
        // Not an OSD; an OSD no key of this CephOSD runs.
        crash("mon.a", 120),
        crash("osd.7", 120),
    ];
    assert_eq!(crash_halt(&pods, &ids(), &crashes), None);
    assert_eq!(crash_halt(&pods, &ids(), &[]), None);
    // A key whose ids are not known yet: nothing to tell.
    assert_eq!(
        crash_halt(&pods, &BTreeMap::new(), &[crash("osd.1", 120)]),
        None
    );
}

#[test]
fn a_pod_without_a_creation_time_never_halts() {
    let mut new = pod("h1", PodClass::UpToDate, 100);
    new.created = None;
    assert_eq!(crash_halt(&[new], &ids(), &[crash("osd.1", 120)]), None);
}

#[test]
fn crashes_matter_while_a_rollout_is_under_way() {
    use crate::crd::{CephStep, StepDrain};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let step = |drain: Option<StepDrain>| CephStep {
        keys: vec!["h1:/dev/sdb".into()],
        osds: Vec::new(),
        noout: Vec::new(),
        started: Time(at(0)),
        drain,
        domains: BTreeMap::new(),
    };
    assert!(!crashes_matter(None));
    let settled = CephOsdStatus::default();
    assert!(!crashes_matter(Some(&settled)));
    let waiting = CephOsdStatus {
        out_of_date: 2,
        ..CephOsdStatus::default()
    };
    let unready = CephOsdStatus {
        unready: 1,
        ..CephOsdStatus::default()
    };
    let stepping = CephOsdStatus {
        ceph_step: Some(step(None)),
        ..CephOsdStatus::default()
    };
    for status in [&waiting, &unready, &stepping] {
        assert!(crashes_matter(Some(status)), "{status:?}");
    }
    // A removal's drain is no rollout of a template.
    let draining = CephOsdStatus {
        ceph_step: Some(step(Some(StepDrain::default()))),
        ..CephOsdStatus::default()
    };
    assert!(!crashes_matter(Some(&draining)));
}
