//! The release rules on answers recorded from real Pacific and Reef daemons
//! (`tests/data/ceph/`): an upgrade as an admin runs it, stage by stage.

use super::*;
use crate::ceph::test_data::{fixture, healthy_status, ids};
use crate::ceph::{parse_osd_dump, parse_osd_metadata, parse_versions};

const PACIFIC: Release = Release::PACIFIC;
const REEF: Release = Release::REEF;

/// A recorded stage of the upgrade: `ceph versions`, the osdmap's `require_osd_release` and
/// what each OSD reported.
struct Stage {
    daemons: DaemonReleases,
    require: Option<Release>,
    osds: BTreeMap<OsdId, Release>,
    up: BTreeSet<OsdId>,
    status: ClusterStatus,
}

impl Stage {
    fn recorded(versions: &str, dump: &str, metadata: &str) -> Self {
        let metadata = parse_osd_metadata(&fixture(metadata)).unwrap();
        let dump = parse_osd_dump(&fixture(dump)).unwrap();
        Self {
            daemons: parse_versions(&fixture(versions)).unwrap(),
            require: dump.require_osd_release,
            up: (dump.osds.values())
                .filter(|o| o.up)
                .map(|o| o.id)
                .collect(),
            osds: (metadata.values())
                .filter_map(|m| Some((m.id, m.release()?)))
                .collect(),
            status: healthy_status(),
        }
    }

    fn facts(&self) -> ReleaseFacts<'_> {
        ReleaseFacts {
            daemons: Some(&self.daemons),
            require_osd_release: self.require,
            osds: &self.osds,
            up: &self.up,
            status: &self.status,
        }
    }

    fn refusal(&self, target: Target, step: &[u32]) -> Option<ReleaseRefusal> {
        refusal(target, &ids(step), &BTreeSet::new(), &self.facts())
    }
}

fn all_pacific() -> Stage {
    Stage::recorded(
        "versions_all_pacific",
        "osd_dump_all_pacific",
        "osd_metadata_all_pacific",
    )
}

fn mons_on_reef() -> Stage {
    Stage::recorded(
        "versions_mons_reef_osds_pacific",
        "osd_dump_all_pacific",
        "osd_metadata_all_pacific",
    )
}

/// osd.0 on Reef, osd.1 still on Pacific.
fn osds_mixed() -> Stage {
    Stage::recorded(
        "versions_osds_mixed",
        "osd_dump_all_pacific",
        "osd_metadata_osds_mixed",
    )
}

fn finalized() -> Stage {
    Stage::recorded(
        "versions_all_reef",
        "osd_dump_after_finalize",
        "osd_metadata_all_reef",
    )
}

#[test]
fn the_recordings_say_what_each_stage_runs() {
    assert_eq!(all_pacific().osds.values().max(), Some(&PACIFIC));
    assert_eq!(mons_on_reef().daemons.mon, BTreeMap::from([(REEF, 1)]));
    assert_eq!(osds_mixed().osds.get(&OsdId(0)), Some(&REEF));
    assert_eq!(osds_mixed().osds.get(&OsdId(1)), Some(&PACIFIC));
    assert_eq!(finalized().require, Some(REEF));
}

#[test]
fn reef_while_the_monitors_run_pacific_is_refused_naming_them() {
    let refused = all_pacific().refusal(Target::Image(REEF), &[0]).unwrap();
    assert_eq!(refused.reason(), "MonitorsOlder");
    let said = refused.to_string();
    assert!(said.contains("1 on pacific (16)") && said.contains("upgrade the monitors first"));
}

#[test]
fn reef_while_the_manager_runs_pacific_is_refused() {
    let mut stage = mons_on_reef();
    stage.daemons.mgr = BTreeMap::from([(PACIFIC, 1)]);
    let refused = stage.refusal(Target::Image(REEF), &[0]).unwrap();
    assert_eq!(refused.reason(), "ManagersOlder");
}

#[test]
fn reef_once_the_monitors_and_managers_run_it_goes() {
    let stage = mons_on_reef();
    assert_eq!(stage.refusal(Target::Image(REEF), &[0]), None);
    assert_eq!(stage.refusal(Target::Image(REEF), &[0, 1]), None);
    // The rest of the rollout, the target learnt from the canary's OSD.
    let mixed = osds_mixed();
    let target = target_release(None, &ids(&[0]), &ids(&[0, 1]), &mixed.osds);
    assert_eq!(target, Target::Osds(REEF));
    assert_eq!(mixed.refusal(target, &[1]), None);
}

#[test]
fn a_template_with_the_same_release_needs_no_monitor_upgrade() {
    let stage = all_pacific();
    assert_eq!(stage.refusal(Target::Image(PACIFIC), &[0, 1]), None);
    let mut versions_unknown = all_pacific();
    versions_unknown.daemons = DaemonReleases::default();
    let facts = ReleaseFacts {
        daemons: None,
        ..versions_unknown.facts()
    };
    assert_eq!(
        refusal(Target::Image(PACIFIC), &ids(&[0]), &BTreeSet::new(), &facts),
        None
    );
    assert_eq!(
        refusal(Target::Image(REEF), &ids(&[0]), &BTreeSet::new(), &facts),
        Some(ReleaseRefusal::VersionsUnknown { target: REEF })
    );
}

#[test]
fn back_to_pacific_is_refused_for_osds_that_ran_reef_and_allowed_for_the_others() {
    let mixed = osds_mixed();
    let refused = mixed.refusal(Target::Image(PACIFIC), &[0]).unwrap();
    assert_eq!(
        refused,
        ReleaseRefusal::Downgrade {
            target: PACIFIC,
            from: REEF,
            ids: vec![OsdId(0)]
        }
    );
    assert!(refused.to_string().contains("osd.0 ran reef (18)"));
    assert_eq!(mixed.refusal(Target::Image(PACIFIC), &[1]), None);
}

#[test]
fn after_finalize_an_older_release_is_refused_on_every_osd() {
    let stage = finalized();
    let refused = stage.refusal(Target::Image(PACIFIC), &[0]).unwrap();
    assert_eq!(refused.reason(), "Downgrade");
    assert!(refused
        .to_string()
        .contains("require_osd_release reef (18)"));
    // Even an OSD whose recorded release is older (its data was recreated).
    let mut stage = finalized();
    stage.osds.insert(OsdId(0), PACIFIC);
    assert_eq!(
        stage
            .refusal(Target::Image(PACIFIC), &[0])
            .map(|r| r.reason()),
        Some("Downgrade")
    );
}

#[test]
fn more_than_two_releases_ahead_is_refused() {
    let mut stage = mons_on_reef();
    let squid_and_later = Release(20);
    stage.daemons.mon = BTreeMap::from([(squid_and_later, 1)]);
    stage.daemons.mgr = BTreeMap::from([(squid_and_later, 1)]);
    let refused = stage.refusal(Target::Image(squid_and_later), &[0]).unwrap();
    assert_eq!(refused.reason(), "TooFarAhead");
    assert!(refused.to_string().contains("require_osd_release pacific"));
    // Past the step's own OSDs, with the cluster's flag already raised.
    stage.require = Some(REEF);
    let refused = stage.refusal(Target::Image(squid_and_later), &[0]).unwrap();
    assert_eq!(refused.reason(), "TooFarAhead");
    assert!(refused
        .to_string()
        .contains("OSDs of the step run, pacific"));
}

#[test]
fn a_release_change_waits_out_health_err() {
    let mut stage = mons_on_reef();
    stage.status.health = "HEALTH_ERR".into();
    stage
        .status
        .health_checks
        .insert("PG_DAMAGED".into(), "1 pg inconsistent".into());
    let refused = stage.refusal(Target::Image(REEF), &[0]).unwrap();
    assert_eq!(refused.reason(), "ClusterUnhealthy");
    assert!(refused.to_string().contains("PG_DAMAGED"));
    // Not a release change: the gate's own rules judge the cluster.
    assert_eq!(stage.refusal(Target::Image(PACIFIC), &[0]), None);
}

#[test]
fn without_a_reported_target_only_the_canary_goes() {
    let mut stage = all_pacific();
    assert_eq!(stage.refusal(Target::Unknown, &[0]), None);
    // The canary osd.0 restarted on the template, not up yet.
    stage.up.remove(&OsdId(0));
    let refused = refusal(Target::Unknown, &ids(&[1]), &ids(&[0]), &stage.facts()).unwrap();
    assert_eq!(
        refused,
        ReleaseRefusal::TargetNotReported {
            waiting: vec![OsdId(0)]
        }
    );
    assert!(refused.to_string().contains("waiting for osd.0"));
    // Up, it has reported.
    stage.up.insert(OsdId(0));
    assert_eq!(
        refusal(Target::Unknown, &ids(&[1]), &ids(&[0]), &stage.facts()),
        None
    );
}

#[test]
fn ceph_versions_is_asked_only_when_releases_differ() {
    let pacific = BTreeMap::from([(OsdId(0), PACIFIC), (OsdId(1), PACIFIC)]);
    assert!(!needs_versions(None, &pacific));
    assert!(!needs_versions(Some(PACIFIC), &pacific));
    assert!(needs_versions(Some(REEF), &pacific));
    assert!(needs_versions(None, &all_pacific_but_one()));
    assert!(!needs_versions(None, &BTreeMap::new()));
}

fn all_pacific_but_one() -> BTreeMap<OsdId, Release> {
    BTreeMap::from([(OsdId(0), REEF), (OsdId(1), PACIFIC)])
}

#[test]
fn the_target_is_the_image_s_report_else_the_newest_up_osd_on_the_template() {
    let osds = BTreeMap::from([(OsdId(0), REEF), (OsdId(1), PACIFIC), (OsdId(2), PACIFIC)]);
    assert_eq!(
        target_release(Some(PACIFIC), &ids(&[0]), &ids(&[0]), &osds),
        Target::Image(PACIFIC)
    );
    assert_eq!(
        target_release(None, &ids(&[0, 1]), &ids(&[0, 1]), &osds),
        Target::Osds(REEF)
    );
    // A down OSD's metadata is its previous daemon's.
    assert_eq!(
        target_release(None, &ids(&[0]), &ids(&[1]), &osds),
        Target::Unknown
    );
    assert_eq!(
        target_release(None, &BTreeSet::new(), &ids(&[0]), &osds),
        Target::Unknown
    );
}
