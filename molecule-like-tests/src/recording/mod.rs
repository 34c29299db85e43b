//! Recording and checks: what the scenarios watched, on one clock, and the rules checked on it.
//!
//! - [`pods`]: watch recorders (pods, any kind) and the invariants checked on what they
//!   recorded (one pod per disk, unavailable update domains, rollout order and pace);
//! - [`ceph`]: Ceph's own view recorded (OSDs up, noout, PG states) and its checks;
//! - [`milestones`]: a journey's named moments, reported as one aligned table.

pub mod ceph;
pub mod milestones;
pub mod pods;
