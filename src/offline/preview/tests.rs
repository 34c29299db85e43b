use super::*;
use crate::crd::UpdateDomain;
use crate::testing::CephOsdBuilder;
use std::collections::BTreeSet;

#[test]
fn created_pods_are_every_batch_one_pod_per_osd() {
    let hosts: Vec<String> = (0..120).map(|h| format!("h{h:03}")).collect();
    let datas: Vec<String> = (0..10)
        .map(|d| format!("/dev/sd{}", char::from(b'b' + d)))
        .collect();
    let cr = CephOsdBuilder::new("osds")
        .storage(&hosts, &datas)
        .update_domain(UpdateDomain::Host)
        .template(serde_json::json!({"spec": {"containers": [{"name": "osd", "image": "ceph"}]}}))
        .namespace("ceph")
        .build()
        .expect("a CephOSD");
    let pods = created_pods(&cr);
    assert_eq!(pods.len(), 1200, "more than one plan's batch");
    let names: BTreeSet<String> = pods.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names.len(), 1200);
}
