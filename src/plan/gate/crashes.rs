//! Crashes of the rollout's new daemons, pure: a crash report Ceph keeps as new (not archived)
//! of an OSD whose pod runs the current template, from after that pod was created, halts the
//! rollout: no further update domain stops (a step open goes on to its end). It goes on once
//! the admin archives the report (`ceph crash archive`) or changes the template (the crashed
//! pod is then out of date, replaced in its turn). Crashes of pods of an older template are
//! not the rollout's.

use crate::ceph::{CrashReport, OsdId};
use crate::crd::CephOsdStatus;
use crate::plan::observed::classify::ObservedPod;
use k8s_openapi::jiff::{SignedDuration, Timestamp, Unit};
use std::collections::BTreeMap;
use std::fmt;

/// Read Ceph's new crash reports at most this often while a rollout is under way, and look
/// again this soon while one halts it (an archive triggers no Kubernetes event).
pub(crate) const CRASH_LOOKS: SignedDuration = SignedDuration::from_secs(10);

/// Whether a CephOSD of `status` has a rollout under way whose new daemons' crashes matter:
/// pods wait to be replaced or to become Ready, or a rollout step is open.
pub(crate) fn crashes_matter(status: Option<&CephOsdStatus>) -> bool {
    status.is_some_and(|s| {
        s.out_of_date > 0
            || s.unready > 0
            || (s.ceph_step.as_ref()).is_some_and(|step| step.drain.is_none())
    })
}

/// The first crash that halts the rollout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CrashHalt {
    pub osd: OsdId,
    /// The crashed OSD's pod, described (`name (host:data)`).
    pub pod: String,
    pub crash_id: String,
    pub at: Timestamp,
}

impl fmt::Display for CrashHalt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.at.round(Unit::Second).unwrap_or(self.at);
        write!(
            f,
            "{} crashed at {at} running the current template in pod {} (Ceph's crash report \
             {id}): no further update domain stops. Read it with `ceph crash info {id}`; \
             change the template to roll a fix from here, or archive the report (`ceph crash \
             archive {id}`) to go on",
            self.osd,
            self.pod,
            id = self.crash_id
        )
    }
}

/// The crash among `crashes` that halts the rollout, if any: the earliest report of an OSD
/// whose live pod runs the current template and was created before the crash. An OSD's pod
/// is found through the ids its key runs (`osd_ids`, `host:data` → ids).
pub(crate) fn crash_halt(
    pods: &[ObservedPod],
    osd_ids: &BTreeMap<String, Vec<u32>>,
    crashes: &[CrashReport],
) -> Option<CrashHalt> {
    let current = pods.iter().filter(|p| p.runs_the_template());
    let mut by_osd: BTreeMap<u32, &ObservedPod> = BTreeMap::new();
    for pod in current {
        let Some(key) = &pod.key else { continue };
        for id in osd_ids.get(&key.to_string()).into_iter().flatten() {
            by_osd.insert(*id, pod);
        }
    }
    crashes
        .iter()
        .filter_map(|crash| {
            let osd = crash.osd()?;
            let pod = by_osd.get(&osd.0)?;
            let created = pod.created?;
            (crash.at >= created).then(|| CrashHalt {
                osd,
                pod: pod.describe(),
                crash_id: crash.id.clone(),
                at: crash.at,
            })
        })
        .min_by(|a, b| (a.at, &a.crash_id).cmp(&(b.at, &b.crash_id)))
}

#[cfg(test)]
mod tests;
