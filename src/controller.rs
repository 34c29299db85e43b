//! kube-runtime wiring: watch CephOSDs and their pods, reconcile = observe → plan → act.
//!
//! Pods and ReplicaSets come from the watch caches, trusted only once they show every write of
//! ours (`owned_objects`): a stale "no pod" would mean a second pod on a disk.

use crate::backoff::{Backoff, WatchRetry};
use crate::crd::CephOsd;
use crate::executor::{ExecuteError, Executor};
use crate::expanded_spec::ExpandedSpecs;
use crate::failure::Failure;
use crate::labels;
use crate::metrics::Metrics;
use crate::osd::RandomSuffix;
use crate::owned_objects::{strip_replica_set, OwnedObjects, Snapshot};
use crate::plan::{plan_expanded, Observed};
use crate::watched_pod::{self, WatchedPod};
use crate::written_status::WrittenStatuses;
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Client, ResourceExt};
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, info, warn};

/// Settings of one operator process.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Watch only this namespace (None: all namespaces).
    pub namespace: Option<String>,
    /// Periodic resync of every CephOSD.
    pub resync: Duration,
    /// Delay before the first retry of a failed reconcile (doubling up to 5 minutes).
    pub retry: Duration,
}

struct Context {
    client: Client,
    settings: Settings,
    recorder: Recorder,
    backoff: Backoff,
    metrics: Arc<Metrics>,
    written: WrittenStatuses,
    owned: OwnedObjects,
    expanded: ExpandedSpecs,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    #[error("failed to list the pods or ReplicaSets of CephOSD {cr}: {source}")]
    List {
        cr: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Execute(#[from] ExecuteError),
}

impl ReconcileError {
    pub(crate) fn category(&self) -> Failure {
        match self {
            Self::List { .. } => Failure::List,
            Self::Execute(e) => e.category(),
        }
    }
}

/// Runs the controller until SIGTERM / Ctrl-C.
pub(crate) async fn run(client: Client, settings: Settings, metrics: Arc<Metrics>) {
    let (crs, pods, replica_sets): (Api<CephOsd>, Api<WatchedPod>, Api<ReplicaSet>) =
        match &settings.namespace {
            Some(ns) => (
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
            ),
            None => (
                Api::all(client.clone()),
                Api::all(client.clone()),
                Api::all(client.clone()),
            ),
        };
    let reporter = Reporter {
        controller: "ceph-osd-operator".into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    // Each watch retries on its own (100 ms doubling to 2 s) and its errors stop there: a
    // watch that has to relist after an outage does not hold the others back.
    let (store, writer) = reflector::store();
    let cr_events = watcher(crs, watcher::Config::default())
        .backoff(WatchRetry::default())
        .reflect(writer)
        .applied_objects();
    // Label-based, not ownerReference-based: pods made by the reference operator carry an
    // ownerReference without `controller: true`, and they must trigger us too.
    let (pod_store, pod_writer) = reflector::store();
    let pod_events = watcher(pods, watcher::Config::default().labels(labels::OWNER))
        .backoff(WatchRetry::default())
        .map_ok(watched_pod::into_pod_event)
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
    let context = Arc::new(Context {
        backoff: Backoff::new(settings.retry, Duration::from_secs(300)),
        client,
        settings,
        recorder,
        metrics: metrics.clone(),
        written: WrittenStatuses::default(),
        owned: OwnedObjects::new(pod_store, replica_set_store),
        expanded: ExpandedSpecs::default(),
    });
    Controller::for_stream(logging_errors(cr_events, "CephOSD"), store)
        .watches_stream(logging_errors(pod_events, "Pod"), owner_of)
        .watches_stream(logging_errors(replica_set_events, "ReplicaSet"), owner_of)
        .shutdown_on_signal()
        .run(timed_reconcile, error_policy, context.clone())
        .for_each(|result| {
            let context = context.clone();
            async move {
                match result {
                    // A pod event for a CephOSD that was just deleted: only its metrics and
                    // expectations to drop.
                    Err(controller::Error::ObjectNotFound(object)) => {
                        debug!(%object, "event for a CephOSD that no longer exists");
                        let namespace = object.namespace.as_deref().unwrap_or_default();
                        context.metrics.forget(namespace, &object.name);
                        context.owned.forget(namespace, &object.name);
                        context.expanded.forget(namespace, &object.name);
                    }
                    Err(error) => warn!(%error, "controller error"),
                    Ok(_) => {}
                }
            }
        })
        .await;
}

/// `events` without its errors, which are logged: the watch behind it retries by itself.
fn logging_errors<K: Send + 'static>(
    events: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
    kind: &'static str,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
    events.filter_map(move |event| async move {
        match event {
            Ok(object) => Some(Ok(object)),
            Err(error) => {
                warn!(%error, watch = kind, "watch failed; retrying");
                None
            }
        }
    })
}

/// The CephOSD an object belongs to, from its owner label `CephOSD-<name>`.
#[allow(clippy::needless_pass_by_value)] // the mapper signature `watches_stream` wants
fn owner_of<K: ResourceExt>(object: K) -> Option<ObjectRef<CephOsd>> {
    let name = labels::owner_named_by(object.labels().get(labels::OWNER)?)?;
    Some(ObjectRef::new(name).within(&object.namespace()?))
}

async fn timed_reconcile(cr: Arc<CephOsd>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = std::time::Instant::now();
    let object = cr.object_key();
    let result = reconcile(cr, ctx.clone()).await;
    match &result {
        Ok(_) => ctx.backoff.succeeded(&object),
        Err(error) => ctx.metrics.failed(error.category(), started.elapsed()),
    }
    result
}

async fn reconcile(cr: Arc<CephOsd>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = std::time::Instant::now();
    let cr = ctx.written.latest(cr);
    if cr.metadata.deletion_timestamp.is_some() {
        // Garbage collection removes the pods through their ownerReferences.
        return Ok(Action::await_change());
    }
    let namespace = cr.namespace().unwrap_or_default();
    let cr_name = cr.object_key();
    let executor = Executor {
        pods: Api::namespaced(ctx.client.clone(), &namespace),
        replica_sets: Api::namespaced(ctx.client.clone(), &namespace),
        crs: Api::namespaced(ctx.client.clone(), &namespace),
        recorder: &ctx.recorder,
        cr: &cr,
    };
    // The API keeps whole seconds; so do we, so an unchanged status compares equal.
    let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH);
    let snapshot = ctx
        .owned
        .observe(&cr, &executor.pods, &executor.replica_sets, now)
        .await
        .map_err(|source| ReconcileError::List {
            cr: cr_name.clone(),
            source,
        })?;
    let observation = match snapshot {
        Snapshot::Plan(observation) => observation,
        Snapshot::Unchanged => {
            // Inputs exactly those of a plan with nothing to do: no planning, no API call.
            debug!(cephosd = %cr_name, unchanged = true, "reconciled");
            ctx.metrics.unchanged(started.elapsed());
            return Ok(Action::requeue(ctx.settings.resync));
        }
        // Our last writes are not in the caches yet: their watch events bring the next
        // reconcile (the requeue only covers a write that is never seen).
        Snapshot::Lagging => return Ok(Action::requeue(Duration::from_secs(1))),
    };
    let observed = Observed::new(
        observation.pods.iter().map(|p| &**p),
        observation.replica_sets.iter().map(|r| &**r),
    );
    let expanded = ctx.expanded.of(&cr);
    let plan = plan_expanded(&cr, &expanded, &observed, &mut RandomSuffix, now);
    let s = &plan.summary;
    macro_rules! reconciled {
        ($level:ident) => {
            $level!(
                cephosd = %cr_name,
                hash = %plan.template_hash,
                desired = s.desired, current = s.current, ready = s.ready, updated = s.updated,
                out_of_date = s.out_of_date, unready = s.unready, invalid = s.invalid,
                terminating = s.terminating, actions = plan.actions.len(),
                halted = plan.halted.as_deref().unwrap_or(""),
                "reconciled"
            )
        };
    }
    // INFO only when something changes: a resync of a settled CephOSD is a DEBUG line.
    let changes = !plan.actions.is_empty() || !plan.events.is_empty() || plan.status_changed;
    if changes {
        reconciled!(info);
    } else {
        reconciled!(debug);
    }
    let outcome = executor
        .carry_out(&plan, now, &|action| ctx.owned.written(&cr, action, now))
        .await;
    if let Some(status) = &outcome.status {
        ctx.written.remember(&cr, status);
    }
    let quiet = !changes && plan.requeue_after.is_none() && outcome.failed.is_none();
    ctx.owned.planned(&cr, &observation, quiet);
    if let Some(error) = outcome.failed {
        // The retry follows the error policy's backoff.
        return Err(error.into());
    }
    ctx.metrics
        .reconciled(&namespace, &cr.name_any(), &plan.summary, started.elapsed());
    let resync = ctx.settings.resync;
    let next = plan
        .requeue_after
        .and_then(|d| Duration::try_from(d).ok())
        .map_or(resync, |d| d.min(resync));
    Ok(Action::requeue(next))
}

#[allow(clippy::needless_pass_by_value)] // the signature `Controller::run` wants
fn error_policy(cr: Arc<CephOsd>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let object = cr.object_key();
    let delay = ctx.backoff.failed(&object);
    warn!(cephosd = %object, category = %error.category(), retry_in = ?delay, %error, "reconcile failed");
    Action::requeue(delay)
}
