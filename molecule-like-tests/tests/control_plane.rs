//! The local Kubernetes the scenarios rely on: KWOK's stages play the kubelet (Ready after the
//! annotated delay, never Ready, Ready while the Ceph bridge says its OSD is up, Failed,
//! graceful deletion, a pre-pull pod on a `pull-stuck-` node never pulling), the scheduler binds
//! pods to the node their affinity names, and the operator's identity has exactly `deploy/`'s RBAC.
//!
//! Needs a running control plane:
//! `molecule-like-tests/control-plane install && molecule-like-tests/control-plane up`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Client;
use molecule_like_tests::journeys::bridge::{OSD_UP_ANNOTATION, READY_WHEN_OSD_UP};
use molecule_like_tests::journeys::scenario::create_namespace;
use molecule_like_tests::kubernetes::manifests::{
    random_suffix, FAIL_ANNOTATION, PULL_ANNOTATION, READY_AFTER_ANNOTATION, READY_ANNOTATION,
};
use molecule_like_tests::kubernetes::nodes::ensure_nodes;
use molecule_like_tests::kubernetes::pods::is_ready;
use molecule_like_tests::paths::kubectl;
use serde_json::{json, Value};

const NODE: &str = "cp-test-node";

async fn client() -> Client {
    match molecule_like_tests::kubernetes::client::test_client().await {
        Ok(c) => c,
        Err(e) => panic!("{e:#}"),
    }
}

/// A fresh namespace and the test node.
async fn setup(test: &str) -> (Client, Api<Pod>, String) {
    let client = client().await;
    let ns = format!("cp-{test}-{}", random_suffix());
    create_namespace(&client, &ns).await.expect("namespace");
    ensure_nodes(&client, &BTreeSet::from([NODE.to_string()]))
        .await
        .expect("node");
    (client.clone(), Api::namespaced(client, &ns), ns)
}

fn pod(name: &str, annotations: Value, grace: i64) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "containers": [{"name": "main", "image": "busybox:1"}],
            "terminationGracePeriodSeconds": grace,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{
                    "key": "kubernetes.io/hostname", "operator": "In", "values": [NODE]}]}]}}},
        },
    }))
    .expect("valid pod")
}

fn phase(p: &Pod) -> Option<String> {
    p.status.as_ref().and_then(|s| s.phase.clone())
}

async fn create(api: &Api<Pod>, pod: &Pod) -> Pod {
    api.create(&PostParams::default(), pod)
        .await
        .expect("create pod")
}

async fn wait_for<F: Fn(Option<&Pod>) -> bool>(
    api: &Api<Pod>,
    name: &str,
    secs: u64,
    what: &str,
    f: F,
) -> Option<Pod> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let p = api.get_opt(name).await.expect("get pod");
        if f(p.as_ref()) {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs}s waiting for {name}: {what}; last seen: {p:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn delete_namespace(client: &Client, ns: &str) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let _ = namespaces.delete(ns, &DeleteParams::default()).await;
}

#[tokio::test]
async fn kwok_makes_pods_ready_late_never_or_failed() {
    let (client, api, ns) = setup("kwok").await;
    for (name, annotations) in [
        ("fast", json!({})),
        ("never", json!({READY_ANNOTATION: "never"})),
        ("slow", json!({READY_AFTER_ANNOTATION: "5"})),
        ("failing", json!({FAIL_ANNOTATION: "true"})),
    ] {
        create(&api, &pod(name, annotations, 0)).await;
    }

    let fast = wait_for(&api, "fast", 20, "Ready", |p| p.is_some_and(is_ready))
        .await
        .expect("pod");
    assert_eq!(phase(&fast).as_deref(), Some("Running"));
    assert_eq!(fast.spec.and_then(|s| s.node_name).as_deref(), Some(NODE));
    let types: Vec<_> = fast
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.status))
        .collect();
    for t in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert!(
            types.contains(&(t.to_string(), "True".to_string())),
            "{t} in {types:?}"
        );
    }

    let slow = api.get("slow").await.expect("get");
    assert!(!is_ready(&slow), "slow must not be Ready within 1 s");

    wait_for(&api, "never", 20, "Running", |p| {
        p.is_some_and(|p| phase(p).as_deref() == Some("Running"))
    })
    .await;
    wait_for(&api, "failing", 20, "Failed", |p| {
        p.is_some_and(|p| phase(p).as_deref() == Some("Failed"))
    })
    .await;
    wait_for(&api, "slow", 20, "Ready", |p| p.is_some_and(is_ready)).await;
    let never = api.get("never").await.expect("get");
    assert!(!is_ready(&never), "never must stay not Ready");

    // Removing the annotation makes it Ready.
    api.patch(
        "never",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {READY_ANNOTATION: null}}})),
    )
    .await
    .expect("patch");
    wait_for(
        &api,
        "never",
        20,
        "Ready after the annotation is removed",
        |p| p.is_some_and(is_ready),
    )
    .await;
    delete_namespace(&client, &ns).await;
}

/// The reason the first container of `pod` waits for, if it waits.
fn waiting_reason(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

#[tokio::test]
async fn kwok_plays_a_failed_image_pull_until_the_annotation_goes() {
    let (client, api, ns) = setup("kwok-pull").await;
    create(
        &api,
        &pod("unpullable", json!({PULL_ANNOTATION: "ErrImagePull"}), 0),
    )
    .await;
    wait_for(&api, "unpullable", 20, "waiting: ErrImagePull", |p| {
        p.and_then(waiting_reason).as_deref() == Some("ErrImagePull")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = api.get("unpullable").await.expect("get");
    assert_eq!(phase(&still).as_deref(), Some("Pending"), "{still:?}");
    assert!(!is_ready(&still));
    assert_eq!(waiting_reason(&still).as_deref(), Some("ErrImagePull"));
    api.patch(
        "unpullable",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {PULL_ANNOTATION: null}}})),
    )
    .await
    .expect("patch");
    wait_for(&api, "unpullable", 20, "Ready once pullable", |p| {
        p.is_some_and(is_ready)
    })
    .await;
    delete_namespace(&client, &ns).await;
}

/// `pod` placed on `node`, labelled `labels`.
fn on_node(mut pod: Pod, node: &str, labels: Value) -> Pod {
    pod.metadata.labels = serde_json::from_value(labels).expect("labels");
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}});
    if let Some(spec) = pod.spec.as_mut() {
        spec.affinity = Some(serde_json::from_value(affinity).expect("affinity"));
    }
    pod
}

#[tokio::test]
async fn kwok_never_ends_a_pre_pull_on_a_pull_stuck_node() {
    let (client, api, ns) = setup("kwok-stuck").await;
    let stuck_node = format!("pull-stuck-{NODE}");
    ensure_nodes(&client, &BTreeSet::from([stuck_node.clone()]))
        .await
        .expect("node");
    let pre_pull = json!({"ceph.elemental.net/pre-pull": "true"});
    let make =
        |name: &str, node: &str, labels: Value| on_node(pod(name, json!({}), 0), node, labels);
    create(&api, &make("stuck", &stuck_node, pre_pull.clone())).await;
    create(&api, &make("other", &stuck_node, json!({}))).await;
    create(&api, &make("pulled", NODE, pre_pull)).await;
    for name in ["other", "pulled"] {
        wait_for(&api, name, 20, "Ready", |p| p.is_some_and(is_ready)).await;
    }
    wait_for(&api, "stuck", 20, "waiting: ContainerCreating", |p| {
        p.and_then(waiting_reason).as_deref() == Some("ContainerCreating")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = api.get("stuck").await.expect("get");
    assert_eq!(phase(&still).as_deref(), Some("Pending"), "{still:?}");
    assert!(!is_ready(&still));
    assert_eq!(waiting_reason(&still).as_deref(), Some("ContainerCreating"));
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn kwok_makes_ceph_bridged_pods_ready_while_their_osd_is_up() {
    let (client, api, ns) = setup("kwok-ceph").await;
    create(
        &api,
        &pod("osd", json!({READY_ANNOTATION: READY_WHEN_OSD_UP}), 0),
    )
    .await;
    wait_for(&api, "osd", 20, "Running", |p| {
        p.is_some_and(|p| phase(p).as_deref() == Some("Running"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !is_ready(&api.get("osd").await.expect("get")),
        "Ready before the bridge said its OSD is up"
    );
    let up = |value: Value| {
        let api = api.clone();
        async move {
            api.patch(
                "osd",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {OSD_UP_ANNOTATION: value}}})),
            )
            .await
            .expect("patch");
        }
    };
    up(json!("true")).await;
    wait_for(&api, "osd", 20, "Ready once its OSD is up", |p| {
        p.is_some_and(is_ready)
    })
    .await;
    up(Value::Null).await;
    wait_for(&api, "osd", 20, "not Ready once its OSD is not", |p| {
        p.is_some_and(|p| !is_ready(p))
    })
    .await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn deletion_turns_not_ready_then_removes_the_pod_after_its_grace_period() {
    let (client, api, ns) = setup("grace").await;
    create(&api, &pod("g", json!({}), 3)).await;
    wait_for(&api, "g", 20, "Ready", |p| p.is_some_and(is_ready)).await;

    let start = Instant::now();
    api.delete("g", &DeleteParams::default())
        .await
        .expect("delete");
    wait_for(&api, "g", 5, "not Ready while terminating", |p| {
        p.is_some_and(|p| p.metadata.deletion_timestamp.is_some() && !is_ready(p))
    })
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "not Ready at once"
    );
    wait_for(&api, "g", 20, "gone", |p| p.is_none()).await;
    let took = start.elapsed();
    // deletionTimestamp has second precision.
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(10),
        "took {took:?}"
    );
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn the_operator_identity_has_exactly_the_deploy_rbac() {
    let (client, api, ns) = setup("rbac").await;
    create(&api, &pod("p", json!({}), 0)).await;
    let operator = molecule_like_tests::kubernetes::client::client_from(
        &molecule_like_tests::paths::operator_kubeconfig_path(),
    )
    .await
    .expect("operator kubeconfig");
    let pods: Api<Pod> = Api::namespaced(operator.clone(), &ns);
    let listed = pods.list(&ListParams::default()).await.expect("list pods");
    assert_eq!(listed.items.len(), 1);
    for denied in [
        Api::<Secret>::namespaced(operator.clone(), &ns)
            .list(&ListParams::default())
            .await
            .map(|_| ()),
        // Nodes are listed and watched (cordons), never read one by one or written.
        Api::<Node>::all(operator.clone())
            .get("any-node")
            .await
            .map(|_| ()),
    ] {
        match denied {
            Err(kube::Error::Api(e)) => assert_eq!(e.code, 403, "{e:?}"),
            other => panic!("expected 403 Forbidden, got {other:?}"),
        }
    }
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn kubectl_works_against_the_server() {
    let (client, api, ns) = setup("kubectl").await;
    let Some(kubectl) = kubectl() else {
        panic!("kubectl not installed (control-plane install fetches it)");
    };
    create(&api, &pod("shown", json!({}), 0)).await;
    wait_for(&api, "shown", 20, "Ready", |p| p.is_some_and(is_ready)).await;
    let out = std::process::Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(molecule_like_tests::paths::kubeconfig_path())
        .args(["get", "pods", "-n", &ns, "-o", "wide"])
        .output()
        .expect("run kubectl");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("shown") && table.contains("Running") && table.contains(NODE),
        "{table}"
    );
    delete_namespace(&client, &ns).await;
}
