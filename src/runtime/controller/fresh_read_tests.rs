//! A reconcile against a scripted API server whose state moved on while the watch cache did
//! not: a plan that takes pods down is made again from a fresh read, so a stale cache never
//! decides a deletion.

use super::*;
use crate::crd::UpdateDomain;
use crate::plan::tests::{converged, cr};
use crate::runtime::memory::Memory;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Mutex;

/// What the API server holds, and the requests it got as (method, path).
#[derive(Clone, Default)]
struct ScriptedServer {
    cr: Value,
    pods: Vec<Value>,
    sent: Arc<Mutex<Vec<(Method, String)>>>,
}

impl ScriptedServer {
    /// Answers GETs and LISTs from what it holds; every write succeeds, echoing its body.
    fn client(&self) -> Client {
        let server = self.clone();
        let service = tower::service_fn(move |request: Request<kube::client::Body>| {
            let server = server.clone();
            async move {
                let (parts, body) = request.into_parts();
                let bytes = body
                    .collect()
                    .await
                    .map_err(tower::BoxError::from)?
                    .to_bytes();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let path = parts.uri.path().to_owned();
                server
                    .sent
                    .lock()
                    .expect("lock")
                    .push((parts.method.clone(), path.clone()));
                let list = |kind: &str, items: &[Value]| {
                    json!({"apiVersion": "v1", "kind": kind,
                           "metadata": {"resourceVersion": "100"}, "items": items})
                };
                let reply = match (&parts.method, path.as_str()) {
                    (&Method::GET, p) if p.ends_with("/pods") => list("PodList", &server.pods),
                    (&Method::GET, p) if p.ends_with("/replicasets") => list("ReplicaSetList", &[]),
                    (&Method::GET, p) if p.contains("/cephosds/") => server.cr.clone(),
                    (&Method::PATCH, p) if p.ends_with("/status") => {
                        let mut cr = server.cr.clone();
                        cr["status"] = body["status"].clone();
                        cr
                    }
                    _ => body,
                };
                let mut response = Response::new(Full::new(Bytes::from(reply.to_string())));
                *response.status_mut() = StatusCode::OK;
                Ok::<_, tower::BoxError>(response)
            }
        });
        Client::new(service, "ceph")
    }

    fn sent(&self, method: &Method, kind: &str) -> Vec<String> {
        let sent = self.sent.lock().expect("lock");
        (sent.iter())
            .filter(|(m, p)| m == method && p.contains(kind))
            .map(|(_, p)| p.clone())
            .collect()
    }
}

/// A store that has synced with `objects`.
fn synced_store<K>(objects: Vec<K>) -> reflector::Store<K>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (store, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(object));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    store
}

fn context(client: Client, cr: &CephOsd, cached_pods: Vec<Pod>) -> Arc<Context> {
    let memory = Arc::new(Memory::default());
    let reporter = Reporter {
        controller: "test".into(),
        instance: None,
    };
    Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter),
        client,
        settings: Settings {
            namespace: Some("ceph".into()),
            resync: Duration::from_secs(300),
            retry: Duration::from_secs(5),
        },
        backoff: Backoff::new(Duration::from_secs(5), Duration::from_secs(300)),
        metrics: Arc::new(Metrics::default()),
        owned: OwnedObjects::new(
            synced_store(cached_pods),
            synced_store(vec![]),
            memory.clone(),
        ),
        memory,
        crs: synced_store(vec![cr.clone()]),
        claims: Arc::new(ClaimsRegistry::default()),
    })
}

/// Two hosts by host, a template change: the cache shows both old pods Ready, so host a goes
/// first. Meanwhile host b's pod was deleted (the operator was frozen, say): read afresh, b is
/// down already, so a must wait, and b's pod is recreated.
#[tokio::test]
async fn a_stale_cache_never_decides_a_deletion() {
    let old = cr(UpdateDomain::Host, &["a", "b"], &["/dev/sdb"], "1");
    let cluster = converged(&old);
    let mut new = cr(UpdateDomain::Host, &["a", "b"], &["/dev/sdb"], "2");
    new.metadata.resource_version = Some("7".into());
    new.status.clone_from(&cluster.status);
    let cached = cluster.pods.clone();
    assert_eq!(cached.len(), 2);
    let on_a = |p: &Pod| p.name_any().starts_with("osd-a-");
    let server = ScriptedServer {
        cr: serde_json::to_value(&new).expect("cr"),
        pods: (cached.iter())
            .filter(|p| on_a(p))
            .map(|p| serde_json::to_value(p).expect("pod"))
            .collect(),
        sent: Arc::default(),
    };
    let ctx = context(server.client(), &new, cached.clone());

    reconcile(Arc::new(new), ctx).await.expect("reconciled");

    assert!(
        server.sent(&Method::DELETE, "/pods").is_empty(),
        "a pod was deleted on the cache's word: {:?}",
        server.sent.lock().expect("lock")
    );
    assert_eq!(
        server.sent(&Method::GET, "/pods").len(),
        1,
        "the pods are listed afresh before a deletion"
    );
    assert_eq!(server.sent(&Method::GET, "/cephosds/ceph-osds").len(), 1);
    assert_eq!(
        server.sent(&Method::POST, "/pods").len(),
        1,
        "b's pod is recreated"
    );
}

/// The same cache with an API server that agrees with it: the plan stands, host a goes.
#[tokio::test]
async fn a_fresh_read_that_agrees_lets_the_step_go() {
    let old = cr(UpdateDomain::Host, &["a", "b"], &["/dev/sdb"], "1");
    let cluster = converged(&old);
    let mut new = cr(UpdateDomain::Host, &["a", "b"], &["/dev/sdb"], "2");
    new.metadata.resource_version = Some("7".into());
    new.status.clone_from(&cluster.status);
    let cached = cluster.pods.clone();
    let server = ScriptedServer {
        cr: serde_json::to_value(&new).expect("cr"),
        pods: (cached.iter())
            .map(|p| serde_json::to_value(p).expect("pod"))
            .collect(),
        sent: Arc::default(),
    };
    let ctx = context(server.client(), &new, cached);

    reconcile(Arc::new(new), ctx).await.expect("reconciled");

    let deleted = server.sent(&Method::DELETE, "/pods");
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    assert!(deleted[0].contains("/pods/osd-a-"), "{deleted:?}");
}
