use super::*;
use serde_json::json;

fn object(uid: &str, version: &str) -> Arc<Pod> {
    let mut pod = Pod::default();
    pod.metadata.uid = Some(uid.into());
    pod.metadata.resource_version = Some(version.into());
    Arc::new(pod)
}

#[test]
fn the_fingerprint_changes_with_any_input_and_not_with_the_order() {
    let cr: CephOsd = serde_json::from_value(json!({
        "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
        "metadata": {"name": "osds", "namespace": "ceph", "uid": "c", "resourceVersion": "7"},
        "spec": {"storage": [], "updateDomain": "OSD", "podTemplate": {}},
    }))
    .expect("cr");
    let expanded = ExpandedSpec::of(&cr.spec);
    let subject = |cr| Subject {
        cr,
        expanded: &expanded,
        claimed: None,
        others_fingerprint: 0,
    };
    let fp = |cr, pods: &[Arc<Pod>], sets: &[Arc<ReplicaSet>], others: &[Arc<Pod>]| {
        fingerprint(&subject(cr), pods, sets, others)
    };
    let (a, b) = (object("a", "1"), object("b", "1"));
    let base = fp(&cr, &[a.clone(), b.clone()], &[], &[]);
    assert_eq!(fp(&cr, &[b.clone(), a.clone()], &[], &[]), base);
    let mut newer_cr = cr.clone();
    newer_cr.metadata.resource_version = Some("8".into());
    let mut other_status = cr.clone();
    other_status.status = Some(crate::crd::CephOsdStatus {
        observed_generation: Some(3),
        ..Default::default()
    });
    let claimed = BTreeMap::from([(OsdKey::new("n1", "/dev/sdb"), "ceph/older".to_owned())]);
    let changed = [
        fp(&cr, &[a.clone(), object("b", "2")], &[], &[]),
        fp(&cr, std::slice::from_ref(&a), &[], &[]),
        fp(&cr, &[a.clone(), b.clone(), object("c", "1")], &[], &[]),
        fp(&newer_cr, &[a.clone(), b.clone()], &[], &[]),
        fp(&other_status, &[a.clone(), b.clone()], &[], &[]),
        fp(
            &cr,
            std::slice::from_ref(&a),
            &[Arc::new(ReplicaSet {
                metadata: b.metadata.clone(),
                ..ReplicaSet::default()
            })],
            &[],
        ),
        fp(&cr, &[a.clone(), b.clone()], &[], &[object("o", "1")]),
        fingerprint(
            &Subject {
                cr: &cr,
                expanded: &expanded,
                claimed: Some(&claimed),
                others_fingerprint: 0,
            },
            &[a.clone(), b.clone()],
            &[],
            &[],
        ),
        fingerprint(
            &Subject {
                cr: &cr,
                expanded: &expanded,
                claimed: None,
                others_fingerprint: 1,
            },
            &[a.clone(), b.clone()],
            &[],
            &[],
        ),
    ];
    for (i, fp) in changed.iter().enumerate() {
        assert_ne!(*fp, base, "change {i}");
    }
}

#[test]
fn a_cephosds_pods_are_those_it_labels_or_controls() {
    let cr: CephOsd = serde_json::from_value(json!({
        "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
        "metadata": {"name": "osds", "namespace": "ceph", "uid": "c"},
        "spec": {"storage": [], "updateDomain": "OSD", "podTemplate": {}},
    }))
    .expect("cr");
    let pod = |namespace: &str, label: Option<&str>, controller_uid: Option<&str>| -> Pod {
        let mut pod: Pod = serde_json::from_value(json!({"metadata": {
                "name": "p", "namespace": namespace}}))
        .expect("pod");
        if let Some(label) = label {
            pod.metadata.labels = Some([(labels::OWNER.to_owned(), label.to_owned())].into());
        }
        if let Some(uid) = controller_uid {
            pod.metadata.owner_references = Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "ceph.elemental.net/v1alpha1".into(),
                    kind: "CephOSD".into(),
                    name: "whatever".into(),
                    uid: uid.into(),
                    controller: Some(true),
                    block_owner_deletion: None,
                },
            ]);
        }
        pod
    };
    let of_cr = PodsOf::new(&cr);
    assert!(of_cr.contains(&pod("ceph", Some("CephOSD-osds"), None)));
    // The owner label removed: still its pod through the controller reference.
    assert!(of_cr.contains(&pod("ceph", None, Some("c"))));
    assert!(of_cr.contains(&pod("ceph", Some("CephOSD-other"), Some("c"))));
    assert!(!of_cr.contains(&pod("ceph", Some("CephOSD-other"), Some("d"))));
    assert!(!of_cr.contains(&pod("other", Some("CephOSD-osds"), Some("c"))));
    assert!(!of_cr.contains(&pod("ceph", None, None)));
    assert!(is_osd_pod(&pod("x", None, Some("d"))));
    assert!(is_osd_pod(&pod("x", Some("CephOSD-y"), None)));
    assert!(!is_osd_pod(&pod("x", None, None)));
}
