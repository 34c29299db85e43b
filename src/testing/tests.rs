use super::*;
use crate::crd::{OsdDevices, StorageEntry, UpdateDomain};

#[test]
fn the_manifest_is_what_was_asked_for_and_builds_a_cephosd() {
    let builder = CephOsdBuilder::new("osds")
        .storage(&["h1"], &["/dev/sdb"])
        .entry(StorageEntry {
            hosts: vec!["h2".into()],
            osds: vec![OsdDevices {
                data: "/dev/sdc".into(),
                db: Some("/dev/nvme0n1".into()),
                wal: None,
            }],
        })
        .update_domain(UpdateDomain::Host)
        .namespace("ceph");
    assert_eq!(
        builder.clone().manifest(),
        json!({
            "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
            "metadata": {"name": "osds", "namespace": "ceph"},
            "spec": {
                "storage": [
                    {"hosts": ["h1"], "osds": [{"data": "/dev/sdb"}]},
                    {"hosts": ["h2"], "osds": [{"data": "/dev/sdc", "db": "/dev/nvme0n1"}]},
                ],
                "updateDomain": "Host",
                "podTemplate": {},
            },
        })
    );
    let cr = builder.build().expect("a CephOSD");
    assert_eq!(cr.spec.storage.len(), 2);
    assert_eq!(cr.spec.update_domain, UpdateDomain::Host);
}
