use super::*;
use k8s_openapi::jiff::SignedDuration;

const PACIFIC: Release = Release::PACIFIC;
const REEF: Release = Release::REEF;

fn ids(of: &[u32]) -> Vec<OsdId> {
    of.iter().copied().map(OsdId).collect()
}

fn read(previous: Option<&ReleasesStatus>) -> ReleasesRead<'_> {
    ReleasesRead {
        previous,
        template_hash: "h2",
        image: None,
        osds: None,
        osd_map: None,
        own: ids(&[0, 1, 2]),
        now: Timestamp::from_second(1_000).expect("a time"),
    }
}

/// An OSD map requiring `release`.
fn requiring(release: Release) -> OsdDump {
    OsdDump {
        require_osd_release: Some(release),
        ..OsdDump::default()
    }
}

fn running(of: &[(&str, i64)]) -> BTreeMap<String, i64> {
    of.iter().map(|(r, n)| ((*r).to_owned(), *n)).collect()
}

#[test]
fn nothing_known_is_no_status() {
    assert_eq!(releases_status(&read(None)), None);
}

#[test]
fn mid_upgrade_the_osds_are_counted_by_release_and_rollback_is_over() {
    let status = releases_status(&ReleasesRead {
        image: Some(REEF),
        // osd.7 is another CephOSD's; osd.2 never reported.
        osds: Some(BTreeMap::from([
            (OsdId(0), Some(REEF)),
            (OsdId(1), Some(PACIFIC)),
            (OsdId(7), Some(PACIFIC)),
        ])),
        osd_map: Some(&requiring(PACIFIC)),
        ..read(None)
    })
    .expect("a status");
    assert_eq!(
        status.running,
        running(&[("pacific", 1), ("reef", 1), ("unknown", 1)])
    );
    assert_eq!(status.target.as_deref(), Some("reef"));
    assert_eq!(status.target_template_hash.as_deref(), Some("h2"));
    assert_eq!(status.require_osd_release.as_deref(), Some("pacific"));
    assert_eq!(status.rollback_possible, None, "osd.2's release is unknown");
    let reported = releases_status(&ReleasesRead {
        osds: Some(BTreeMap::from([
            (OsdId(0), Some(REEF)),
            (OsdId(1), Some(PACIFIC)),
            (OsdId(2), Some(PACIFIC)),
        ])),
        ..read(Some(&status))
    })
    .expect("a status");
    assert_eq!(
        reported.rollback_possible,
        Some(false),
        "osd.0 opened its data with reef"
    );
    let none_restarted = releases_status(&ReleasesRead {
        osds: Some(BTreeMap::from(
            [0, 1, 2].map(|id| (OsdId(id), Some(PACIFIC))),
        )),
        ..read(Some(&status))
    })
    .expect("a status");
    assert_eq!(
        none_restarted.rollback_possible,
        Some(true),
        "the template can go back to pacific"
    );
    assert_eq!(reported.target.as_deref(), Some("reef"), "kept for h2");
    assert_eq!(
        reported.require_osd_release.as_deref(),
        Some("pacific"),
        "kept"
    );
}

#[test]
fn without_an_upgrade_or_after_finalize_there_is_no_rollback() {
    let pacific_everywhere = Some(BTreeMap::from(
        [0, 1, 2].map(|id| (OsdId(id), Some(PACIFIC))),
    ));
    let idle = releases_status(&ReleasesRead {
        osds: pacific_everywhere,
        osd_map: Some(&requiring(PACIFIC)),
        ..read(None)
    })
    .expect("a status");
    assert_eq!(idle.running, running(&[("pacific", 3)]));
    assert_eq!(idle.rollback_possible, Some(false), "nothing older boots");
    let reef_everywhere = Some(BTreeMap::from([0, 1, 2].map(|id| (OsdId(id), Some(REEF)))));
    let finalized = releases_status(&ReleasesRead {
        image: Some(REEF),
        osds: reef_everywhere,
        osd_map: Some(&requiring(REEF)),
        ..read(Some(&idle))
    })
    .expect("a status");
    assert_eq!(finalized.running, running(&[("reef", 3)]));
    assert_eq!(finalized.require_osd_release.as_deref(), Some("reef"));
    assert_eq!(finalized.rollback_possible, Some(false));
}

#[test]
fn a_target_reported_for_another_template_is_dropped() {
    let before = ReleasesStatus {
        target: Some("reef".into()),
        target_template_hash: Some("h1".into()),
        require_osd_release: Some("pacific".into()),
        ..ReleasesStatus::default()
    };
    let status = releases_status(&read(Some(&before))).expect("a status");
    assert_eq!(status.target, None, "h2 reported nothing yet");
    assert_eq!(status.target_template_hash, None);
}

#[test]
fn the_answer_or_the_finalize_look_carries_the_osds_releases() {
    use crate::plan::gate::release::ReleaseLook;
    use crate::plan::gate::GateAnswer;
    assert_eq!(osd_releases_read(&CephView::default()), None);
    let answered = CephView {
        input: CephInput::Answered(GateAnswer {
            releases: Some(BTreeMap::from([(OsdId(3), REEF)])),
            ..GateAnswer::default()
        }),
        ..CephView::default()
    };
    assert_eq!(
        osd_releases_read(&answered),
        Some(BTreeMap::from([(OsdId(3), Some(REEF))]))
    );
    let looked = CephView {
        release_look: Some(Ok(ReleaseLook {
            daemons: crate::ceph::DaemonReleases::default(),
            osds: BTreeMap::from([(OsdId(4), None)]),
            require_osd_release: Some(PACIFIC),
        })),
        ..CephView::default()
    };
    assert_eq!(
        osd_releases_read(&looked),
        Some(BTreeMap::from([(OsdId(4), None)]))
    );
}

#[test]
fn an_upgrade_is_under_way_from_a_new_target_to_finalize() {
    assert!(!upgrade_under_way(None));
    let idle = ReleasesStatus {
        running: running(&[("pacific", 3)]),
        require_osd_release: Some("pacific".into()),
        ..ReleasesStatus::default()
    };
    assert!(!upgrade_under_way(Some(&idle)));
    let target_reef = ReleasesStatus {
        target: Some("reef".into()),
        ..idle.clone()
    };
    assert!(upgrade_under_way(Some(&target_reef)));
    let mixed = ReleasesStatus {
        running: running(&[("pacific", 1), ("reef", 2)]),
        ..idle.clone()
    };
    assert!(upgrade_under_way(Some(&mixed)));
    let finalized = ReleasesStatus {
        running: running(&[("reef", 3)]),
        target: Some("reef".into()),
        require_osd_release: Some("reef".into()),
        ..idle
    };
    assert!(!upgrade_under_way(Some(&finalized)));
}

#[test]
fn the_soak_counts_from_when_every_osd_first_ran_the_new_release() {
    let mixed = releases_status(&ReleasesRead {
        osds: Some(BTreeMap::from([
            (OsdId(0), Some(REEF)),
            (OsdId(1), Some(PACIFIC)),
            (OsdId(2), Some(REEF)),
        ])),
        osd_map: Some(&requiring(PACIFIC)),
        ..read(None)
    })
    .expect("a status");
    assert_eq!(mixed.upgraded_since, None);
    let reef_everywhere = Some(BTreeMap::from([0, 1, 2].map(|id| (OsdId(id), Some(REEF)))));
    let first = read(Some(&mixed)).now;
    let upgraded = releases_status(&ReleasesRead {
        osds: reef_everywhere.clone(),
        ..read(Some(&mixed))
    })
    .expect("a status");
    assert_eq!(upgraded.upgraded_since, Some(Time(first)));
    let later = releases_status(&ReleasesRead {
        osds: reef_everywhere.clone(),
        now: first + SignedDuration::from_secs(60),
        ..read(Some(&upgraded))
    })
    .expect("a status");
    assert_eq!(later.upgraded_since, Some(Time(first)), "kept");
    let finalized = releases_status(&ReleasesRead {
        osds: reef_everywhere,
        osd_map: Some(&requiring(REEF)),
        ..read(Some(&later))
    })
    .expect("a status");
    assert_eq!(
        finalized.upgraded_since, None,
        "nothing waits for a finalize"
    );
}
