//! Recording and checks: what the scenarios watched, on one clock, and the rules checked on it.
//!
//! - [`pods`]: the pod recorder (its checks re-exported from [`invariants`] and [`watch`]);
//! - [`domains`]: how the keys of a rollout group into update domains (keys, hosts, buckets);
//! - [`invariants`]: the rules checked on a pod watch's recording (one pod per disk, rollout
//!   order and pace);
//! - [`watch`]: watches resumed without gaps, and a recorder of any kind;
//! - [`ceph`]: Ceph's own view recorded (OSDs up, noout, PG states) and its checks.

pub mod ceph;
pub mod domains;
pub mod invariants;
mod pod_events;
pub mod pods;
pub mod watch;
