use super::*;
use crate::pod::pod_status::{ready_since, unschedulable};
use serde_json::json;

fn decoded(value: &serde_json::Value) -> (Pod, Pod) {
    let full: Pod = serde_json::from_value(value.clone()).expect("pod");
    let watched: WatchedPod = serde_json::from_value(value.clone()).expect("watched pod");
    (full, watched.into_pod())
}

#[test]
fn a_watched_pod_keeps_what_the_planner_reads_and_nothing_else() {
    let (full, pod) = decoded(&json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "osd-h1-sdb-abcde",
            "namespace": "ceph",
            "uid": "u1",
            "resourceVersion": "42",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionTimestamp": "2026-01-01T00:01:00Z",
            "deletionGracePeriodSeconds": 30,
            "finalizers": ["f"],
            "generateName": "osd-h1-sdb-",
            "generation": 1,
            "labels": {"ceph.elemental.net/owner": "x"},
            "annotations": {"ceph.elemental.net/host": "h1"},
            "ownerReferences": [{"apiVersion": "ceph.elemental.net/v1alpha1",
                "kind": "CephOSD", "name": "x", "uid": "cr", "controller": true}],
            "managedFields": [{"manager": "kubelet", "operation": "Update",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {"containers": [{"name": "osd", "image": "ceph"}], "nodeName": "h1"},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.7",
            "conditions": [
                {"type": "Ready", "status": "True",
                 "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "lastProbeTime": "2026-01-01T00:00:05Z"},
                {"type": "PodScheduled", "status": "True"},
            ],
            "containerStatuses": [{"name": "osd", "image": "ceph", "imageID": "x",
                                   "ready": true, "restartCount": 0}],
        },
    }));
    let mut expected_meta = full.metadata.clone();
    expected_meta.managed_fields = None;
    assert_eq!(pod.metadata, expected_meta);
    assert!(full.metadata.managed_fields.is_some());
    assert_eq!(ready_since(&pod), ready_since(&full));
    assert!(ready_since(&pod).is_some());
    let status = pod.status.as_ref().expect("status");
    assert_eq!(status.phase.as_deref(), Some("Running"));
    // Of the conditions, the Ready one (PodScheduled only while False), without its
    // probe time.
    let conditions = status.conditions.as_ref().expect("conditions");
    assert_eq!(conditions.len(), 1);
    assert!(conditions[0].last_probe_time.is_none());
    assert!(status.container_statuses.is_none() && status.pod_ip.is_none());
    // Of the spec, only what binds the pod to its disk.
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(spec.node_name.as_deref(), Some("h1"));
    assert!(spec.containers.is_empty() && spec.affinity.is_none());
    assert_eq!(
        crate::pod::pod_record::bound_host(&pod),
        crate::pod::pod_record::bound_host(&full)
    );
}

#[test]
fn a_watched_pod_keeps_its_record_of_host_and_data() {
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["h1"]}]}]}}});
    let (full, pod) = decoded(&json!({
        "metadata": {"name": "osd-h1-sdb-abcde"},
        "spec": {
            "affinity": affinity,
            "containers": [
                {"name": "osd", "image": "ceph", "env": [
                    {"name": "TEST", "value": "x"},
                    {"name": "OSD_DEVICE", "value": "/dev/sdb"},
                    {"name": "OSD_DB_DEVICE", "value": ""},
                ]},
                {"name": "sidecar", "env": [{"name": "OSD_DEVICE", "value": "/dev/other"}]},
            ],
        },
    }));
    assert_eq!(crate::pod::pod_record::bound_host(&pod), Some("h1"));
    assert_eq!(
        crate::pod::pod_record::recorded_data(&pod),
        Some("/dev/sdb")
    );
    assert_eq!(
        crate::pod::pod_record::recorded_data(&pod),
        crate::pod::pod_record::recorded_data(&full)
    );
    // The reference operator's downward-API env records nothing.
    let (_, legacy) = decoded(&json!({
        "metadata": {"name": "osd-h1-sdb-abcde"},
        "spec": {"containers": [{"name": "osd", "env": [{"name": "OSD_DEVICE",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['ceph.elemental.net/data']"}}}]}]},
    }));
    assert_eq!(crate::pod::pod_record::recorded_data(&legacy), None);
}

#[test]
fn a_watched_pending_pod_keeps_why_it_cannot_be_scheduled() {
    let (full, pod) = decoded(&json!({
        "metadata": {"name": "osd-h1-sdb-abcde"},
        "status": {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available: node(s) didn't match node affinity",
            "lastProbeTime": null,
        }]},
    }));
    assert!(unschedulable(&full).is_some());
    assert_eq!(unschedulable(&pod), unschedulable(&full));
}

#[test]
fn a_watched_pod_without_status_or_metadata_fields_decodes() {
    let (_, pod) = decoded(&json!({"metadata": {}}));
    assert_eq!(pod.metadata, ObjectMeta::default());
    assert!(pod.status.is_none());
}

#[test]
fn the_watch_asks_for_pods() {
    assert_eq!(
        WatchedPod::url_path(&(), Some("ceph")),
        Pod::url_path(&(), Some("ceph"))
    );
    assert_eq!(WatchedPod::kind(&()), "Pod");
    assert_eq!(WatchedPod::api_version(&()), "v1");
}

#[test]
fn a_pre_pull_pod_keeps_its_container_states_an_osd_pod_does_not() {
    let pod = |labels: serde_json::Value| {
        decoded(&json!({
            "metadata": {"name": "p", "labels": labels},
            "spec": {"containers": [{"name": "pull-0", "image": "ceph:v2"}]},
            "status": {
                "phase": "Pending",
                "containerStatuses": [{"name": "pull-0", "image": "ceph:v2", "imageID": "",
                    "ready": false, "restartCount": 0,
                    "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}],
            },
        }))
        .1
    };
    let pre_pull = pod(json!({"ceph.elemental.net/pre-pull": "true"}));
    let statuses = (pre_pull.status.as_ref()).and_then(|s| s.container_statuses.as_ref());
    let status = &statuses.expect("kept")[0];
    assert_eq!(
        (status.name.as_str(), status.image.as_str()),
        ("pull-0", "ceph:v2")
    );
    let waiting = status
        .state
        .as_ref()
        .and_then(|s| s.waiting.as_ref())
        .expect("waiting");
    assert_eq!(waiting.reason.as_deref(), Some("ErrImagePull"));
    let osd = pod(json!({"ceph.elemental.net/owner": "CephOSD-x"}));
    assert!(osd.status.expect("status").container_statuses.is_none());
}

/// A pre-pull pod whose containers run but that is not Ready (KWOK's pods that wait for a
/// probe; a kubelet before its first readiness report): the cached pod keeps its containers,
/// so the planner reads the pull as done. Without them it read "pulling" until the deadline.
#[test]
fn a_running_pre_pull_pod_reads_as_pulled_from_the_cache() {
    use crate::plan::phases::pre_pull::pulled::{pulled, Pulled};
    let running = json!({"running": {"startedAt": "2026-01-01T00:00:01Z"}});
    let (full, cached) = decoded(&json!({
        "metadata": {"name": "p", "labels": {"ceph.elemental.net/pre-pull": "true"}},
        "spec": {"containers": [
            {"name": "pull-0", "image": "ceph:v2", "command": ["true"],
             "resources": {"requests": {"cpu": "1m"}}},
            {"name": "pull-1", "image": "busybox:v2", "command": ["true"]},
        ]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "pull-0", "image": "ceph:v2", "imageID": "", "ready": false,
                 "restartCount": 0, "state": running},
                {"name": "pull-1", "image": "busybox:v2", "imageID": "", "ready": false,
                 "restartCount": 0, "state": running},
            ],
        },
    }));
    let named = |pod: &Pod| -> Vec<(String, Option<String>)> {
        (pod.spec.iter().flat_map(|s| &s.containers))
            .map(|c| (c.name.clone(), c.image.clone()))
            .collect()
    };
    assert_eq!(named(&cached), named(&full));
    assert_eq!(pulled(&cached, false), Pulled::Yes);
    assert_eq!(pulled(&cached, true), Pulled::Yes);
    // One container still waiting: not yet.
    let mut one_waiting = cached.clone();
    if let Some(s) = one_waiting
        .status
        .as_mut()
        .and_then(|s| s.container_statuses.as_mut())
    {
        s.truncate(1);
    }
    assert_eq!(pulled(&one_waiting, false), Pulled::Pulling);
}

#[test]
fn an_osd_pod_keeps_only_its_data_device_of_its_containers() {
    let (_, pod) = decoded(&json!({
        "metadata": {"name": "osd", "labels": {"ceph.elemental.net/owner": "CephOSD-x"}},
        "spec": {"containers": [
            {"name": "osd", "image": "ceph", "env": [{"name": "OSD_DEVICE", "value": "/dev/sdb"}]},
            {"name": "sidecar", "image": "busybox"},
        ]},
    }));
    let containers = &pod.spec.expect("spec").containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].name, "");
    assert_eq!(containers[0].image, None);
    let env = containers[0].env.as_ref().expect("env");
    assert_eq!(env[0].value.as_deref(), Some("/dev/sdb"));
}

#[test]
fn a_pod_that_prepares_a_new_disk_keeps_why_its_prepare_failed_another_does_not() {
    let pod = |annotations: serde_json::Value| {
        decoded(&json!({
            "metadata": {"name": "osd-a-sdb-x", "annotations": annotations},
            "spec": {"containers": [{"name": "osd", "image": "ceph:v1"}]},
            "status": {
                "phase": "Running",
                "reason": "Error",
                "message": "ceph-volume failed",
                "initContainerStatuses": [{"name": "prepare", "image": "ceph:v1", "imageID": "",
                    "ready": false, "restartCount": 1,
                    "lastState": {"terminated": {"exitCode": 1, "message": "id 3 not destroyed"}}}],
                "containerStatuses": [{"name": "osd", "image": "ceph:v1", "imageID": "",
                    "ready": false, "restartCount": 0,
                    "state": {"waiting": {"reason": "PodInitializing"}}}],
            },
        }))
        .1
    };
    let preparing = pod(json!({"ceph.elemental.net/prepare-osd-id": "3"}));
    assert_eq!(
        crate::pod::pod_status::failure(&preparing).as_deref(),
        Some("container prepare exited with code 1: id 3 not destroyed")
    );
    let status = preparing.status.expect("status");
    assert_eq!(status.message.as_deref(), Some("ceph-volume failed"));
    let running = pod(json!({})).status.expect("status");
    assert!(running.init_container_statuses.is_none() && running.container_statuses.is_none());
    assert!(running.message.is_none() && running.reason.is_none());
}
