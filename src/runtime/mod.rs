//! The running operator: watches and their caches, the reconcile loop, the executor that
//! carries a plan out, what it remembers between reconciles, leader election, probes and
//! metrics. Everything here talks to the API or keeps time; nothing here decides.

pub(crate) mod api_requests;
mod backoff;
mod budget_inputs;
mod ceph_drain;
pub(crate) mod ceph_gate;
mod claims_registry;
pub(crate) mod cluster_lock;
pub(crate) mod controller;
mod executor;
pub(crate) mod expectations;
mod finalizer;
pub(crate) mod lease;
mod locked;
mod memory;
pub(crate) mod metered_ceph;
pub(crate) mod metrics;
pub(crate) mod metrics_auth;
pub(crate) mod operator;
mod other_cephosds;
mod owned_objects;
pub(crate) mod permissions;
pub(crate) mod probes;
mod review_cache;
#[cfg(test)]
mod scripted_api;
mod unreadable;
mod watched_cephosd;
mod watched_pod;
