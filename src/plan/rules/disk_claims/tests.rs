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
