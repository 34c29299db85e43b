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
mod tests {
    use super::*;
    use crate::crd::desired::desired_osds;
    use crate::crd::{CephOsdSpec, OsdDevices, StorageEntry, UpdateDomain};
    use proptest::prelude::*;
    use serde_json::json;

    fn desired(hosts: &[&str], datas: &[&str]) -> DesiredOsds {
        desired_osds(&CephOsdSpec::new(
            vec![StorageEntry {
                hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
                osds: datas
                    .iter()
                    .map(|d| OsdDevices {
                        data: (*d).to_owned(),
                        db: None,
                        wal: None,
                    })
                    .collect(),
            }],
            UpdateDomain::Host,
            json!({}),
        ))
    }

    fn claimant(namespace: &str, name: &str, created: Option<i64>) -> Claimant {
        Claimant {
            namespace: namespace.into(),
            name: name.into(),
            uid: format!("{namespace}/{name}-uid"),
            created: created.map(|s| Timestamp::from_second(s).expect("time")),
        }
    }

    fn lost(claims: &DiskClaims, uid: &str) -> Vec<(String, String)> {
        claims
            .lost_by(uid)
            .map(|lost| {
                lost.iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn the_oldest_cephosd_holds_a_shared_disk_in_any_namespace() {
        let c = desired(&["n1", "n2"], &["/dev/sdb"]);
        let c2 = desired(&["n1", "n5"], &["/dev/sdb"]);
        let other_ns = desired(&["n2"], &["/dev/sdb", "/dev/sdc"]);
        let claims = DiskClaims::build([
            (claimant("ceph", "c2", Some(20)), &c2),
            (claimant("ceph", "c", Some(10)), &c),
            (claimant("other", "x", Some(30)), &other_ns),
        ]);
        assert_eq!(lost(&claims, "ceph/c-uid"), []);
        assert_eq!(
            lost(&claims, "ceph/c2-uid"),
            [("n1:/dev/sdb".to_owned(), "ceph/c".to_owned())]
        );
        assert_eq!(
            lost(&claims, "other/x-uid"),
            [("n2:/dev/sdb".to_owned(), "ceph/c".to_owned())]
        );
        let n1_sdb = OsdKey::new("n1", "/dev/sdb").device_id();
        assert_eq!(claims.listing(&n1_sdb), ["ceph/c", "ceph/c2"]);
    }

    #[test]
    fn spellings_of_one_disk_are_one_claim_and_ties_go_by_namespace_and_name() {
        let a = desired(&["n1"], &["/dev/sdb"]);
        let b = desired(&["N1"], &["/dev//sdb"]);
        let claims = DiskClaims::build([
            (claimant("ns-b", "b", Some(10)), &b),
            (claimant("ns-a", "a", Some(10)), &a),
        ]);
        assert_eq!(
            lost(&claims, "ns-b/b-uid"),
            [("N1:/dev//sdb".to_owned(), "ns-a/a".to_owned())]
        );
        assert_eq!(lost(&claims, "ns-a/a-uid"), []);
    }

    proptest! {
        /// Every disk listed by several CephOSDs has exactly one holder: the oldest lister;
        /// every other lister loses exactly its OSDs on that disk.
        #[test]
        fn each_disk_has_one_holder_the_oldest(
            crs in proptest::collection::vec(
                (proptest::collection::btree_set(0u8..4, 1..3),
                 proptest::collection::btree_set(0u8..4, 1..3),
                 proptest::option::of(0i64..5)),
                1..5,
            ),
        ) {
            let expanded: Vec<(Claimant, DesiredOsds)> = crs
                .iter()
                .enumerate()
                .map(|(i, (hosts, disks, created))| {
                    let hosts: Vec<String> = hosts.iter().map(|h| format!("n{h}")).collect();
                    let disks: Vec<String> = disks.iter().map(|d| format!("/dev/sd{d}")).collect();
                    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
                    let disks: Vec<&str> = disks.iter().map(String::as_str).collect();
                    (claimant("ns", &format!("cr{i}"), *created), desired(&hosts, &disks))
                })
                .collect();
            let claims = DiskClaims::build(expanded.iter().map(|(c, d)| (c.clone(), d)));
            let mut ranked: Vec<&(Claimant, DesiredOsds)> = expanded.iter().collect();
            ranked.sort_by(|a, b| a.0.age_rank().cmp(&b.0.age_rank()));
            for (claimant, desired) in &expanded {
                let lost = claims.lost_by(&claimant.uid).unwrap_or_default();
                for osd in desired.osds.values() {
                    let oldest = ranked
                        .iter()
                        .find(|(_, d)| d.osds.values().any(|o| o.device == osd.device))
                        .map(|(c, _)| c)
                        .expect("some lister");
                    let holder = object_key(&oldest.namespace, &oldest.name);
                    if oldest.uid == claimant.uid {
                        prop_assert!(!lost.contains_key(&osd.key));
                    } else {
                        prop_assert_eq!(lost.get(&osd.key), Some(&holder));
                    }
                }
            }
        }
    }
}
