use serde_json::json;

use super::*;

fn pod(env: Value, annotations: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "osd-a", "uid": "u1", "annotations": annotations},
        "spec": {"nodeName": "h1", "containers": [
            {"name": "osd", "image": "ceph:v16", "env": env},
            {"name": "log", "image": "busybox"},
        ]},
        "status": {"phase": "Running", "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "True"},
            {"type": "ContainersReady", "status": "True"},
        ], "containerStatuses": [
            {"name": "osd", "image": "ceph:v16", "imageID": "", "ready": true, "restartCount": 0,
             "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}}},
        ]},
    }))
    .expect("pod")
}

#[test]
fn the_id_to_prepare_is_the_first_containers_osd_id() {
    let plain = pod(json!([{"name": "OSD_ID", "value": "7"}]), json!({}));
    assert_eq!(prepare_id(&plain), Ok(7));
    let by_annotation = pod(
        json!([{"name": "OSD_ID", "valueFrom": {"fieldRef":
            {"fieldPath": "metadata.annotations['ceph.elemental.net/prepare-osd-id']"}}}]),
        json!({"ceph.elemental.net/prepare-osd-id": "3"}),
    );
    assert_eq!(prepare_id(&by_annotation), Ok(3));
    let none = pod(
        json!([{"name": "OSD_DEVICE", "value": "/dev/sdb"}]),
        json!({}),
    );
    let err = prepare_id(&none).expect_err("no OSD_ID");
    assert!(err.contains("no OSD_ID"), "{err}");
    let word = pod(json!([{"name": "OSD_ID", "value": "seven"}]), json!({}));
    let err = prepare_id(&word).expect_err("not a number");
    assert!(err.contains("\"seven\" is not an OSD id"), "{err}");
    let unresolved = pod(
        json!([{"name": "OSD_ID", "valueFrom": {"fieldRef":
            {"fieldPath": "metadata.annotations['missing']"}}}]),
        json!({}),
    );
    assert!(prepare_id(&unresolved).is_err());
}

#[test]
fn a_failed_prepare_ends_the_pod_as_failed_with_the_reason() {
    let p = pod(json!([]), json!({}));
    let now = Time(Timestamp::from_second(1_800_000_000).expect("time"));
    let patch = failed_prepare_status(&p, "Error EEXIST: osd.1 exists", &now);
    assert_eq!(patch["metadata"]["uid"], "u1");
    let status = &patch["status"];
    assert_eq!(status["phase"], "Failed");
    let conditions = status["conditions"].as_array().expect("conditions");
    let of = |kind: &str| {
        conditions
            .iter()
            .find(|c| c["type"] == kind)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(of("Initialized")["status"], "True", "other conditions kept");
    assert_eq!(of("Ready")["status"], "False");
    assert_eq!(of("ContainersReady")["reason"], "PodFailed");
    assert_eq!(conditions.len(), 3);
    let first = &status["containerStatuses"][0];
    assert_eq!(first["name"], "osd");
    let ended = &first["state"]["terminated"];
    assert_eq!(ended["exitCode"], 1);
    assert_eq!(ended["reason"], "Error");
    assert_eq!(ended["message"], "Error EEXIST: osd.1 exists");
    assert_eq!(ended["startedAt"], "2025-01-01T00:00:00Z");
    let second = &status["containerStatuses"][1]["state"]["terminated"];
    assert_eq!(second["exitCode"], 1);
    assert!(second.get("message").is_none());
    assert_eq!(second["startedAt"], second["finishedAt"]);
    // What the API server reads back.
    let read: k8s_openapi::api::core::v1::PodStatus =
        serde_json::from_value(status.clone()).expect("a PodStatus");
    assert_eq!(read.container_statuses.map(|s| s.len()), Some(2));
}
