//! The `safe-to-destroy` a disk replacement's destroy is made on: asked in the reconcile that
//! may destroy, after the OSD map it is tied to was read, for the replacements in `Destroying`
//! whose OSD that map shows down and not destroyed yet. Bounded: without a mgr the question
//! hangs.

use crate::ceph::{CephClient, DestroyLook, OsdDump, OsdId};
use crate::crd::replacement::ReplacementPhase;
use crate::crd::CephOsd;
use std::time::Duration;

/// How long `safe-to-destroy` may take.
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
