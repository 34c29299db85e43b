//! Finalizing a release upgrade, pure: an admin asks (the CephOSD's `finalize-release`
//! annotation, `kubectl ceph-osd finalize`) for the cluster's `require_osd_release` to be
//! raised to a release. It is raised only once every monitor and every OSD *of the Ceph
//! cluster* (any CephOSD's, down ones by what they last ran) reports that release or a later
//! one: Ceph's own health check and the monitor's command accept it earlier (an older OSD
//! advertises the newer release's feature bit), and once raised it never goes back.

use crate::ceph::{OsdId, Release};
use crate::crd::CephOsd;
use crate::labels;
use crate::plan::gate::release::ReleaseLook;
use crate::plan::gate::{CephInput, CephView, GateOff};
use crate::plan::rules::releases::upgraded_to;
use crate::plan::says::actions::Action;
use crate::plan::says::conditions::{ConditionReason, StatedCondition};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;

/// At most this many OSDs are named in a refusal.
const NAMED_OSDS: usize = 10;

/// What becomes of a finalize request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Finalize {
    /// Raise `require_osd_release` to `release` now.
    Raise { release: Release },
    /// It is at `release` (or past it): done.
    Done { release: Release },
    /// Not now (`reason` for the condition, `message` naming what is missing).
    Refused {
        reason: &'static str,
        message: String,
    },
}

impl Finalize {
    /// The action it takes, if any.
    pub(crate) fn action(&self) -> Option<Action> {
        match self {
            Self::Raise { release } => Some(Action::RequireOsdRelease { release: *release }),
            _ => None,
        }
    }
}

/// The release the CephOSD `cr` asks to finalize at `now`: its annotation's; else, with
/// `spec.finalizeAfterSeconds`, the one release all its OSDs run past `require_osd_release`
/// once they have run it that long (`status.releases.upgradedSince`), and while none waits
/// the release required already (the request stands, done).
pub(crate) fn requested_release(cr: &CephOsd, now: Timestamp) -> Option<String> {
    if let Some(asked) = cr.annotations().get(labels::FINALIZE_RELEASE) {
        return Some(asked.clone());
    }
    cr.spec.finalize_after_seconds?;
    let releases = cr.status.as_ref()?.releases.as_ref()?;
    let require = releases.require_osd_release.as_deref();
    match upgraded_to(&releases.running, require) {
        Some(release) => (auto_finalize_due(cr).is_some_and(|due| now >= due))
            .then(|| release.name().map(str::to_owned))
            .flatten(),
        None => require.map(str::to_owned),
    }
}

/// When the automatic finalize of `cr` falls due: `spec.finalizeAfterSeconds` after its OSDs
/// all first ran a release past `require_osd_release` (None: it opted out, or none waits).
pub(crate) fn auto_finalize_due(cr: &CephOsd) -> Option<Timestamp> {
    let soak = cr.spec.finalize_after_seconds?;
    let since = cr
        .status
        .as_ref()?
        .releases
        .as_ref()?
        .upgraded_since
        .as_ref()?;
    since
        .0
        .checked_add(SignedDuration::from_secs(soak.max(0)))
        .ok()
}

/// The finalize the CephOSD `cr` asks for at `now` (`requested_release`), on `view`: None
/// when it asks for none.
pub(crate) fn finalize_request(cr: &CephOsd, view: &CephView, now: Timestamp) -> Option<Finalize> {
    let requested = &requested_release(cr, now)?;
    let look = match (&view.input, &view.release_look) {
        (CephInput::Off { why }, _) => Err(match why {
            GateOff::NotConfigured => "the operator has no Ceph configured (--ceph-conf)",
            GateOff::Skipped => "spec.cephGate is Skipped: Ceph is not looked at",
        }),
        (_, None) => Err("Ceph was not looked at in this reconcile"),
        (_, Some(Err(why))) => Err(why.as_str()),
        (_, Some(Ok(look))) => Ok(look),
    };
    Some(finalize(requested, look))
}

/// Whether `require_osd_release` is already at the `requested` release (or past it): the
/// request asks nothing more of Ceph.
pub(crate) fn is_done(requested: &str, require_osd_release: Option<Release>) -> bool {
    Release::from_name(requested)
        .zip(require_osd_release)
        .is_some_and(|(asked, now)| now >= asked)
}

/// The `Finalized` condition of `verdict`.
pub(crate) fn condition_of(verdict: &Finalize) -> StatedCondition {
    let (holds, reason, message) = match verdict {
        Finalize::Done { release } => (
            true,
            ConditionReason::ReleaseRequired,
            format!("require_osd_release is {release}: an older release never boots again"),
        ),
        Finalize::Raise { release } => (
            false,
            ConditionReason::RaisingRelease,
            format!("raising require_osd_release to {release}: every OSD and monitor runs it"),
        ),
        Finalize::Refused { reason, message } => (
            false,
            ConditionReason::NotFinalized(reason),
            message.clone(),
        ),
    };
    StatedCondition {
        holds,
        reason,
        message,
    }
}

fn refused(reason: &'static str, message: String) -> Finalize {
    Finalize::Refused { reason, message }
}

/// The request for `requested` (a release name) on Ceph's `look` (Err: why Ceph did not
/// answer).
pub(crate) fn finalize(requested: &str, look: Result<&ReleaseLook, &str>) -> Finalize {
    let Some(release) = Release::from_name(requested) else {
        return refused(
            "NotARelease",
            format!("{requested:?} is not the name of a Ceph release (e.g. reef)"),
        );
    };
    let look = match look {
        Ok(look) => look,
        Err(why) => return refused("CephUnanswered", format!("Ceph did not answer: {why}")),
    };
    if let Some(now) = look.require_osd_release.filter(|r| *r >= release) {
        return Finalize::Done { release: now };
    }
    if look.daemons.mon.is_empty() {
        return refused(
            "CephUnanswered",
            "`ceph versions` reports no monitor".to_owned(),
        );
    }
    let older_mons: u32 = (look.daemons.mon.iter())
        .filter(|(r, _)| **r < release)
        .map(|(_, n)| n)
        .sum();
    if older_mons > 0 {
        return refused(
            "MonitorsOlder",
            format!(
                "{older_mons} monitor(s) run a release older than {release}: upgrade them first"
            ),
        );
    }
    let older: Vec<(OsdId, Option<Release>)> = (look.osds.iter())
        .filter(|(_, r)| r.is_none_or(|r| r < release))
        .map(|(id, r)| (*id, *r))
        .collect();
    let daemons_older: u32 = (look.daemons.osd.iter())
        .filter(|(r, _)| **r < release)
        .map(|(_, n)| n)
        .sum();
    if !older.is_empty() || daemons_older > 0 {
        return refused("OsdsOlder", osds_older(release, &older, daemons_older));
    }
    Finalize::Raise { release }
}

/// `osd.1 last ran pacific (16), osd.4 never reported a release (and 3 more)`.
fn osds_older(release: Release, older: &[(OsdId, Option<Release>)], daemons: u32) -> String {
    let mut named: Vec<String> = (older.iter().take(NAMED_OSDS))
        .map(|(id, r)| match r {
            Some(r) => format!("{id} last ran {r}"),
            None => format!("{id} never reported a release"),
        })
        .collect();
    if older.len() > NAMED_OSDS {
        named.push(format!("and {} more", older.len() - NAMED_OSDS));
    }
    if named.is_empty() {
        named.push(format!("`ceph versions` counts {daemons} OSD(s) older"));
    }
    format!(
        "not every OSD of the Ceph cluster runs {release}: {}; once raised, an older one \
         never boots again",
        named.join(", ")
    )
}

#[cfg(test)]
mod tests;
