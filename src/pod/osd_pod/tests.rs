use super::*;
use crate::crd::osd::OsdKey;
use crate::hash::TemplateHash;
use crate::labels::PodState;
use serde_json::json;

fn osd(host: &str, data: &str, db: Option<&str>) -> DesiredOsd {
    let key = OsdKey::new(host, data);
    DesiredOsd {
        device: key.device_id(),
        key,
        db: db.map(Into::into),
        wal: None,
        index: 0,
        disk: 0,
    }
}

fn render(template: &Value, osd: &DesiredOsd) -> Value {
    let hash = TemplateHash::of(template);
    let identity = PodIdentity {
        cr_name: "ceph-osds",
        namespace: "ceph",
        owner_uid: Some("uid-1"),
        name: "osd-node1-sdb-abcde",
        template_hash: &hash,
        pod_state: PodState::WaitForReady,
    };
    serde_json::to_value(render_pod(template, osd, &identity).expect("renders")).expect("json")
}

fn sample_template() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"labels": {"role": "osd"}, "annotations": {"keep": "me"}, "name": "ignored"},
        "spec": {
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}
            },
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [{"name": "osd", "image": "ceph", "env": [{"name": "TEST", "value": "{{ 7*6 }}"}]}],
            "ephemeralContainers": [{"name": "debug", "image": "busybox"}]
        }
    })
}

#[test]
fn adds_labels_annotations_owner_and_affinity() {
    let pod = render(
        &sample_template(),
        &osd("node1.example.com", "/dev/sdb", Some("/dev/nvme0n1p1")),
    );
    let meta = &pod["metadata"];
    assert_eq!(meta["name"], "osd-node1-sdb-abcde");
    assert_eq!(meta["namespace"], "ceph");
    assert_eq!(
        meta["labels"],
        json!({"role": "osd", "ceph.elemental.net/owner": "CephOSD-ceph-osds"})
    );
    let annotations = &meta["annotations"];
    assert_eq!(annotations["keep"], "me");
    assert_eq!(annotations["ceph.elemental.net/host"], "node1.example.com");
    assert_eq!(annotations["ceph.elemental.net/data"], "/dev/sdb");
    assert_eq!(annotations["ceph.elemental.net/db"], "/dev/nvme0n1p1");
    assert!(annotations.get("ceph.elemental.net/wal").is_none());
    assert_eq!(
        annotations["ceph.elemental.net/pod-state"],
        "wait-for-ready"
    );
    assert_eq!(
        annotations["ceph.elemental.net/pod-template-hash"],
        TemplateHash::of(&sample_template()).as_str()
    );
    assert_eq!(
        meta["ownerReferences"],
        json!([{"apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD", "name": "ceph-osds",
                    "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}])
    );
    let affinity = &pod["spec"]["affinity"];
    assert_eq!(
        affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"],
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node1.example.com"]}]}])
    );
    assert!(
        affinity.get("podAntiAffinity").is_some(),
        "other affinity parts survive"
    );
}

#[test]
fn template_values_never_override_what_the_operator_computes() {
    let mut template = sample_template();
    template["metadata"]["annotations"] = json!({
        "keep": "me",
        "ceph.elemental.net/db": "/dev/evil-db",
        "ceph.elemental.net/wal": "/dev/evil-wal",
        "ceph.elemental.net/pod-state": "up-to-date",
        "ceph.elemental.net/data": "/dev/other",
    });
    template["metadata"]["labels"]["ceph.elemental.net/owner"] = json!("CephOSD-other");
    template["metadata"]["finalizers"] = json!(["example.com/hold"]);
    template["spec"]["nodeName"] = json!("elsewhere");
    template["spec"]["nodeSelector"] =
        json!({"kubernetes.io/hostname": "elsewhere", "disk": "hdd"});
    let pod = render(&template, &osd("n", "/dev/sdb", None));
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(annotations["keep"], "me");
    assert_eq!(annotations["ceph.elemental.net/data"], "/dev/sdb");
    assert!(annotations.get("ceph.elemental.net/db").is_none());
    assert!(annotations.get("ceph.elemental.net/wal").is_none());
    assert_eq!(
        annotations["ceph.elemental.net/pod-state"],
        "wait-for-ready"
    );
    assert_eq!(
        pod["metadata"]["labels"]["ceph.elemental.net/owner"],
        "CephOSD-ceph-osds"
    );
    assert!(pod["metadata"].get("finalizers").is_none());
    assert!(pod["spec"].get("nodeName").is_none());
    assert_eq!(pod["spec"]["nodeSelector"], json!({"disk": "hdd"}));
}

#[test]
fn appends_env_to_init_and_app_containers_only() {
    let pod = render(&sample_template(), &osd("n", "/dev/sdb", None));
    let names = |c: &Value| -> Vec<String> {
        c["env"]
            .as_array()
            .expect("env")
            .iter()
            .map(|e| e["name"].as_str().expect("n").to_owned())
            .collect()
    };
    assert_eq!(
        names(&pod["spec"]["containers"][0]),
        [
            "TEST",
            "OSD_DEVICE",
            "OSD_DB_DEVICE",
            "OSD_WAL_DEVICE",
            "POD_NAME",
            "POD_NAMESPACE",
            "NODE_NAME"
        ]
    );
    assert_eq!(
        names(&pod["spec"]["initContainers"][0]),
        [
            "OSD_DEVICE",
            "OSD_DB_DEVICE",
            "OSD_WAL_DEVICE",
            "POD_NAME",
            "POD_NAMESPACE",
            "NODE_NAME"
        ]
    );
    // The pod as Ceph records it: from the downward API.
    let env = &pod["spec"]["containers"][0]["env"];
    assert_eq!(
        env[4]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.name"
    );
    assert_eq!(
        env[5]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );
    assert_eq!(
        env[6]["valueFrom"]["fieldRef"]["fieldPath"],
        "spec.nodeName"
    );
    assert!(pod["spec"]["ephemeralContainers"][0].get("env").is_none());
    // Plain values (the operator's record of the devices), not the downward API: an
    // annotation edit must not move the daemon at its next start.
    let env = &pod["spec"]["containers"][0]["env"];
    assert_eq!(env[1], json!({"name": "OSD_DEVICE", "value": "/dev/sdb"}));
    assert_eq!(env[2], json!({"name": "OSD_DB_DEVICE", "value": ""}));
    assert_eq!(env[3], json!({"name": "OSD_WAL_DEVICE", "value": ""}));
    let with_db = render(
        &sample_template(),
        &osd("n", "/dev/sdb", Some("/dev/nvme0n1p1")),
    );
    assert_eq!(
        with_db["spec"]["containers"][0]["env"][2],
        json!({"name": "OSD_DB_DEVICE", "value": "/dev/nvme0n1p1"})
    );
}

#[test]
fn cr_strings_are_data_never_templates() {
    let hostile_host = "n\": x\n  {{ 7*6 }} {% raw %}";
    let hostile_data = "/dev/'\"\\{{ oops }}\n- ]}";
    let pod = render(
        &sample_template(),
        &osd(hostile_host, hostile_data, Some("{{ db }}")),
    );
    assert_eq!(pod["spec"]["containers"][0]["env"][0]["value"], "{{ 7*6 }}");
    assert_eq!(
        pod["metadata"]["annotations"]["ceph.elemental.net/host"],
        hostile_host
    );
    assert_eq!(
        pod["metadata"]["annotations"]["ceph.elemental.net/data"],
        hostile_data
    );
    assert_eq!(
        pod["metadata"]["annotations"]["ceph.elemental.net/db"],
        "{{ db }}"
    );
}

#[test]
fn template_without_metadata_or_labels_still_renders() {
    let pod = render(
        &json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c"}]}}),
        &osd("n", "sdb", None),
    );
    assert_eq!(
        pod["metadata"]["labels"]["ceph.elemental.net/owner"],
        "CephOSD-ceph-osds"
    );
}

#[test]
fn offline_rendering_has_no_owner_reference() {
    let template = sample_template();
    let hash = TemplateHash::of(&template);
    let identity = PodIdentity {
        cr_name: "c",
        namespace: "ns",
        owner_uid: None,
        name: "osd-n-sdb-00001",
        template_hash: &hash,
        pod_state: PodState::UpToDate,
    };
    let pod = render_pod(&template, &osd("n", "/dev/sdb", None), &identity).expect("renders");
    assert!(pod.metadata.owner_references.is_none());
}

#[test]
fn bad_templates_give_field_paths() {
    let identity_hash = TemplateHash::of(&json!({}));
    let identity = PodIdentity {
        cr_name: "c",
        namespace: "ns",
        owner_uid: None,
        name: "p",
        template_hash: &identity_hash,
        pod_state: PodState::UpToDate,
    };
    let err =
        render_pod(&json!("pod"), &osd("n", "d", None), &identity).expect_err("not a mapping");
    assert!(err.to_string().contains("must be a mapping"), "{err}");
    let err = render_pod(
        &json!({"spec": {"containers": [{"name": 5}]}}),
        &osd("n", "d", None),
        &identity,
    )
    .expect_err("bad type");
    assert!(err.to_string().contains("spec.containers[0].name"), "{err}");
}

#[test]
fn deep_merge_replaces_lists_and_scalars() {
    let mut base = json!({"a": {"b": 1, "c": [1, 2]}, "d": "x"});
    deep_merge(
        &mut base,
        json!({"a": {"c": [3], "e": true}, "d": {"f": 1}}),
    );
    assert_eq!(
        base,
        json!({"a": {"b": 1, "c": [3], "e": true}, "d": {"f": 1}})
    );
}
