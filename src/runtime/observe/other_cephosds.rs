//! What the other CephOSDs (in any namespace, possibly of other Ceph clusters) hold, for
//! mapping a key to its OSD ids: per host, the ids recorded in their status for their disks
//! there, and the hosts where they list disks with no recorded id (their daemons there may
//! report no pod either: the count of such daemons on a node then proves nothing).

use crate::ceph::{OsdId, OtherCephOsds};
use crate::crd::CephOsd;
use crate::runtime::memory::Memory;
use kube::ResourceExt;
use std::sync::Arc;

/// Of the CephOSDs `crs`, all but `cr`.
pub(crate) fn other_cephosds(cr: &CephOsd, crs: &[Arc<CephOsd>], memory: &Memory) -> OtherCephOsds {
    let mut others = OtherCephOsds::default();
    for other in crs.iter().filter(|other| other.uid() != cr.uid()) {
        let recorded = other
            .status
            .as_ref()
            .map(|s| s.osd_ids.clone())
            .unwrap_or_default();
        for key in memory.expanded(other).desired.osds.keys() {
            match recorded.get(&key.to_string()).filter(|ids| !ids.is_empty()) {
                Some(ids) => others
                    .ids_on_host
                    .entry(key.host.clone())
                    .or_default()
                    .extend(ids.iter().copied().map(OsdId)),
                None => {
                    others
                        .unrecorded_hosts
                        .entry(key.host.clone())
                        .or_insert_with(|| other.object_key());
                }
            }
        }
    }
    others
}

#[cfg(test)]
mod tests;
