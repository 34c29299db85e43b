//! One reconcile of a CephOSD, in named steps: observe → plan → ask Ceph (reading again) →
//! plan again → act → remember. Each step is a function of its own file; this one only says
//! their order and when a reconcile ends early.

use crate::crd::CephOsd;
use crate::plan::gate::CephInput;
use crate::plan::Plan;
use crate::runtime::ceph::gate_questions::first_view;
use crate::runtime::ceph::out_look::out_changed_in_ceph;
use crate::runtime::controller::admit::admit;
use crate::runtime::controller::ask_ceph::{
    ask_ceph_and_read_again, keep_step_lock, learn_ids, with_answer, Asked,
};
use crate::runtime::controller::carry_out::{carry_out, changes, finish};
use crate::runtime::controller::context::{in_scope, Context};
use crate::runtime::controller::plan_inputs::PlanInputs;
use crate::runtime::controller::reconcile_error::ReconcileError;
use crate::runtime::observe::owned_objects::Snapshot;
use kube::runtime::controller::Action;
use kube::ResourceExt;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// A reconcile, counted in the metrics and the memory of failures.
pub(super) async fn timed_reconcile(
    cr: Arc<CephOsd>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let object = cr.object_key();
    let result = Box::pin(reconcile(cr, ctx.clone())).await;
    match &result {
        Ok(_) => ctx.memory.succeeded(&object),
        Err(error) => ctx.metrics.failed(error.category(), started.elapsed()),
    }
    result
}

pub(super) async fn reconcile(
    cr: Arc<CephOsd>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    if !in_scope(ctx.settings.namespace.as_deref(), cr.namespace().as_deref()) {
        // Watched only for its claims on disks.
        return Ok(Action::await_change());
    }
    let cr = ctx.memory.latest(cr);
    if admit(&ctx, &cr).await?.is_break() {
        return Ok(Action::await_change());
    }
    // Observe.
    let mut inputs = PlanInputs::read(&ctx, cr).await;
    let mut observation = match inputs.observe(&ctx).await? {
        Snapshot::Plan(observation) => observation,
        Snapshot::Unchanged
            if out_changed_in_ceph(ctx.ceph.as_deref(), &inputs.cr, &inputs.desired_keys())
                .await =>
        {
            // An OSD out or in otherwise than the status says: planned at once.
            ctx.owned.unquiet(&inputs.cr);
            return Ok(Action::requeue(Duration::from_millis(10)));
        }
        Snapshot::Unchanged => {
            // Inputs exactly those of a plan with nothing to do: no planning, no API call.
            debug!(cephosd = %inputs.cr.object_key(), unchanged = true, "reconciled");
            ctx.metrics.unchanged(started.elapsed());
            return Ok(Action::requeue(ctx.settings.resync));
        }
        // Our last writes are not in the caches yet: their watch events bring the next
        // reconcile (the requeue only covers a write that is never seen).
        Snapshot::Lagging => return Ok(Action::requeue(Duration::from_secs(1))),
    };
    // Plan.
    let ceph = ctx.ceph.as_deref();
    let (mut may_hold_lock, lock_lost) = keep_step_lock(&ctx, &inputs.cr).await;
    let (mut view, looked) = first_view(ceph, &ctx.memory, &inputs.cr, &ctx.settings.gate).await;
    view.lock_lost = lock_lost;
    let mut plan = inputs.plan(&observation, &view);
    // A disk replacement of a key whose id was never learnt: learnt, then planned again.
    if let Some(learned) = learn_ids(&ctx, &inputs.cr, &observation, &plan).await {
        view.learned_ids = Some(learned);
        plan = inputs.plan(&observation, &view);
    }
    // Ask Ceph, reading again.
    let asked = ask_ceph_and_read_again(&ctx, &mut inputs, &mut observation, &plan, looked);
    let Asked {
        read_again,
        answered,
    } = match asked.await? {
        ControlFlow::Continue(asked) => asked,
        // Deleted meanwhile: planned again from the next reconcile.
        ControlFlow::Break(()) => return Ok(Action::requeue(Duration::from_secs(1))),
    };
    let answered = answered.map(|(answer, took_lock)| {
        may_hold_lock |= took_lock;
        answer
    });
    let view = with_answer(&ctx, &inputs.cr, view, answered);
    // Plan again.
    if read_again || matches!(view.input, CephInput::Answered(_)) {
        plan = inputs.plan(&observation, &view);
        debug!(cephosd = %inputs.cr.object_key(), disrupts = plan.disrupts(), "planned again from a fresh read and Ceph's answer");
    }
    say_reconciled(&inputs.cr, &plan);
    // Act and remember.
    if let Some(error) = carry_out(&ctx, &inputs, &observation, &plan, may_hold_lock).await {
        // The retry follows the error policy's backoff.
        return Err(error.into());
    }
    finish(&ctx, &inputs.cr, &plan, started).await
}

/// One line per planned reconcile, INFO only when it changes something: a resync of a
/// settled CephOSD is a DEBUG line. (Tracing's levels are constants: one call per level.)
fn say_reconciled(cr: &CephOsd, plan: &Plan) {
    let (cr, s) = (cr.object_key(), &plan.summary);
    let halted = plan.halted.as_deref().unwrap_or("");
    if changes(plan) {
        info!(
            cephosd = %cr, hash = %plan.template_hash,
            desired = s.desired, current = s.current, ready = s.ready, updated = s.updated,
            out_of_date = s.out_of_date, unready = s.unready, invalid = s.invalid,
            terminating = s.terminating, superfluous = s.superfluous,
            actions = plan.actions.len(), halted, "reconciled"
        );
    } else {
        debug!(
            cephosd = %cr, hash = %plan.template_hash,
            desired = s.desired, current = s.current, ready = s.ready, updated = s.updated,
            out_of_date = s.out_of_date, unready = s.unready, invalid = s.invalid,
            terminating = s.terminating, superfluous = s.superfluous,
            actions = plan.actions.len(), halted, "reconciled"
        );
    }
}

#[allow(clippy::needless_pass_by_value)] // the signature `Controller::run` wants
pub(super) fn error_policy(cr: Arc<CephOsd>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let object = cr.object_key();
    let delay = ctx.memory.failed(&object, Instant::now(), |failures| {
        ctx.backoff.delay(failures)
    });
    warn!(cephosd = %object, category = %error.category(), retry_in = ?delay, %error, "reconcile failed");
    Action::requeue(delay)
}
