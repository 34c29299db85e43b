//! kube-runtime wiring: watch CephOSDs and their pods, reconcile = observe → plan → act.
//!
//! Pods are listed from the API on every reconcile (a consistent read), never taken from a
//! cache that may lag behind our own writes: a stale "no pod" would mean a second pod on a disk.

use crate::backoff::Backoff;
use crate::crd::{owner_label_value, CephOsd};
use crate::executor::{ExecuteError, Executor};
use crate::labels;
use crate::metrics::Metrics;
use crate::osd::RandomSuffix;
use crate::plan::{plan, PlanError, PlannedEvent};
use crate::status::error_status;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
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
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("failed to list the pods of CephOSD {cr}: {source}")]
    List {
        cr: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Execute(#[from] ExecuteError),
}

impl ReconcileError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::List { .. } => "ListFailed",
            Self::Plan(_) => "InvalidSpec",
            Self::Execute(e) => e.category(),
        }
    }
}

/// Runs the controller until SIGTERM / Ctrl-C.
pub async fn run(client: Client, settings: Settings, metrics: Arc<Metrics>) {
    let (crs, pods): (Api<CephOsd>, Api<Pod>) = match &settings.namespace {
        Some(ns) => (
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client.clone(), ns),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let reporter = Reporter {
        controller: "ceph-osd-operator".into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let context = Arc::new(Context {
        backoff: Backoff::new(settings.retry, Duration::from_secs(300)),
        client,
        settings,
        recorder,
        metrics: metrics.clone(),
    });
    Controller::new(crs, watcher::Config::default())
        // Label-based, not ownerReference-based: pods made by the reference operator carry
        // an ownerReference without `controller: true`, and they must trigger us too.
        .watches(
            pods,
            watcher::Config::default().labels(labels::OWNER),
            owner_of,
        )
        .shutdown_on_signal()
        .run(timed_reconcile, error_policy, context)
        .for_each(|result| {
            let metrics = metrics.clone();
            async move {
                match result {
                    // A pod event for a CephOSD that was just deleted: only its metrics to drop.
                    Err(controller::Error::ObjectNotFound(object)) => {
                        debug!(%object, "event for a CephOSD that no longer exists");
                        metrics.forget(
                            object.namespace.as_deref().unwrap_or_default(),
                            &object.name,
                        );
                    }
                    Err(error) => warn!(%error, "controller error"),
                    Ok(_) => {}
                }
            }
        })
        .await;
}

/// The CephOSD a pod belongs to, from its owner label `CephOSD-<name>`.
fn owner_of(pod: Pod) -> Option<ObjectRef<CephOsd>> {
    let name = pod.labels().get(labels::OWNER)?.strip_prefix("CephOSD-")?;
    Some(ObjectRef::new(name).within(&pod.namespace()?))
}

async fn timed_reconcile(cr: Arc<CephOsd>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = std::time::Instant::now();
    let object = format!("{}/{}", cr.namespace().unwrap_or_default(), cr.name_any());
    let result = reconcile(cr, ctx.clone()).await;
    match &result {
        Ok(_) => ctx.backoff.succeeded(&object),
        Err(error) => ctx.metrics.failed(error.category(), started.elapsed()),
    }
    result
}

async fn reconcile(cr: Arc<CephOsd>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = std::time::Instant::now();
    if cr.metadata.deletion_timestamp.is_some() {
        // Garbage collection removes the pods through their ownerReferences.
        return Ok(Action::await_change());
    }
    let namespace = cr.namespace().unwrap_or_default();
    let cr_name = format!("{namespace}/{}", cr.name_any());
    let executor = Executor {
        pods: Api::namespaced(ctx.client.clone(), &namespace),
        crs: Api::namespaced(ctx.client.clone(), &namespace),
        recorder: &ctx.recorder,
        cr: &cr,
    };
    let selector = format!("{}={}", labels::OWNER, owner_label_value(&cr.name_any()));
    let observed = executor
        .pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|source| ReconcileError::List {
            cr: cr_name.clone(),
            source,
        })?;
    // The API keeps whole seconds; so do we, so an unchanged status compares equal.
    let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH);
    let plan = match plan(&cr, &observed.items, &mut RandomSuffix, now) {
        Ok(plan) => plan,
        Err(error @ PlanError::Render { .. }) => {
            // Nothing can be created from this spec: say so where users look, and wait for
            // the spec to change (the watch brings it).
            let message = error.to_string();
            warn!(cephosd = %cr_name, %message, "cannot act on the spec");
            let previous = cr.status.clone().unwrap_or_default();
            let status = error_status(&previous, cr.metadata.generation, now, &message);
            if executor.write_status(&status).await? {
                executor
                    .publish(&PlannedEvent {
                        warning: true,
                        reason: "InvalidSpec",
                        note: message,
                        pod: None,
                    })
                    .await;
            }
            return Ok(Action::requeue(ctx.settings.resync));
        }
        Err(error) => return Err(error.into()),
    };
    let s = &plan.summary;
    info!(
        cephosd = %cr_name,
        hash = %plan.template_hash,
        desired = s.desired, current = s.current, ready = s.ready, updated = s.updated,
        out_of_date = s.out_of_date, unready = s.unready, invalid = s.invalid,
        terminating = s.terminating, actions = plan.actions.len(),
        halted = plan.halted.as_deref().unwrap_or(""),
        "reconciled"
    );
    executor.apply_actions(&plan.actions).await?;
    for event in &plan.events {
        executor.publish(event).await;
    }
    executor.write_status(&plan.status).await?;
    ctx.metrics
        .reconciled(&namespace, &cr.name_any(), &plan.summary, started.elapsed());
    let resync = ctx.settings.resync;
    let next = plan
        .requeue_after
        .and_then(|d| Duration::try_from(d).ok())
        .map_or(resync, |d| d.min(resync));
    Ok(Action::requeue(next))
}

fn error_policy(cr: Arc<CephOsd>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let object = format!("{}/{}", cr.namespace().unwrap_or_default(), cr.name_any());
    let delay = ctx.backoff.failed(&object);
    warn!(cephosd = %object, category = error.category(), retry_in = ?delay, %error, "reconcile failed");
    Action::requeue(delay)
}
