//! A settled CephOSD is not planned again until its inputs change, and an OSD marked out or
//! in by someone else changes none of them: a resync looks at Ceph's OSD map for that.

use crate::ceph::CephClient;
use crate::crd::CephOsd;
use crate::plan::rules::out_osds::out_changed;
use std::collections::BTreeSet;
use std::time::Duration;

/// How long a resync waits for the OSD map (a few milliseconds over the session).
const OUT_LOOK_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether Ceph has an OSD of `cr` (whose spec lists `desired`) out or in otherwise than its
/// status says (`osdsOut`): then it is planned again. False when Ceph is off for it or did
/// not answer.
pub(crate) async fn out_changed_in_ceph(
    ceph: Option<&dyn CephClient>,
    cr: &CephOsd,
    desired: &BTreeSet<String>,
) -> bool {
    let Some(ceph) = ceph.filter(|_| !cr.spec.skips_ceph_gate()) else {
        return false;
    };
    let Ok(Ok(osds)) = tokio::time::timeout(OUT_LOOK_TIMEOUT, ceph.osd_dump()).await else {
        return false;
    };
    let status = cr.status.clone().unwrap_or_default();
    out_changed(&status.osds_out, &status.osd_ids, desired, &osds)
}
