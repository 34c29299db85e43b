//! What the other CephOSDs (in any namespace) hold, for mapping a key to its OSD ids: the ids
//! recorded in their status, and the hosts where they list disks with no recorded id (their
//! daemons there may report no pod either: the count of such daemons on a node then proves
//! nothing).

use crate::ceph::{OsdId, OtherCephOsds};
use crate::crd::CephOsd;
use crate::runtime::memory::Memory;
use kube::runtime::reflector::Store;
use kube::ResourceExt;

/// Of the CephOSDs in `crs`, all but `cr`.
pub(crate) fn other_cephosds(cr: &CephOsd, crs: &Store<CephOsd>, memory: &Memory) -> OtherCephOsds {
    let mut others = OtherCephOsds::default();
    for other in crs.state() {
        if other.uid() == cr.uid() {
            continue;
        }
        let recorded = other
            .status
            .as_ref()
            .map(|s| s.osd_ids.clone())
            .unwrap_or_default();
        others
            .ids
            .extend(recorded.values().flatten().copied().map(OsdId));
        for key in memory.expanded(&other).desired.osds.keys() {
            if recorded.get(&key.to_string()).is_none_or(Vec::is_empty) {
                others
                    .unrecorded_hosts
                    .entry(key.host.clone())
                    .or_insert_with(|| other.object_key());
            }
        }
    }
    others
}
