//! What a disk replacement asks Ceph beside the reconcile's look, each bounded (without a mgr
//! a question hangs): the `safe-to-destroy` its destroy is made on, asked after the OSD map it
//! is tied to was read, for the replacements in `Destroying` whose OSD that map shows down and
//! not destroyed yet; and the PGs of the new daemon (`pg ls-by-osd`) of one in `Backfilling`,
//! whose reports tell whether the mgr's PG states already count it.

use crate::ceph::{BackfillLook, CephClient, DestroyLook, OsdDump, OsdId};
use crate::crd::replacement::ReplacementPhase;
use crate::crd::CephOsd;
use std::time::Duration;

/// How long each question may take.
const DESTROY_LOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// The look for `cr`'s replacements about to destroy, against `osds` (the OSD map this
/// reconcile read); None when none is.
pub(crate) async fn look_before_destroy(
    ceph: &dyn CephClient,
    cr: &CephOsd,
    osds: Option<&OsdDump>,
) -> Option<DestroyLook> {
    let osds = osds?;
    let records = &cr.status.as_ref()?.replacements;
    let ids: Vec<OsdId> = (records.iter())
        .filter(|r| r.phase == ReplacementPhase::Destroying)
        .map(|r| OsdId(r.id))
        .filter(|id| {
            osds.osds
                .get(id)
                .is_some_and(|o| !o.up && !o.state.iter().any(|s| s == "destroyed"))
        })
        .collect();
    if ids.is_empty() {
        return None;
    }
    let answer = match tokio::time::timeout(DESTROY_LOOK_TIMEOUT, ceph.safe_to_destroy(&ids)).await
    {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!(
            "`osd safe-to-destroy` did not answer within {}s",
            DESTROY_LOOK_TIMEOUT.as_secs()
        )),
    };
    Some(DestroyLook {
        epoch: osds.epoch,
        answer,
    })
}

/// The PGs of the up OSD of `cr`'s replacement in `Backfilling` (the first one), against `osds`
/// (the OSD map this reconcile read); None when none is.
pub(crate) async fn look_at_backfill(
    ceph: &dyn CephClient,
    cr: &CephOsd,
    osds: Option<&OsdDump>,
) -> Option<BackfillLook> {
    let osds = osds?;
    let records = &cr.status.as_ref()?.replacements;
    let id = (records.iter())
        .filter(|r| r.phase == ReplacementPhase::Backfilling)
        .map(|r| OsdId(r.id))
        .find(|id| osds.osds.get(id).is_some_and(|o| o.up))?;
    let pgs = match tokio::time::timeout(DESTROY_LOOK_TIMEOUT, ceph.pgs_on_osd(id)).await {
        Ok(Ok(pgs)) => Ok(pgs),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!(
            "`pg ls-by-osd` did not answer within {}s",
            DESTROY_LOOK_TIMEOUT.as_secs()
        )),
    };
    Some(BackfillLook { id, pgs })
}
