//! After planning: the plan carried out, what was written and planned from remembered, the
//! Ceph cluster's step lock let go once no step stays open; then the finalizer removed once
//! nothing of a deleted CephOSD is left, the metrics, and when to reconcile again.

use crate::crd::CephOsd;
use crate::plan::rules::cluster_lock::releases;
use crate::plan::rules::deletion::{self, Deletion, FinalizerWrite};
use crate::plan::says::events::EventReason;
use crate::plan::Plan;
use crate::runtime::act::executor::{ExecuteError, Executor};
use crate::runtime::controller::admit::write_finalizer;
use crate::runtime::controller::context::Context;
use crate::runtime::controller::plan_inputs::PlanInputs;
use crate::runtime::controller::reconcile_error::ReconcileError;
use crate::runtime::observe::owned_objects::Observation;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::ResourceExt;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Carries `plan` out, remembers the status written and the objects planned from (`quiet`
/// when nothing changed), and lets the step lock go when the plan's rules say so. The write
/// that failed, if one did.
pub(super) async fn carry_out(
    ctx: &Context,
    inputs: &PlanInputs,
    observation: &Observation,
    plan: &Plan,
    may_hold_lock: bool,
) -> Option<ExecuteError> {
    let (cr, now) = (&inputs.cr, inputs.now);
    let namespace = cr.namespace().unwrap_or_default();
    let executor = Executor {
        pods: Api::namespaced(ctx.client.clone(), &namespace),
        budgets: Api::namespaced(ctx.client.clone(), &namespace),
        replica_sets: Api::namespaced(ctx.client.clone(), &namespace),
        crs: Api::namespaced(ctx.client.clone(), &namespace),
        recorder: &ctx.recorder,
        cr,
        ceph: ctx.ceph.as_deref(),
    };
    let outcome = executor
        .carry_out(plan, now, &|action| ctx.owned.written(cr, action, now))
        .await;
    if let Some(status) = &outcome.status {
        ctx.memory.remember(cr, status);
    }
    let step_open_after = plan.status.ceph_step.is_some();
    if releases(may_hold_lock, step_open_after, outcome.failed.is_some()) {
        if let (Some(ceph), Some(locks)) = (ctx.ceph.as_deref(), &ctx.ceph_locks) {
            Box::pin(locks.release(ceph, cr)).await;
        }
    }
    let quiet = !changes(plan) && plan.requeue_after.is_none() && outcome.failed.is_none();
    ctx.owned.planned(cr, observation, quiet);
    // The status the CephOSD shows now: the one written, else the one it had.
    let shown = (outcome.status.as_ref())
        .or(cr.status.as_ref())
        .unwrap_or(&plan.status);
    ctx.metrics.status_shown(
        &namespace,
        &cr.name_any(),
        shown,
        ctx.settings.gate.max_noout,
    );
    outcome.failed
}

/// Whether `plan` changes anything: an action, an event or the status.
pub(super) fn changes(plan: &Plan) -> bool {
    !plan.actions.is_empty() || !plan.events.is_empty() || plan.status_changed
}

/// After `plan` was carried out: a deleted CephOSD whose plan removes the finalizer gets it
/// removed (and is not reconciled again until it changes); else the metrics, and the next
/// reconcile at the plan's deadline or the resync, whichever comes first.
pub(super) async fn finish(
    ctx: &Context,
    cr: &CephOsd,
    plan: &Plan,
    started: Instant,
) -> Result<Action, ReconcileError> {
    let namespace = cr.namespace().unwrap_or_default();
    if plan.finalizer == Some(FinalizerWrite::Remove) {
        let how = match plan.deletion {
            Some(Deletion::AtOnce(why)) => why,
            Some(Deletion::Orphaned) => deletion::ORPHANED,
            _ => "its pods went one update domain at a time",
        };
        // A terminating namespace takes no Event: the log says it.
        for event in plan
            .events
            .iter()
            .filter(|e| e.reason == EventReason::Deleting)
        {
            warn!(cephosd = %cr.object_key(), note = %event.note, "deletion");
        }
        write_finalizer(ctx, cr, false).await?;
        info!(cephosd = %cr.object_key(), how, "no pod of the CephOSD is left and no Ceph step is open: removed the finalizer");
        return Ok(Action::await_change());
    }
    ctx.metrics
        .reconciled(&namespace, &cr.name_any(), &plan.summary, started.elapsed());
    ctx.metrics.domains_finished(&plan.finished_domain_seconds);
    let resync = ctx.settings.resync;
    let next = plan
        .requeue_after
        .and_then(|d| Duration::try_from(d).ok())
        .map_or(resync, |d| d.min(resync));
    Ok(Action::requeue(next))
}
