//! kube-runtime wiring: watch CephOSDs and their pods, reconcile = observe → plan → act.
//!
//! Pods are listed from the API on every reconcile (a consistent read), never taken from a
//! cache that may lag behind our own writes: a stale "no pod" would mean a second pod on a disk.

use crate::crd::{owner_label_value, CephOsd};
use crate::executor::{execute, ExecuteError};
use crate::labels;
use crate::osd::RandomSuffix;
use crate::plan::{plan, PlanError};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// Settings of one operator process.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Watch only this namespace (None: all namespaces).
    pub namespace: Option<String>,
    /// Periodic resync of every CephOSD.
    pub resync: Duration,
    /// Delay before retrying a failed reconcile.
    pub retry: Duration,
}

struct Context {
    client: Client,
    settings: Settings,
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
pub async fn run(client: Client, settings: Settings) {
    let (crs, pods): (Api<CephOsd>, Api<Pod>) = match &settings.namespace {
        Some(ns) => (
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client.clone(), ns),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let context = Arc::new(Context { client, settings });
    Controller::new(crs, watcher::Config::default())
        // Label-based, not ownerReference-based: pods made by the reference operator carry
        // an ownerReference without `controller: true`, and they must trigger us too.
        .watches(
            pods,
            watcher::Config::default().labels(labels::OWNER),
            owner_of,
        )
        .shutdown_on_signal()
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                warn!(%error, "controller error");
            }
        })
        .await;
}

/// The CephOSD a pod belongs to, from its owner label `CephOSD-<name>`.
fn owner_of(pod: Pod) -> Option<ObjectRef<CephOsd>> {
    let name = pod.labels().get(labels::OWNER)?.strip_prefix("CephOSD-")?;
    Some(ObjectRef::new(name).within(&pod.namespace()?))
}

async fn reconcile(cr: Arc<CephOsd>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    if cr.metadata.deletion_timestamp.is_some() {
        // Garbage collection removes the pods through their ownerReferences.
        return Ok(Action::await_change());
    }
    let namespace = cr.namespace().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector = format!("{}={}", labels::OWNER, owner_label_value(&cr.name_any()));
    let observed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|source| ReconcileError::List {
            cr: format!("{namespace}/{}", cr.name_any()),
            source,
        })?;
    let plan = plan(&cr, &observed.items, &mut RandomSuffix)?;
    let s = &plan.summary;
    info!(
        cephosd = %format!("{namespace}/{}", cr.name_any()),
        hash = %plan.template_hash,
        desired = s.desired, current = s.current, ready = s.ready, updated = s.updated,
        out_of_date = s.out_of_date, unready = s.unready, invalid = s.invalid,
        terminating = s.terminating, actions = plan.actions.len(),
        halted = plan.halted.as_deref().unwrap_or(""),
        "reconciled"
    );
    for warning in &plan.spec_warnings {
        warn!(cephosd = %cr.name_any(), "{warning}");
    }
    execute(&pods, &plan.actions).await?;
    Ok(Action::requeue(ctx.settings.resync))
}

fn error_policy(cr: Arc<CephOsd>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    warn!(cephosd = %cr.name_any(), category = error.category(), %error, "reconcile failed");
    Action::requeue(ctx.settings.retry)
}
