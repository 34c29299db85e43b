//! `status.releases`, pure: the Ceph releases a release upgrade involves, as Ceph last said
//! them. Each part is read at its own pace and kept until read again: the OSD map (every
//! reconcile with Ceph) gives `require_osd_release`; the template's image reports its release
//! through its pre-pull pods (kept for that template); the OSDs' releases come from `osd
//! metadata`, read at each rollout step's question, each finalize look, and while an upgrade
//! is under way as a step ends and every 30 s.

use crate::ceph::{OsdDump, OsdId, Release};
use crate::crd::ReleasesStatus;
use crate::plan::gate::{CephInput, CephView};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;

/// The name `status.releases` uses for `release` (its major version when Ceph has no name
/// for it here).
fn label(release: Release) -> String {
    release
        .name()
        .map_or_else(|| release.0.to_string(), str::to_owned)
}

/// The release `status.releases` names so (the inverse of `label`).
fn unlabel(name: &str) -> Option<Release> {
    Release::from_name(name).or_else(|| name.parse().ok().map(Release))
}

/// What says an OSD never reported a release.
const UNKNOWN: &str = "unknown";

/// What this reconcile read of the releases.
pub(crate) struct ReleasesRead<'a> {
    /// The status before.
    pub previous: Option<&'a ReleasesStatus>,
    /// The template's hash now.
    pub template_hash: &'a str,
    /// The release the template's image reported, when a pre-pull pod did.
    pub image: Option<Release>,
    /// Each OSD's last reported release, when `osd metadata` was read (None: not read).
    pub osds: Option<BTreeMap<OsdId, Option<Release>>>,
    /// The OSD map, when it was read (its `require_osd_release`).
    pub osd_map: Option<&'a OsdDump>,
    /// This CephOSD's OSD ids.
    pub own: Vec<OsdId>,
    /// When this reconcile planned (an `upgradedSince` that starts now).
    pub now: Timestamp,
}

/// The OSDs' releases `view` carries: those of the gate's answer or of the finalize look.
pub(crate) fn osd_releases_read(view: &CephView) -> Option<BTreeMap<OsdId, Option<Release>>> {
    if let CephInput::Answered(answer) = &view.input {
        if let Some(releases) = &answer.releases {
            return Some(releases.iter().map(|(id, r)| (*id, Some(*r))).collect());
        }
    }
    match &view.release_look {
        Some(Ok(look)) if !look.osds.is_empty() => Some(look.osds.clone()),
        _ => None,
    }
}

/// `status.releases` after this reconcile (None: nothing is known of any release).
pub(crate) fn releases_status(read: &ReleasesRead<'_>) -> Option<ReleasesStatus> {
    let previous = read.previous.cloned().unwrap_or_default();
    let running = match &read.osds {
        Some(osds) => {
            let mut running: BTreeMap<String, i64> = BTreeMap::new();
            for id in &read.own {
                let release = osds.get(id).copied().flatten();
                *running
                    .entry(release.map_or_else(|| UNKNOWN.to_owned(), label))
                    .or_default() += 1;
            }
            running
        }
        None => previous.running,
    };
    let kept_target = (previous.target_template_hash.as_deref() == Some(read.template_hash))
        .then_some(previous.target)
        .flatten();
    let target = read.image.map(label).or(kept_target);
    let require_osd_release = match read.osd_map {
        Some(map) => map.require_osd_release.map(label),
        None => previous.require_osd_release,
    };
    let rollback_possible =
        rollback_possible(&running, target.as_deref(), require_osd_release.as_deref());
    let upgraded_since = upgraded_to(&running, require_osd_release.as_deref())
        .map(|_| previous.upgraded_since.unwrap_or(Time(read.now)));
    let status = ReleasesStatus {
        upgraded_since,
        target_template_hash: target.as_ref().map(|_| read.template_hash.to_owned()),
        running,
        target,
        require_osd_release,
        rollback_possible,
    };
    (status != ReleasesStatus::default()).then_some(status)
}

/// The one release every OSD of `running` runs, when it is past `require` (an upgrade that
/// waits for its finalize).
pub(crate) fn upgraded_to(
    running: &BTreeMap<String, i64>,
    require: Option<&str>,
) -> Option<Release> {
    let require = unlabel(require?)?;
    let [only] = running.keys().collect::<Vec<_>>()[..] else {
        return None;
    };
    unlabel(only).filter(|r| *r > require)
}

/// Whether a release upgrade is under way by `status`: the template's image reports a
/// release past `require_osd_release`, or this CephOSD's OSDs run more than one release.
/// While it is, the OSDs' releases are read now and then beside the steps' questions, so
/// the status follows the last OSDs to boot.
pub(crate) fn upgrade_under_way(status: Option<&ReleasesStatus>) -> bool {
    let Some(status) = status else {
        return false;
    };
    let past_require = status
        .target
        .as_deref()
        .and_then(unlabel)
        .zip(status.require_osd_release.as_deref().and_then(unlabel))
        .is_some_and(|(target, require)| target > require);
    past_require || status.running.len() > 1
}

/// Whether the template can go back to the release the OSDs run: an upgrade to a `target`
/// past `require` is under way and no OSD runs a release past `require` (none opened its
/// data with the new one). Without such an upgrade no older release boots; an OSD on a newer
/// release cannot go back. None: it cannot be told (a release unknown).
fn rollback_possible(
    running: &BTreeMap<String, i64>,
    target: Option<&str>,
    require: Option<&str>,
) -> Option<bool> {
    let require = unlabel(require?)?;
    if running.is_empty() {
        return None;
    }
    let mut none_past = true;
    for name in running.keys() {
        none_past &= unlabel(name)? <= require;
    }
    let upgrading = target.and_then(unlabel).is_some_and(|t| t > require);
    Some(upgrading && none_past)
}

#[cfg(test)]
mod tests;
