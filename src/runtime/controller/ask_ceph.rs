//! Asking Ceph before a rollout step. Pods go down only on a view as new as the decision: a
//! plan that takes pods down, or asks Ceph whether it may, is made again from the CephOSD and
//! its objects read again (a cache may be seconds behind, and a domain it shows available be
//! down), and from Ceph's answer, asked meanwhile.

use crate::ceph::{CephFacts, OsdId};
use crate::crd::osd::OsdKey;
use crate::crd::CephOsd;
use crate::plan::gate::{CephInput, CephView, GateAnswer, GateDecision};
use crate::plan::rules::cluster_lock::LockState;
use crate::plan::Plan;
use crate::runtime::ceph::cluster_lock::answer_holding_the_lock;
use crate::runtime::ceph::crash_look::{look_at_crashes, CrashRead};
use crate::runtime::ceph::gate_questions::{decision_label, ids_in_metadata, Question};
use crate::runtime::ceph::placement::PlacementClock;
use crate::runtime::controller::context::Context;
use crate::runtime::controller::plan_inputs::PlanInputs;
use crate::runtime::controller::reconcile_error::ReconcileError;
use crate::runtime::observe::other_cephosds::other_cephosds;
use crate::runtime::observe::owned_objects::Observation;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::ops::ControlFlow;
use tracing::{info, warn};

/// What asking Ceph and reading again brought.
pub(super) struct Asked {
    /// Whether the CephOSD and its objects were read again.
    pub read_again: bool,
    /// Ceph's answer, when the plan asked, and whether the step lock was taken for it.
    pub answered: Option<(GateAnswer, bool)>,
}

/// An open step keeps its Ceph cluster's step lock (this CephOSD may hold it; one that opts
/// out of the gate only lets it go), read on every look. Whether `cr` may hold the lock, and
/// how the open step found it lost, if it did (the planner says so).
pub(super) async fn keep_step_lock(ctx: &Context, cr: &CephOsd) -> (bool, Option<String>) {
    let may_hold_lock = cr.status.as_ref().is_some_and(|s| s.ceph_step.is_some());
    let keeps = may_hold_lock && !cr.spec.skips_ceph_gate();
    let mut found_lost = None;
    if let (true, Some(ceph), Some(locks)) = (keeps, ctx.ceph.as_deref(), &ctx.ceph_locks) {
        let (state, lost) = Box::pin(locks.keep(ceph, cr)).await;
        if let Some(lost) = &lost {
            let now = match &state {
                LockState::Held => "taken back".to_owned(),
                LockState::Busy { busy, .. } => format!("{busy}: taken back when free"),
                LockState::Failed(error)
                | LockState::NoFsid(error)
                | LockState::PlaceDiffers(error) => error.clone(),
            };
            warn!(cephosd = %cr.object_key(), %lost, %now, "the open step's lock of the Ceph cluster was lost");
            found_lost = Some(format!("{lost} ({now})"));
        }
    }
    (may_hold_lock, found_lost)
}

/// Asks Ceph what `plan` asks while, for a plan that takes pods down or asks Ceph, the
/// budgets, the CephOSD and its objects are read again into `inputs` and `observation`.
/// Break: the CephOSD was deleted meanwhile.
pub(super) async fn ask_ceph_and_read_again(
    ctx: &Context,
    inputs: &mut PlanInputs,
    observation: &mut Observation,
    plan: &Plan,
    looked: Option<CephFacts>,
) -> Result<ControlFlow<(), Asked>, ReconcileError> {
    let answering = answering(ctx, &inputs.cr, observation, plan, looked);
    let read_again =
        observation.fingerprint.is_some() && (plan.disrupts() || plan.gate_question.is_some());
    if !read_again {
        let answered = answering.await;
        return Ok(ControlFlow::Continue(Asked {
            read_again,
            answered,
        }));
    }
    inputs.list_budgets_again(ctx).await?;
    let (fresh, answered) = futures::join!(inputs.read_again(ctx), answering);
    match inputs.take_fresh(ctx, fresh)? {
        ControlFlow::Continue(fresh) => *observation = fresh,
        ControlFlow::Break(()) => return Ok(ControlFlow::Break(())),
    }
    Ok(ControlFlow::Continue(Asked {
        read_again,
        answered,
    }))
}

/// Ceph's answer to `plan`'s question, asked holding the step lock, when it asks one and Ceph
/// is configured.
fn answering(
    ctx: &Context,
    cr: &std::sync::Arc<CephOsd>,
    observation: &Observation,
    plan: &Plan,
    looked: Option<CephFacts>,
) -> impl Future<Output = Option<(GateAnswer, bool)>> {
    let answering = plan
        .gate_question
        .clone()
        .zip(ctx.ceph.clone())
        .map(|(question, ceph)| {
            let (cr, pods, observed) = (cr.clone(), observation.pods.clone(), plan.pods.clone());
            let image_release = plan.image_release;
            let others = other_cephosds(&cr, &ctx.crs.state(), &ctx.memory);
            let locks = ctx.ceph_locks.clone();
            let (memory, lag) = (ctx.memory.clone(), ctx.settings.gate.pg_stats_lag);
            async move {
                let locks = locks.as_deref();
                let key = cr.object_key();
                let asked = Question {
                    cr: &cr,
                    observed: &observed,
                    pods: &pods,
                    subjects: &question,
                    others: &others,
                    image_release,
                    placement: Some(PlacementClock {
                        memory: &memory,
                        key: &key,
                        lag,
                    }),
                };
                let (mut answer, locked) =
                    Box::pin(answer_holding_the_lock(locks, &*ceph, &asked, looked)).await;
                if matches!(answer.decision, GateDecision::Proceed { .. }) {
                    // A crash reported since the plan's look halts this step too.
                    // Ceph just answered ok-to-stop: its mgr is there.
                    answer.crashes =
                        look_at_crashes(&*ceph, &memory, &cr, CrashRead::Now, true).await;
                }
                (answer, locked)
            }
        });
    async move {
        match answering {
            Some(answering) => Some(answering.await),
            None => None,
        }
    }
}

/// The ids of the keys `cr` runs as Ceph's metadata shows them, when `plan` wants them (a
/// disk replacement of a key whose id was never learnt) and Ceph is configured.
pub(super) async fn learn_ids(
    ctx: &Context,
    cr: &CephOsd,
    observation: &Observation,
    plan: &Plan,
) -> Option<BTreeMap<OsdKey, BTreeSet<OsdId>>> {
    let ceph = ctx.ceph.as_deref().filter(|_| plan.wants_osd_ids)?;
    let others = other_cephosds(cr, &ctx.crs.state(), &ctx.memory);
    let asked = Question {
        cr,
        observed: &plan.pods,
        pods: &observation.pods,
        subjects: &[],
        others: &others,
        image_release: None,
        placement: None,
    };
    let learned = ids_in_metadata(ceph, &asked).await;
    info!(cephosd = %cr.object_key(), keys = learned.len(), "learnt the OSD ids of a disk replacement from Ceph's metadata");
    Some(learned)
}

/// The view of Ceph with its answer, when one was asked.
pub(super) fn with_answer(
    ctx: &Context,
    cr: &CephOsd,
    view: CephView,
    answer: Option<GateAnswer>,
) -> CephView {
    match answer {
        Some(answer) => {
            let label = decision_label(&answer.decision);
            ctx.metrics.gate_decided(label);
            info!(cephosd = %cr.object_key(), decision = %answer.decision, category = label, "asked Ceph before a rollout step");
            CephView {
                crashes: answer.crashes.clone().or(view.crashes),
                input: CephInput::Answered(answer),
                ..view
            }
        }
        None => view,
    }
}
