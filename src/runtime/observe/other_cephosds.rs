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
mod tests {
    use super::*;
    use crate::crd::CephOsdStatus;
    use crate::testing::CephOsdBuilder;
    use std::collections::{BTreeMap, BTreeSet};

    fn cr(name: &str, uid: &str, hosts: &[&str], recorded: &[(&str, u32)]) -> Arc<CephOsd> {
        let mut cr = CephOsdBuilder::new(name)
            .namespace("ceph")
            .uid(uid)
            .storage(hosts, &["/dev/sdb"])
            .build()
            .expect("a CephOSD");
        cr.status = Some(CephOsdStatus {
            osd_ids: recorded
                .iter()
                .map(|(key, id)| ((*key).to_owned(), vec![*id]))
                .collect(),
            ..CephOsdStatus::default()
        });
        Arc::new(cr)
    }

    #[test]
    fn the_others_recorded_ids_and_their_hosts_without_records() {
        let mine = cr("hdds", "u1", &["h1"], &[("h1:/dev/sdb", 1)]);
        let ssds = cr("ssds", "u2", &["h1", "h2"], &[("h1:/dev/sdb", 7)]);
        let others = other_cephosds(&mine, &[mine.clone(), ssds], &Memory::default());
        assert_eq!(
            others.ids_on_host,
            BTreeMap::from([("h1".to_owned(), BTreeSet::from([OsdId(7)]))]),
            "by host, not my own"
        );
        assert_eq!(
            others.unrecorded_hosts,
            BTreeMap::from([("h2".to_owned(), "ceph/ssds".to_owned())])
        );
    }
}
