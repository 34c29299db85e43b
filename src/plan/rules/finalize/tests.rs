//! Finalize on answers recorded from real Pacific and Reef daemons (`tests/data/ceph/`).

use super::*;
use crate::ceph::test_data::fixture;
use crate::ceph::{parse_osd_dump, parse_osd_metadata, parse_versions, OsdMetadata};

const REEF: Release = Release::REEF;

fn look(versions: &str, dump: &str, metadata: &str) -> ReleaseLook {
    let dump = parse_osd_dump(&fixture(dump)).unwrap();
    let metadata = parse_osd_metadata(&fixture(metadata)).unwrap();
    ReleaseLook {
        daemons: parse_versions(&fixture(versions)).unwrap(),
        osds: (dump.osds.keys())
            .map(|id| (*id, metadata.get(id).and_then(OsdMetadata::release)))
            .collect(),
        require_osd_release: dump.require_osd_release,
    }
}

fn reason(verdict: &Finalize) -> &'static str {
    match verdict {
        Finalize::Raise { .. } => "Raise",
        Finalize::Done { .. } => "Done",
        Finalize::Refused { reason, .. } => reason,
    }
}

#[test]
fn every_osd_and_monitor_on_reef_raises_it_once() {
    let all_reef = look(
        "versions_all_reef",
        "osd_dump_all_reef_before_finalize",
        "osd_metadata_all_reef",
    );
    let verdict = finalize("reef", Ok(&all_reef));
    assert_eq!(verdict, Finalize::Raise { release: REEF });
    assert!(matches!(
        verdict.action(),
        Some(Action::RequireOsdRelease { release: REEF })
    ));
    let finalized = look(
        "versions_all_reef",
        "osd_dump_after_finalize",
        "osd_metadata_all_reef",
    );
    assert_eq!(
        finalize("reef", Ok(&finalized)),
        Finalize::Done { release: REEF }
    );
    assert!(finalize("pacific", Ok(&finalized)).action().is_none());
}

#[test]
fn once_done_ceph_is_asked_nothing_more() {
    assert!(is_done("reef", Some(REEF)));
    assert!(is_done("pacific", Some(REEF)));
    assert!(!is_done("reef", Some(Release::PACIFIC)));
    assert!(!is_done("reeef", Some(REEF)));
    assert!(!is_done("reef", None));
    let bare = ReleaseLook {
        daemons: crate::ceph::DaemonReleases::default(),
        osds: std::collections::BTreeMap::new(),
        require_osd_release: Some(REEF),
    };
    assert_eq!(
        finalize("reef", Ok(&bare)),
        Finalize::Done { release: REEF }
    );
}

#[test]
fn an_osd_still_on_pacific_keeps_it_and_is_named() {
    // Ceph itself says OSD_UPGRADE_FINISHED here and accepts the command.
    let mixed = look(
        "versions_osds_mixed",
        "osd_dump_all_pacific",
        "osd_metadata_osds_mixed",
    );
    let verdict = finalize("reef", Ok(&mixed));
    assert_eq!(reason(&verdict), "OsdsOlder");
    let Finalize::Refused { message, .. } = verdict else {
        unreachable!()
    };
    assert!(message.contains("osd.1 last ran pacific (16)"), "{message}");
    assert!(!message.contains("osd.0"), "{message}");
}

#[test]
fn a_down_osd_counts_by_what_it_last_ran_and_one_that_never_reported_too() {
    let mut all_reef = look(
        "versions_all_reef",
        "osd_dump_all_reef_before_finalize",
        "osd_metadata_all_reef",
    );
    all_reef.osds.insert(OsdId(7), None);
    let Finalize::Refused { reason, message } = finalize("reef", Ok(&all_reef)) else {
        panic!("raised with osd.7 unknown");
    };
    assert_eq!(reason, "OsdsOlder");
    assert!(
        message.contains("osd.7 never reported a release"),
        "{message}"
    );
}

#[test]
fn monitors_on_pacific_keep_it() {
    let pacific = look(
        "versions_all_pacific",
        "osd_dump_all_pacific",
        "osd_metadata_all_pacific",
    );
    assert_eq!(reason(&finalize("reef", Ok(&pacific))), "MonitorsOlder");
}

#[test]
fn a_name_that_is_no_release_or_no_answer_is_said() {
    let pacific = look(
        "versions_all_pacific",
        "osd_dump_all_pacific",
        "osd_metadata_all_pacific",
    );
    assert_eq!(reason(&finalize("reeef", Ok(&pacific))), "NotARelease");
    assert_eq!(
        reason(&finalize("reef", Err("timed out"))),
        "CephUnanswered"
    );
}

#[test]
fn many_older_osds_are_named_ten_at_most() {
    let mut many = look(
        "versions_all_reef",
        "osd_dump_all_reef_before_finalize",
        "osd_metadata_all_reef",
    );
    for id in 10..25 {
        many.osds.insert(OsdId(id), Some(Release::PACIFIC));
    }
    let Finalize::Refused { message, .. } = finalize("reef", Ok(&many)) else {
        panic!("raised");
    };
    assert!(message.contains("and 5 more"), "{message}");
}

/// A CephOSD with `spec.finalizeAfterSeconds: soak` (None: unset) whose OSDs all run
/// `running` past `require` since second 1000.
fn soaking(soak: Option<i64>, running: &str, require: &str) -> CephOsd {
    let mut cr = crate::testing::CephOsdBuilder::new("osds")
        .build()
        .expect("a CephOSD");
    cr.spec.finalize_after_seconds = soak;
    cr.status = Some(crate::crd::CephOsdStatus {
        releases: Some(crate::crd::ReleasesStatus {
            running: [(running.to_owned(), 3)].into(),
            require_osd_release: Some(require.to_owned()),
            upgraded_since: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                second(1000),
            )),
            ..crate::crd::ReleasesStatus::default()
        }),
        ..crate::crd::CephOsdStatus::default()
    });
    cr
}

fn second(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("a time")
}

#[test]
fn an_automatic_finalize_asks_for_the_release_once_the_soak_is_over() {
    let cr = soaking(Some(600), "reef", "pacific");
    assert_eq!(auto_finalize_due(&cr), Some(second(1600)));
    assert_eq!(requested_release(&cr, second(1599)), None, "still soaking");
    assert_eq!(
        requested_release(&cr, second(1600)).as_deref(),
        Some("reef")
    );
    // Opted out: only an admin's request counts.
    let manual = soaking(None, "reef", "pacific");
    assert_eq!(auto_finalize_due(&manual), None);
    assert_eq!(requested_release(&manual, second(9999)), None);
    let mut asked = manual;
    asked
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(labels::FINALIZE_RELEASE.to_owned(), "reef".to_owned());
    assert_eq!(
        requested_release(&asked, second(0)).as_deref(),
        Some("reef")
    );
    // Nothing past require_osd_release: the request stands, done.
    let done = soaking(Some(0), "reef", "reef");
    assert_eq!(
        requested_release(&done, second(9999)).as_deref(),
        Some("reef")
    );
}
