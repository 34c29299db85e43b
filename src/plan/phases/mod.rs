//! The planner's phases in the order `plan_expanded` runs them: seen (observe), decide,
//! pre-pull, gate step, budget, order, report; each returns its own outcome to the next.

pub(in crate::plan) mod budget;
pub(in crate::plan) mod decide;
pub(in crate::plan) mod gate_step;
pub(in crate::plan) mod order;
pub(crate) mod pre_pull;
pub(in crate::plan) mod replacing;
pub(crate) mod report;
pub(in crate::plan) mod seen;
