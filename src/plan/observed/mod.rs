//! What the planner makes of what it observed: what each pod is to it (classify), and the
//! ReplicaSets of the Ansible operator's ReplicaSet era.

pub(crate) mod classify;
pub(in crate::plan) mod replica_sets;
