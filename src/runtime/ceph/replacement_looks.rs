//! What a disk replacement asks Ceph beside the reconcile's look, each bounded (without a mgr
//! a question hangs): the `safe-to-destroy` its destroy is made on, asked after the OSD map it
//! is tied to was read, for the replacements in `Destroying` whose OSD that map shows down and
//! not destroyed yet; and the PGs of the new daemon (`pg ls-by-osd`) of one in `Backfilling`,
//! whose reports tell whether the mgr's PG states already count it.

use crate::ceph::{BackfillLook, CephClient, CephError, DestroyLook, OsdDump, OsdId};
use crate::crd::replacement::ReplacementPhase;
use crate::crd::CephOsd;
use std::time::Duration;

/// How long each question may take.
const LOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// `asked`'s answer within `LOOK_TIMEOUT`, or why none (`command` names it).
async fn bounded<T>(
    command: &str,
    asked: impl std::future::Future<Output = Result<T, CephError>>,
) -> Result<T, String> {
    match tokio::time::timeout(LOOK_TIMEOUT, asked).await {
        Ok(answer) => answer.map_err(|error| error.to_string()),
        Err(_) => Err(format!(
            "`{command}` did not answer within {}s",
            LOOK_TIMEOUT.as_secs()
        )),
    }
}

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
                .is_some_and(|o| !o.up && !o.is_destroyed())
        })
        .collect();
    if ids.is_empty() {
        return None;
    }
    let answer = bounded("osd safe-to-destroy", ceph.safe_to_destroy(&ids)).await;
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
    let pgs = bounded("pg ls-by-osd", ceph.pgs_on_osd(id)).await;
    Some(BackfillLook { id, pgs })
}
