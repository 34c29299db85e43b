//! A reconcile against a scripted API server whose state moved on while the watch cache did
//! not: a plan that takes pods down is made again from a fresh read, so a stale cache never
//! decides a deletion.

use super::*;
use crate::crd::CephOsd;
use crate::crd::UpdateDomain;
use crate::plan::rules::deletion;
use crate::plan::tests::{converged, cr};
use crate::runtime::ceph::gate_questions::GateSettings;
use crate::runtime::controller::reconcile::reconcile;
use crate::runtime::memory::Memory;
use crate::runtime::observe::budget_inputs::BudgetCaches;
use crate::runtime::scripted_api::{scripted_client, Received, Sent};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};

/// What the API server holds: every GET and LIST is answered from it, every write succeeds
/// (echoing its body).
#[derive(Clone)]
struct ServerState {
    cr: Value,
    pods: Vec<Value>,
}

impl ServerState {
    fn answer(&self, sent: &Sent) -> Value {
        let list = |kind: &str, items: &[Value]| {
            json!({"apiVersion": "v1", "kind": kind,
                   "metadata": {"resourceVersion": "100"}, "items": items})
        };
        match (&sent.method, sent.path.as_str()) {
            (&Method::GET, p) if p.ends_with("/pods") => list("PodList", &self.pods),
            (&Method::GET, p) if p.ends_with("/replicasets") => list("ReplicaSetList", &[]),
            (&Method::GET, p) if p.contains("/cephosds/") => self.cr.clone(),
            (&Method::PATCH, p) if p.ends_with("/status") => {
                let mut cr = self.cr.clone();
                cr["status"] = sent.body["status"].clone();
                cr
            }
            _ => sent.body.clone(),
        }
    }

    fn client(self) -> (Received, Client) {
        scripted_client("ceph", move |sent| {
            let reply = self.answer(&sent);
            async move { (StatusCode::OK, reply) }
        })
    }
}

/// The paths of the requests with `method` whose path contains `part`.
fn paths(received: &Received, method: &Method, part: &str) -> Vec<String> {
    (received.all().into_iter())
        .filter(|s| s.method == method && s.path.contains(part))
        .map(|s| s.path)
        .collect()
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
            ceph: None,
            gate: GateSettings::default(),
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
        ceph: None,
        ceph_locks: None,
        budget_caches: BudgetCaches {
            budgets: synced_store(vec![]),
            nodes: synced_store(vec![]),
            // Never synced (its sender is gone): these reconciles plan without a budget.
            synced: tokio::sync::watch::channel(false).1,
        },
    })
}

/// Two hosts by host, converged on template 1, now on template 2 (their pods out of date);
/// the cached pods, and the API server holding those of them `served` keeps.
fn template_change(served: impl Fn(&Pod) -> bool) -> (CephOsd, Vec<Pod>, ServerState) {
    let old = cr(UpdateDomain::Host, &["a", "b"], &["/dev/sdb"], "1");
    let cluster = converged(&old);
    let mut new = cr(UpdateDomain::Host, &["a", "b"], &["/dev/sdb"], "2");
    new.metadata.resource_version = Some("7".into());
    new.metadata.finalizers = Some(vec![deletion::FINALIZER.to_owned()]);
    new.status.clone_from(&cluster.status);
    let cached = cluster.pods;
    assert_eq!(cached.len(), 2);
    let server = ServerState {
        cr: serde_json::to_value(&new).expect("cr"),
        pods: (cached.iter())
            .filter(|p| served(p))
            .map(|p| serde_json::to_value(p).expect("pod"))
            .collect(),
    };
    (new, cached, server)
}

/// The cache shows both old pods Ready, so host a would go first. Meanwhile host b's pod was
/// deleted (the operator was frozen, say): read afresh, b is down already, so a must wait, and
/// b's pod is recreated.
#[tokio::test]
async fn a_stale_cache_never_decides_a_deletion() {
    let (new, cached, server) = template_change(|p| p.name_any().starts_with("osd-a-"));
    let (received, client) = server.client();
    let ctx = context(client, &new, cached);

    Box::pin(reconcile(Arc::new(new), ctx))
        .await
        .expect("reconciled");

    assert!(
        paths(&received, &Method::DELETE, "/pods").is_empty(),
        "a pod was deleted on the cache's word: {:?}",
        received.all()
    );
    assert_eq!(
        paths(&received, &Method::GET, "/pods").len(),
        1,
        "the pods are listed afresh before a deletion"
    );
    assert_eq!(
        paths(&received, &Method::GET, "/cephosds/ceph-osds").len(),
        1
    );
    assert_eq!(
        paths(&received, &Method::POST, "/pods").len(),
        1,
        "b's pod is recreated"
    );
}

/// The same cache with an API server that agrees with it: the plan stands, host a goes.
#[tokio::test]
async fn a_fresh_read_that_agrees_lets_the_step_go() {
    let (new, cached, server) = template_change(|_| true);
    let (received, client) = server.client();
    let ctx = context(client, &new, cached);

    Box::pin(reconcile(Arc::new(new), ctx))
        .await
        .expect("reconciled");

    let deleted = paths(&received, &Method::DELETE, "/pods");
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    assert!(deleted[0].contains("/pods/osd-a-"), "{deleted:?}");
}
