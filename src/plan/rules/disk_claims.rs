//! Disks several CephOSDs list: a disk is a node's, not a CephOSD's, so of all the CephOSDs
//! that list one disk (whatever its spelling, in any namespace) the oldest holds it (then by
//! namespace and name); the others create and replace nothing for it and say which CephOSD
//! holds it. Pure: built from the CephOSDs' expanded specs.

use crate::crd::desired::DesiredOsds;
use crate::crd::object_key;
use crate::crd::osd::{DeviceId, OsdKey};
use k8s_openapi::jiff::Timestamp;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One CephOSD as the claims see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Claimant {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub created: Option<Timestamp>,
}

impl Claimant {
    /// Older first: creation time (unknown last), then namespace and name.
    fn age_rank(&self) -> (bool, Option<Timestamp>, &str, &str) {
        (
            self.created.is_none(),
            self.created,
            &self.namespace,
            &self.name,
        )
    }
}

/// Who holds each disk that more than one CephOSD lists.
#[derive(Debug, Default)]
pub(crate) struct DiskClaims {
    /// Per CephOSD uid that lost any: its OSDs whose disk another holds, with that holder
    /// (`namespace/name`).
    lost: HashMap<String, Arc<BTreeMap<OsdKey, String>>>,
    /// Per disk listed by any CephOSD: the `namespace/name` of every CephOSD listing it.
    listed_by: HashMap<DeviceId, Vec<String>>,
}

impl DiskClaims {
    /// The claims of `crs` (each with its expanded OSDs).
    pub(crate) fn build<'a>(crs: impl IntoIterator<Item = (Claimant, &'a DesiredOsds)>) -> Self {
        let mut crs: Vec<(Claimant, &DesiredOsds)> = crs.into_iter().collect();
        crs.sort_by(|a, b| a.0.age_rank().cmp(&b.0.age_rank()));
        let mut holder: HashMap<&DeviceId, usize> = HashMap::new();
        let mut claims = Self::default();
        for (index, (claimant, desired)) in crs.iter().enumerate() {
            let id = object_key(&claimant.namespace, &claimant.name);
            let mut lost = BTreeMap::new();
            for osd in desired.osds.values() {
                let first = *holder.entry(&osd.device).or_insert(index);
                let listers = claims.listed_by.entry(osd.device.clone()).or_default();
                if listers.last() != Some(&id) {
                    listers.push(id.clone());
                }
                if first != index {
                    let winner = &crs[first].0;
                    lost.insert(osd.key.clone(), object_key(&winner.namespace, &winner.name));
                }
            }
            if !lost.is_empty() {
                claims.lost.insert(claimant.uid.clone(), Arc::new(lost));
            }
        }
        claims
    }

    /// The OSDs of the CephOSD with `uid` whose disk an older CephOSD holds.
    pub(crate) fn lost_by(&self, uid: &str) -> Option<Arc<BTreeMap<OsdKey, String>>> {
        self.lost.get(uid).cloned()
    }

    /// The CephOSDs (`namespace/name`) that list `disk`.
    pub(crate) fn listing(&self, disk: &DeviceId) -> &[String] {
        self.listed_by.get(disk).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests;
