use ceph_osd_operator::labels;
use serde_json::json;

use super::*;

#[test]
fn a_pods_disk_is_its_env_on_its_node() {
    let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "annotations": {labels::HOST: "h9", labels::DATA: "/dev/sdz"}},
            "spec": {"nodeName": "h1", "containers": [{"name": "osd", "env": [{"name": "OSD_DEVICE", "value": "/dev/sdb"}]}]},
        }))
        .expect("pod");
    assert_eq!(
        pod_disk(&pod),
        Some(disk_of(&OsdKey::new("h1", "/dev/sdb")))
    );
    let mut unbound = pod.clone();
    unbound.spec.as_mut().expect("spec").node_name = None;
    assert_eq!(pod_disk(&unbound), None);
    let mut no_env = pod;
    no_env.spec.as_mut().expect("spec").containers[0].env = None;
    assert_eq!(
        pod_disk(&no_env),
        Some(disk_of(&OsdKey::new("h9", "/dev/sdz")))
    );
}
