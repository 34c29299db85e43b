//! The planner's rules, each pure and tested on its own: the spec's expansion, rollout steps and
//! deadlines, disk claims, the disruption budget, the step lock, out OSDs, deletion, finalize.

pub(crate) mod budget;
pub(crate) mod cluster_lock;
pub(crate) mod deletion;
pub(crate) mod disk_claims;
pub(crate) mod expanded_spec;
pub(crate) mod finalize;
pub(crate) mod lock_place;
pub(crate) mod out_osds;
pub(crate) mod releases;
pub(crate) mod replacement;
pub(in crate::plan) mod rollout;
