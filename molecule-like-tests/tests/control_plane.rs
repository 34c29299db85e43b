//! The local control plane itself: Pods through the proxy with the typed client (as the
//! operator uses them), the test kubelet, the garbage collector, Leases/Events, kubectl.
//!
//! Needs a running control plane:
//! `molecule-like-tests/control-plane install && molecule-like-tests/control-plane up`.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, ResourceExt};
use molecule_like_tests::kubelet::{READY_AFTER_ANNOTATION, READY_ANNOTATION};
use molecule_like_tests::rewrite::KUBELET_FINALIZER;
use molecule_like_tests::scenario::{is_ready, kubectl};
use serde_json::{json, Value};

async fn client() -> Client {
    match molecule_like_tests::test_client().await {
        Ok(c) => c,
        Err(e) => panic!("{e:#}"),
    }
}

/// A namespace of its own per test (the server needs no Namespace object).
fn namespace(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("cp-{test}-{:x}", nanos % 0xffffff)
}

fn pod(name: &str, labels: Value, annotations: Value, grace: Option<i64>) -> Pod {
    let mut spec = json!({"containers": [{"name": "main", "image": "busybox:1"}]});
    if let Some(g) = grace {
        spec["terminationGracePeriodSeconds"] = json!(g);
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": spec,
    }))
    .expect("valid pod")
}

fn phase(p: &Pod) -> Option<String> {
    p.status.as_ref().and_then(|s| s.phase.clone())
}

/// Creates `object`; panics with `what` when that fails.
async fn create<K>(api: &Api<K>, object: &K, what: &str) -> K
where
    K: Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), object)
        .await
        .expect(what)
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

#[tokio::test]
async fn pods_crud_through_the_typed_api() {
    let client = client().await;
    let ns = namespace("crud");
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);

    // Watch from "now" before creating anything: events must arrive promptly (no buffering).
    let list = api.list(&ListParams::default()).await.expect("list");
    let rv = list.metadata.resource_version.clone().unwrap_or_default();
    let mut watch = api
        .watch(&WatchParams::default().labels("app=crud").timeout(30), &rv)
        .await
        .expect("watch")
        .boxed();

    let created = create(
        &api,
        &pod("crud-a", json!({"app": "crud"}), json!({}), None),
        "create",
    )
    .await;
    assert_eq!(
        created.metadata.finalizers.as_deref(),
        Some(&[KUBELET_FINALIZER.to_string()][..])
    );
    create(
        &api,
        &pod("crud-b", json!({"app": "other"}), json!({}), None),
        "create b",
    )
    .await;

    let first = tokio::time::timeout(Duration::from_secs(5), watch.try_next())
        .await
        .expect("watch event within 5s")
        .expect("watch ok")
        .expect("an event");
    match first {
        WatchEvent::Added(p) => assert_eq!(p.name_any(), "crud-a"),
        other => panic!("expected Added, got {other:?}"),
    }

    let selected = api
        .list(&ListParams::default().labels("app=crud"))
        .await
        .expect("list by label");
    assert_eq!(
        selected
            .items
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>(),
        ["crud-a"]
    );
    let all = api.list(&ListParams::default()).await.expect("list");
    assert_eq!(all.items.len(), 2);

    let got = api.get("crud-a").await.expect("get");
    assert_eq!(got.uid(), created.uid());

    let patched = api
        .patch(
            "crud-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"x": "y"}}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        patched.annotations().get("x").map(String::as_str),
        Some("y")
    );

    // Server-side apply creates (with the kubelet finalizer) and updates.
    let applied = api
        .patch(
            "crud-c",
            &PatchParams::apply("cp-test").force(),
            &Patch::Apply(pod("crud-c", json!({"app": "crud"}), json!({}), Some(0))),
        )
        .await
        .expect("server-side apply (create)");
    assert!(applied.finalizers().iter().any(|f| f == KUBELET_FINALIZER));
    let applied = api
        .patch(
            "crud-c",
            &PatchParams::apply("cp-test").force(),
            &Patch::Apply(pod(
                "crud-c",
                json!({"app": "crud", "v": "2"}),
                json!({}),
                Some(0),
            )),
        )
        .await
        .expect("server-side apply (update)");
    assert_eq!(applied.labels().get("v").map(String::as_str), Some("2"));

    // The watch saw the update of crud-a (as MODIFIED, typed).
    let mut saw_modified = false;
    while let Ok(Some(Ok(ev))) = tokio::time::timeout(Duration::from_secs(3), watch.next()).await {
        if let WatchEvent::Modified(p) = ev {
            if p.name_any() == "crud-a" && p.annotations().contains_key("x") {
                saw_modified = true;
                break;
            }
        }
    }
    assert!(saw_modified, "watch delivered the MODIFIED event");

    for name in ["crud-a", "crud-b", "crud-c"] {
        api.delete(name, &DeleteParams::default().grace_period(0))
            .await
            .expect("delete");
    }
    for name in ["crud-a", "crud-b", "crud-c"] {
        wait_for(&api, name, 10, "gone", |p| p.is_none()).await;
    }
}

#[tokio::test]
async fn invalid_pod_name_is_rejected_with_422() {
    let client = client().await;
    let api: Api<Pod> = Api::namespaced(client, &namespace("invalid"));
    match api
        .create(
            &PostParams::default(),
            &pod("Bad_Name", json!({}), json!({}), None),
        )
        .await
    {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422, "{e:?}");
            assert!(e.message.contains("metadata.name"), "{}", e.message);
        }
        other => panic!("expected 422, got {other:?}"),
    }
}

#[tokio::test]
async fn kubelet_makes_pods_ready_or_not() {
    let client = client().await;
    let api: Api<Pod> = Api::namespaced(client, &namespace("kubelet"));
    for (name, annotations) in [
        ("fast", json!({READY_AFTER_ANNOTATION: "0.5"})),
        ("never", json!({READY_ANNOTATION: "never"})),
        ("slow", json!({READY_AFTER_ANNOTATION: "4"})),
    ] {
        create(&api, &pod(name, json!({}), annotations, Some(0)), "create").await;
    }

    let fast = wait_for(&api, "fast", 15, "Ready", |p| p.is_some_and(is_ready))
        .await
        .expect("pod");
    assert_eq!(phase(&fast).as_deref(), Some("Running"));
    let status = fast.status.expect("status");
    assert!(status.pod_ip.is_some() && status.start_time.is_some());
    let types: Vec<_> = status
        .conditions
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

    // `slow` is Pending (not Ready) for a while.
    let slow = api.get("slow").await.expect("get");
    assert!(!is_ready(&slow), "slow must not be ready yet");

    wait_for(&api, "never", 15, "Running", |p| {
        p.is_some_and(|p| phase(p).as_deref() == Some("Running"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let never = api.get("never").await.expect("get");
    assert!(!is_ready(&never), "never must stay unready");

    wait_for(&api, "slow", 15, "Ready", |p| p.is_some_and(is_ready)).await;

    // Flipping the annotation makes it Ready (level-driven).
    api.patch(
        "never",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {READY_ANNOTATION: null}}})),
    )
    .await
    .expect("patch");
    wait_for(&api, "never", 15, "Ready after annotation removed", |p| {
        p.is_some_and(is_ready)
    })
    .await;

    for n in ["fast", "never", "slow"] {
        api.delete(n, &DeleteParams::default())
            .await
            .expect("delete");
    }
}

#[tokio::test]
async fn deletion_is_graceful_then_404() {
    let client = client().await;
    let api: Api<Pod> = Api::namespaced(client, &namespace("grace"));
    // 30 s × the default scale 0.1 = 3 s.
    create(&api, &pod("g", json!({}), json!({}), Some(30)), "create").await;
    wait_for(&api, "g", 15, "Ready", |p| p.is_some_and(is_ready)).await;

    let start = Instant::now();
    let resp = api
        .delete("g", &DeleteParams::default())
        .await
        .expect("delete");
    let terminating = resp
        .left()
        .expect("DELETE returns the object while it terminates");
    assert!(terminating.metadata.deletion_timestamp.is_some());

    tokio::time::sleep(Duration::from_millis(1000)).await;
    let still = api.get_opt("g").await.expect("get");
    assert!(
        still
            .as_ref()
            .is_some_and(|p| p.metadata.deletion_timestamp.is_some()),
        "pod still present, terminating, 1 s after DELETE"
    );
    wait_for(&api, "g", 15, "gone", |p| p.is_none()).await;
    let took = start.elapsed();
    // deletionTimestamp has second precision, so up to 1 s less than 3 s.
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(8),
        "took {took:?}"
    );
    match api.get("g").await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 404);
            assert!(e.message.starts_with("pods \"g\""), "{}", e.message);
        }
        other => panic!("expected 404, got {other:?}"),
    }

    // Force deletion (grace period 0) skips graceful termination.
    create(&api, &pod("f", json!({}), json!({}), Some(300)), "create").await;
    let start = Instant::now();
    api.delete("f", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete");
    wait_for(&api, "f", 5, "gone", |p| p.is_none()).await;
    assert!(start.elapsed() < Duration::from_secs(3));
}

fn owner_ref(lease: &Lease) -> OwnerReference {
    OwnerReference {
        api_version: "coordination.k8s.io/v1".into(),
        kind: "Lease".into(),
        name: lease.name_any(),
        uid: lease.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

#[tokio::test]
async fn garbage_collector_deletes_orphaned_pods() {
    let client = client().await;
    let ns = namespace("gc");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let mk_lease = |name: &str| -> Lease {
        serde_json::from_value(
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": {"holderIdentity": "test"}}),
        )
        .expect("lease")
    };
    let owner = create(&leases, &mk_lease("owner"), "lease").await;
    let keeper = create(&leases, &mk_lease("keeper"), "lease").await;
    let fg = create(&leases, &mk_lease("fg"), "lease").await;

    let owned = |name: &str, o: &Lease| {
        let mut p = pod(name, json!({}), json!({}), Some(0));
        p.metadata.owner_references = Some(vec![owner_ref(o)]);
        p
    };
    create(&pods, &owned("doomed", &owner), "create").await;
    create(&pods, &owned("kept", &keeper), "create").await;
    create(&pods, &owned("fg-dep", &fg), "create").await;
    // Owner name exists, but with another uid: the real owner is gone.
    let mut stale = owner_ref(&keeper);
    stale.uid = "00000000-0000-0000-0000-000000000000".into();
    let mut p = pod("stale", json!({}), json!({}), Some(0));
    p.metadata.owner_references = Some(vec![stale]);
    create(&pods, &p, "create").await;

    leases
        .delete("owner", &DeleteParams::background())
        .await
        .expect("delete lease");
    wait_for(&pods, "doomed", 15, "garbage-collected", |p| p.is_none()).await;
    wait_for(&pods, "stale", 15, "garbage-collected", |p| p.is_none()).await;

    // Foreground: the owner stays until its dependents are gone.
    let resp = leases
        .delete("fg", &DeleteParams::foreground())
        .await
        .expect("delete lease");
    assert!(
        resp.is_left(),
        "foreground deletion keeps the owner for now"
    );
    wait_for(&pods, "fg-dep", 15, "garbage-collected", |p| p.is_none()).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while leases.get_opt("fg").await.expect("get").is_some() {
        assert!(
            Instant::now() < deadline,
            "foreground-deleted owner still present"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    tokio::time::sleep(Duration::from_secs(2)).await;
    let kept = pods.get("kept").await.expect("kept pod still there");
    assert!(kept.metadata.deletion_timestamp.is_none());
    pods.delete("kept", &DeleteParams::default())
        .await
        .expect("delete");
    leases
        .delete("keeper", &DeleteParams::default())
        .await
        .expect("delete");
}

#[tokio::test]
async fn leases_and_events_work() {
    let client = client().await;
    let ns = namespace("events");
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let lease: Lease = serde_json::from_value(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}))
    .expect("lease");
    create(&leases, &lease, "create lease").await;
    let got = leases
        .patch(
            "leader",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"holderIdentity": "b"}})),
        )
        .await
        .expect("patch lease");
    assert_eq!(
        got.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("b")
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let p = create(
        &pods,
        &pod("evented", json!({}), json!({}), Some(0)),
        "create",
    )
    .await;
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(p.name_any()),
        namespace: Some(ns.clone()),
        uid: p.uid(),
        ..Default::default()
    };
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "cp-test".into(),
            instance: None,
        },
    );
    recorder
        .publish(
            &Event {
                type_: EventType::Normal,
                reason: "Tested".into(),
                note: Some("an event through kube-runtime's Recorder".into()),
                action: "Test".into(),
                secondary: None,
            },
            &reference,
        )
        .await
        .expect("publish event");
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), &ns);
    let list = events
        .list(&ListParams::default())
        .await
        .expect("list events");
    assert!(list
        .items
        .iter()
        .any(|e| e.reason.as_deref() == Some("Tested")));
    pods.delete("evented", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete");
}

#[tokio::test]
async fn discovery_serves_core_pods() {
    let client = client().await;
    let versions = client.list_core_api_versions().await.expect("/api");
    assert_eq!(versions.versions, ["v1"]);
    let resources = client.list_core_api_resources("v1").await.expect("/api/v1");
    let pods = resources
        .resources
        .iter()
        .find(|r| r.name == "pods")
        .expect("pods listed");
    assert!(pods.namespaced);
    assert_eq!(pods.kind, "Pod");
    for verb in ["create", "delete", "get", "list", "patch", "watch"] {
        assert!(pods.verbs.iter().any(|v| v == verb), "{verb}");
    }
    let groups = client.list_api_groups().await.expect("/apis");
    assert!(groups
        .groups
        .iter()
        .any(|g| g.name == "coordination.k8s.io"));
}

#[tokio::test]
async fn kubectl_get_pods_works() {
    let client = client().await;
    let Some(kubectl) = kubectl() else {
        eprintln!("kubectl not installed: skipping (control-plane install fetches it)");
        return;
    };
    let ns = namespace("kubectl");
    let api: Api<Pod> = Api::namespaced(client, &ns);
    create(
        &api,
        &pod("shown", json!({"app": "k"}), json!({}), Some(0)),
        "create",
    )
    .await;
    wait_for(&api, "shown", 15, "Ready", |p| p.is_some_and(is_ready)).await;
    let kubeconfig = molecule_like_tests::kubeconfig_path();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
            .expect("run kubectl");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let table = run(&["get", "pods", "-n", &ns]);
    assert!(
        table.contains("NAME") && table.contains("shown") && table.contains("Running"),
        "{table}"
    );
    let names = run(&["get", "pods", "-n", &ns, "-l", "app=k", "-o", "name"]);
    assert_eq!(names.trim(), "pod/shown");
    let yaml = run(&["get", "pod", "shown", "-n", &ns, "-o", "yaml"]);
    assert!(yaml.starts_with("apiVersion: v1\n"), "{yaml}");
    run(&[
        "delete",
        "pod",
        "shown",
        "-n",
        &ns,
        "--wait=true",
        "--timeout=20s",
    ]);
    assert!(api.get_opt("shown").await.expect("get").is_none());

    // kubectl apply validates against the OpenAPI document the proxy serves for api/v1.
    let manifest = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: applied, namespace: {ns}}}\n\
         spec: {{containers: [{{name: c, image: busybox}}], terminationGracePeriodSeconds: 0}}\n"
    );
    let mut child = std::process::Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["apply", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl apply");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(manifest.as_bytes())
            .expect("write manifest");
    }
    let out = child.wait_with_output().expect("kubectl apply");
    assert!(
        out.status.success(),
        "kubectl apply: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let applied = api.get("applied").await.expect("applied pod exists");
    assert!(applied.finalizers().iter().any(|f| f == KUBELET_FINALIZER));
    let explain = run(&["explain", "pod.spec.containers.image"]);
    assert!(explain.contains("VERSION:    v1"), "{explain}");
    api.delete("applied", &DeleteParams::default())
        .await
        .expect("delete");
}
