//! The budget phase, between gate and order: the rollout step trimmed to what the gate lets
//! go, the update domains it starts, and the disruption budget that reserves them before any
//! of their pods goes.

use crate::plan::gate::GateOutcome;
use crate::plan::phases::decide::proposal::StepDeletions;
use crate::plan::phases::decide::Decided;
use crate::plan::phases::seen::Seen;
use crate::plan::rules::budget::{plan_budget, BudgetInput, BudgetPlan};

/// The step's update domains and the budget that admits them.
pub(in crate::plan) struct Budgeted {
    /// The update domains the step starts (those down already included).
    pub(in crate::plan) started: Vec<String>,
    /// Of those, the ones not down already: reserved in the budget before their pods go.
    pub(in crate::plan) starting: Vec<String>,
    /// The disruption budget's writes, status, condition and events.
    pub(in crate::plan) plan: BudgetPlan,
}

/// Trims `step` to the domains and keys `gated` allows, and plans the budget for the domains
/// it starts. `closed`: why Ceph's PGs keep the budget closed, if they do.
pub(in crate::plan) fn budget(
    seen: &Seen<'_>,
    decided: &Decided<'_>,
    gated: &GateOutcome,
    step: &mut StepDeletions,
    closed: Option<&str>,
) -> Budgeted {
    if let Some(allowed) = &gated.allowed_domains {
        step.keep_domains(allowed, |key| seen.domain_of(key));
    }
    if let Some(allowed) = &gated.allowed_keys {
        step.keep_keys(allowed);
    }
    let goes = gated.deletions_allowed && decided.unbuildable.is_none();
    let started = if goes {
        step.domains.clone()
    } else {
        Vec::new()
    };
    let unavailable = &decided.rollout.unavailable;
    let starting: Vec<String> = (started.iter())
        .filter(|d| !unavailable.contains(*d))
        .cloned()
        .collect();
    let plan = plan_budget(
        &BudgetInput {
            cr: seen.cr,
            domains: seen.domains(),
            keeping: &seen.keeping,
            unavailable,
            starting: &starting,
            pods: &seen.pods,
            waiting: &decided.waiting,
            closed,
        },
        seen.previous.budget.as_ref(),
    );
    Budgeted {
        started,
        starting,
        plan,
    }
}
