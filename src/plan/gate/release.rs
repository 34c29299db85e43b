//! Ceph's release rules for a rollout step, pure: whether the OSDs of a step may be restarted
//! on the release the new template runs (`Target`). Ceph's own rules: monitors and managers
//! run the target release (or a later one) before any OSD does; an OSD boots at most two
//! releases past the cluster's `require_osd_release` and never below it; a jump of more than
//! two releases is not supported; an OSD whose data a newer release opened cannot go back to an
//! older one (its store was converted, finalized or not). Every refusal comes before any stop:
//! it names its reason and clears once the cause is fixed. `ReleaseLook` is what a finalize
//! request reads (its rule is the planner's `rules::finalize`).

use crate::ceph::{osd_list, ClusterStatus, DaemonReleases, OsdId, Release};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Releases more than this apart cannot be crossed in one upgrade (nor boot past
/// `require_osd_release`).
const MAX_RELEASE_STEPS: i64 = 2;

/// The release the new template runs, as far as it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Its image's `ceph-osd --version` (the pre-pull pod's report).
    Image(Release),
    /// What the up OSDs already on the template report (`osd metadata`).
    Osds(Release),
    /// Neither yet: the first update domain of the template is its canary.
    Unknown,
}

impl Target {
    pub(crate) fn release(self) -> Option<Release> {
        match self {
            Self::Image(r) | Self::Osds(r) => Some(r),
            Self::Unknown => None,
        }
    }
}

/// What Ceph says of the releases around a step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReleaseFacts<'a> {
    /// `ceph versions` (None: not answered).
    pub daemons: Option<&'a DaemonReleases>,
    /// The osdmap's `require_osd_release`.
    pub require_osd_release: Option<Release>,
    /// The release each OSD's daemon last reported (`osd metadata`: it outlives the daemon).
    pub osds: &'a BTreeMap<OsdId, Release>,
    /// The OSDs up in the osdmap.
    pub up: &'a BTreeSet<OsdId>,
    pub status: &'a ClusterStatus,
}

/// What Ceph said for a finalize request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseLook {
    /// `ceph versions`.
    pub daemons: DaemonReleases,
    /// Every OSD in the osdmap, with the release it last ran (`osd metadata`; None: it never
    /// reported one).
    pub osds: BTreeMap<OsdId, Option<Release>>,
    /// The osdmap's `require_osd_release`.
    pub require_osd_release: Option<Release>,
}

/// Why a step is not started on the target release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReleaseRefusal {
    /// A monitor runs an older release than the target.
    MonitorsOlder {
        target: Release,
        older: BTreeMap<Release, u32>,
    },
    /// A manager runs an older release than the target.
    ManagersOlder {
        target: Release,
        older: BTreeMap<Release, u32>,
    },
    /// More than two releases past `require_osd_release`, or past what an OSD of the step runs:
    /// its daemon would not boot.
    TooFarAhead {
        target: Release,
        from: Release,
        what: &'static str,
    },
    /// Below `require_osd_release` (the upgrade was finalized: never boots), or below what
    /// OSDs of the step have run (their data was opened by the newer release).
    Downgrade {
        target: Release,
        from: Release,
        ids: Vec<OsdId>,
    },
    /// A release change on a cluster in `HEALTH_ERR`.
    ClusterUnhealthy { target: Release, checks: String },
    /// `ceph versions` was not answered: no release change starts without it.
    VersionsUnknown { target: Release },
    /// The canary's OSDs run the template but are not up to report their release yet.
    TargetNotReported { waiting: Vec<OsdId> },
}

impl ReleaseRefusal {
    /// The `CephGate` condition's reason.
    pub const fn reason(&self) -> &'static str {
        match self {
            Self::MonitorsOlder { .. } => "MonitorsOlder",
            Self::ManagersOlder { .. } => "ManagersOlder",
            Self::TooFarAhead { .. } => "TooFarAhead",
            Self::Downgrade { .. } => "Downgrade",
            Self::ClusterUnhealthy { .. } => "ClusterUnhealthy",
            Self::VersionsUnknown { .. } => "CephVersionsUnknown",
            Self::TargetNotReported { .. } => "ReleaseNotReported",
        }
    }
}

fn counts(releases: &BTreeMap<Release, u32>) -> String {
    (releases.iter())
        .map(|(release, n)| format!("{n} on {release}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for ReleaseRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MonitorsOlder { target, older } => write!(
                f,
                "the template runs {target} but monitors run older releases ({}): upgrade \
                 the monitors first",
                counts(older)
            ),
            Self::ManagersOlder { target, older } => write!(
                f,
                "the template runs {target} but managers run older releases ({}): upgrade \
                 the managers first",
                counts(older)
            ),
            Self::TooFarAhead { target, from, what } => write!(
                f,
                "the template runs {target}, more than {MAX_RELEASE_STEPS} releases past \
                 {what} {from}: its OSDs would not boot"
            ),
            Self::Downgrade { target, from, ids } if ids.is_empty() => write!(
                f,
                "the template runs {target}, older than the cluster's require_osd_release \
                 {from}: an OSD of it never boots (the upgrade was finalized)"
            ),
            Self::Downgrade { target, from, ids } => write!(
                f,
                "the template runs {target} but {} ran {from}: an older release cannot open \
                 data a newer one opened",
                osd_list(ids)
            ),
            Self::ClusterUnhealthy { target, checks } => write!(
                f,
                "the cluster is HEALTH_ERR ({checks}): no OSD is moved to {target} until it \
                 is not"
            ),
            Self::VersionsUnknown { target } => write!(
                f,
                "`ceph versions` was not answered: no OSD is moved to {target} without it"
            ),
            Self::TargetNotReported { waiting } => write!(
                f,
                "the template's release is learnt from its first update domain: waiting for \
                 {} to report it",
                osd_list(waiting)
            ),
        }
    }
}

/// The target release of a template: its image's report, else what the up OSDs of the keys
/// already on it (`updated`) report (the newest of them), else unknown.
pub(crate) fn target_release(
    image: Option<Release>,
    updated: &BTreeSet<OsdId>,
    up: &BTreeSet<OsdId>,
    osds: &BTreeMap<OsdId, Release>,
) -> Target {
    if let Some(release) = image {
        return Target::Image(release);
    }
    (updated.iter())
        .filter(|id| up.contains(id))
        .filter_map(|id| osds.get(id).copied())
        .max()
        .map_or(Target::Unknown, Target::Osds)
}

/// Whether the OSDs `step` may be restarted on `target`, given the keys' OSDs already on the
/// template (`updated`) and what Ceph says (`facts`); the first refusal, else None. An unknown
/// target lets only the canary go: no OSD of the template is yet to report it (an up OSD
/// that reports no version, which Ceph's daemons do not do, has nothing to wait for).
pub(crate) fn refusal(
    target: Target,
    step: &BTreeSet<OsdId>,
    updated: &BTreeSet<OsdId>,
    facts: &ReleaseFacts<'_>,
) -> Option<ReleaseRefusal> {
    let Some(target) = target.release() else {
        let waiting: Vec<OsdId> = (updated.iter())
            .filter(|id| !facts.up.contains(id))
            .copied()
            .collect();
        return (!waiting.is_empty()).then_some(ReleaseRefusal::TargetNotReported { waiting });
    };
    let ran: BTreeMap<OsdId, Release> = (step.iter())
        .filter_map(|id| Some((*id, *facts.osds.get(id)?)))
        .collect();
    if let Some(refusal) = downgrade(target, facts.require_osd_release, &ran) {
        return Some(refusal);
    }
    let changes = ran.values().any(|r| *r != target);
    if !changes {
        return None;
    }
    let Some(daemons) = facts.daemons else {
        return Some(ReleaseRefusal::VersionsUnknown { target });
    };
    let older = |of: &BTreeMap<Release, u32>| -> BTreeMap<Release, u32> {
        (of.iter())
            .filter(|(r, _)| **r < target)
            .map(|(r, n)| (*r, *n))
            .collect()
    };
    let mons = older(&daemons.mon);
    if !mons.is_empty() {
        return Some(ReleaseRefusal::MonitorsOlder {
            target,
            older: mons,
        });
    }
    let mgrs = older(&daemons.mgr);
    if !mgrs.is_empty() {
        return Some(ReleaseRefusal::ManagersOlder {
            target,
            older: mgrs,
        });
    }
    if let Some(refusal) = too_far(target, facts.require_osd_release, &ran) {
        return Some(refusal);
    }
    (facts.status.health == "HEALTH_ERR").then(|| ReleaseRefusal::ClusterUnhealthy {
        target,
        checks: (facts.status.health_checks.keys())
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Whether `ceph versions` is needed to judge a step: the template's image reports another
/// release than an OSD ran, or the OSDs ran more than one release (`osds`, every OSD's).
pub(crate) fn needs_versions(image: Option<Release>, osds: &BTreeMap<OsdId, Release>) -> bool {
    let mut releases: BTreeSet<Release> = osds.values().copied().collect();
    releases.extend(image);
    releases.len() > 1
}

/// Below `require_osd_release`, or below what an OSD of the step ran.
fn downgrade(
    target: Release,
    require: Option<Release>,
    ran: &BTreeMap<OsdId, Release>,
) -> Option<ReleaseRefusal> {
    if let Some(require) = require.filter(|r| target < *r) {
        return Some(ReleaseRefusal::Downgrade {
            target,
            from: require,
            ids: Vec::new(),
        });
    }
    let newest = ran.values().copied().max().filter(|r| target < *r)?;
    Some(ReleaseRefusal::Downgrade {
        target,
        from: newest,
        ids: (ran.iter())
            .filter(|(_, r)| target < **r)
            .map(|(id, _)| *id)
            .collect(),
    })
}

/// More than two releases past `require_osd_release` or past the oldest OSD of the step.
fn too_far(
    target: Release,
    require: Option<Release>,
    ran: &BTreeMap<OsdId, Release>,
) -> Option<ReleaseRefusal> {
    if let Some(require) = require.filter(|r| r.steps_to(target) > MAX_RELEASE_STEPS) {
        return Some(ReleaseRefusal::TooFarAhead {
            target,
            from: require,
            what: "the cluster's require_osd_release",
        });
    }
    let oldest = ran.values().copied().min()?;
    (oldest.steps_to(target) > MAX_RELEASE_STEPS).then_some(ReleaseRefusal::TooFarAhead {
        target,
        from: oldest,
        what: "the release OSDs of the step run,",
    })
}

#[cfg(test)]
mod tests;
