//! Asking Ceph for the planner: the gate's answer and where an open step or drain stands,
//! under each Ceph cluster's step lock (a Lease), through a client whose every command is
//! counted in the metrics.

pub(crate) mod cluster_lock;
pub(crate) mod crash_look;
pub(crate) mod crush_look;
mod drain_look;
pub(crate) mod gate_questions;
pub(crate) mod lock_place;
pub(crate) mod metered_ceph;
pub(crate) mod out_look;
pub(crate) mod placement;
pub(crate) mod replacement_looks;
