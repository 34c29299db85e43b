//! kube-runtime wiring: watch CephOSDs and their pods, reconcile = observe → plan → act.
//!
//! Pods and ReplicaSets come from the watch caches, trusted only once they show every write of
//! ours (`owned_objects`): a stale "no pod" would mean a second pod on a disk; a plan that takes
//! pods down is made again from a fresh read first. CephOSDs are watched in every namespace
//! (a disk listed by two of them belongs to the older one, wherever it lives); only those of
//! the watched namespace are reconciled.
//!
//! Here the watches are wired to the reconcile (`watches`: what they bring); `reconcile` runs
//! its steps in order: `admit` (the finalizer), `plan_inputs` (observe, and plan from what was
//! observed), `ask_ceph` (asking Ceph while reading again), `carry_out` (act, remember, finish),
//! all on the `context` every reconcile shares.

mod admit;
mod ask_ceph;
mod carry_out;
pub(crate) mod context;
mod plan_inputs;
mod reconcile;
mod reconcile_error;
mod topology_inputs;
mod watches;

use crate::ceph::{CephClient, CliClient};
use crate::crd::object_key;
use crate::labels;
use crate::runtime::backoff::{Backoff, WatchRetry};
use crate::runtime::ceph::cluster_lock::CephStepLocks;
use crate::runtime::ceph::lock_place::LockPlaceRecord;
use crate::runtime::ceph::metered_ceph::MeteredCeph;
use crate::runtime::controller::context::{in_scope, Context, Settings};
use crate::runtime::controller::reconcile::{error_policy, timed_reconcile};
use crate::runtime::controller::reconcile_error::ReconcileError;
use crate::runtime::controller::watches::{
    cephosds_of_pod, logging_errors, only_osd_pods, owner_of, readable_only, SpecVersions,
};
use crate::runtime::memory::Memory;
use crate::runtime::observe::budget_inputs::{budget_mappers, watch_budgets_and_nodes};
use crate::runtime::observe::claims_registry::ClaimsRegistry;
use crate::runtime::observe::owned_objects::{strip_replica_set, OwnedObjects};
use crate::runtime::observe::watched_cephosd::WatchedCephOsd;
use crate::runtime::observe::watched_pod::{self, WatchedPod};
use crate::runtime::serve::metrics::Metrics;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::controller::{self, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Client, ResourceExt};
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, warn};

/// Runs the controller until SIGTERM / Ctrl-C.
pub(crate) async fn run(client: Client, settings: Settings, metrics: Arc<Metrics>) {
    let (pods, replica_sets): (Api<WatchedPod>, Api<ReplicaSet>) = match &settings.namespace {
        Some(ns) => (
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client.clone(), ns),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let crs: Api<WatchedCephOsd> = Api::all(client.clone());
    let recorder = event_recorder(&client);
    // Each watch retries on its own (100 ms doubling to 2 s) and its errors stop there: a
    // watch that has to relist after an outage does not hold the others back.
    let (store, writer) = reflector::store();
    let (specs_changed, spec_changes) = futures::channel::mpsc::unbounded::<()>();
    let mut generations = SpecVersions::default();
    let watched_namespace = settings.namespace.clone();
    let memory = Arc::new(Memory::default());
    let (memory_of_crs, crs_seen) = (memory.clone(), store.clone());
    let cr_events = readable_only(
        watcher(crs, watcher::Config::default()).backoff(WatchRetry::default()),
        client.clone(),
        recorder.clone(),
        settings.namespace.clone(),
    )
    .reflect(writer)
    .inspect(move |event| {
        if let Ok(event) = event {
            // A CephOSD that appears, goes or changes its spec may change who holds which
            // disk: every CephOSD is reconciled again.
            if generations.changed_by(event) {
                let _ = specs_changed.unbounded_send(());
            }
            memory_of_crs.forget_gone(&crs_seen, event);
        }
    })
    .applied_objects()
    .try_filter(move |cr| {
        std::future::ready(in_scope(
            watched_namespace.as_deref(),
            cr.namespace().as_deref(),
        ))
    });
    // Every OSD pod: by owner label (the reference operator's pods carry an ownerReference
    // without `controller: true`, and they must trigger us too) or by a CephOSD controller
    // reference (a pod we control is ours whatever its labels). Other pods never reach the
    // cache.
    let (pod_store, pod_writer) = reflector::store();
    let pod_events = watcher(pods, watcher::Config::default())
        .backoff(WatchRetry::default())
        .map_ok(watched_pod::into_pod_event)
        .try_filter_map(|event| std::future::ready(Ok(only_osd_pods(event))))
        .reflect(pod_writer)
        .touched_objects();
    // The Ansible operator's ReplicaSets (migrated away from by the rollout).
    let (replica_set_store, replica_set_writer) = reflector::store();
    let replica_set_events = watcher(
        replica_sets,
        watcher::Config::default().labels(labels::OWNER),
    )
    .backoff(WatchRetry::default())
    .modify(strip_replica_set)
    .reflect(replica_set_writer)
    .touched_objects();
    // PodDisruptionBudgets (ours, and anyone's that may select OSD pods) and cordons.
    let (budget_caches, (budget_events, node_events)) =
        watch_budgets_and_nodes(&client, settings.namespace.as_deref());
    let claims = Arc::new(ClaimsRegistry::default());
    let ceph_locks = (settings.gate.lock_namespace.as_deref()).map(|ns| step_locks(&client, ns));
    let context = Arc::new(Context {
        budget_caches,
        backoff: Backoff::new(settings.retry, Duration::from_secs(300)),
        client,
        recorder,
        metrics: metrics.clone(),
        owned: OwnedObjects::new(pod_store, replica_set_store, memory.clone()),
        memory,
        crs: store.clone(),
        claims: claims.clone(),
        ceph: settings.ceph.clone().map(|s| {
            Arc::new(MeteredCeph {
                inner: Arc::new(CliClient::new(s)),
                metrics: metrics.clone(),
            }) as Arc<dyn CephClient>
        }),
        ceph_locks,
        settings,
    });
    let pods_of = {
        let (claims, namespace) = (claims.clone(), context.settings.namespace.clone());
        move |pod: Pod| cephosds_of_pod(&pod, &claims, namespace.as_deref())
    };
    let (budgets_of, on_node) = budget_mappers(&store, context.settings.namespace.as_deref());
    Controller::for_stream(logging_errors(cr_events, "CephOSD"), store)
        .watches_stream(logging_errors(pod_events, "Pod"), pods_of)
        .watches_stream(logging_errors(replica_set_events, "ReplicaSet"), owner_of)
        .watches_stream(
            logging_errors(budget_events, "PodDisruptionBudget"),
            budgets_of,
        )
        .watches_stream(logging_errors(node_events, "Node"), on_node)
        .reconcile_all_on(spec_changes)
        .shutdown_on_signal()
        .run(timed_reconcile, error_policy, context.clone())
        .for_each(|result| {
            after_reconcile(result, &context);
            std::future::ready(())
        })
        .await;
}

/// Events as `ceph-osd-operator`, this pod's instance.
fn event_recorder(client: &Client) -> Recorder {
    let reporter = Reporter {
        controller: "ceph-osd-operator".into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    Recorder::new(client.clone(), reporter)
}

/// Logs a controller error; a reconcile due for a CephOSD that was deleted drops everything
/// kept of it.
fn after_reconcile<T>(
    result: Result<T, controller::Error<ReconcileError, watcher::Error>>,
    context: &Context,
) {
    match result {
        Err(controller::Error::ObjectNotFound(object)) => {
            debug!(%object, "event for a CephOSD that no longer exists");
            let namespace = object.namespace.as_deref().unwrap_or_default();
            context.metrics.forget(namespace, &object.name);
            context.memory.forget(&object_key(namespace, &object.name));
        }
        Err(error) => warn!(%error, "controller error"),
        Ok(_) => {}
    }
}

/// The step locks of Ceph clusters in `namespace`, each new step checking the lock's place
/// recorded in Ceph first.
fn step_locks(client: &Client, namespace: &str) -> Arc<CephStepLocks> {
    let place = LockPlaceRecord::new(client.clone(), namespace);
    Arc::new(CephStepLocks::new(client.clone(), namespace).with_place(place))
}

#[cfg(test)]
mod fresh_read_tests;
