//! The running operator: watches and their caches, the reconcile loop, the executor that
//! carries a plan out, what it remembers between reconciles, leader election, probes and
//! metrics. Everything here talks to the API or keeps time; nothing here decides.
//!
//! `operator` runs `controller`, whose reconcile observes (`observe`: the watch caches, what a
//! CephOSD owns, the budget's inputs), plans, asks Ceph (`ceph`: the gate, the step locks, the
//! metered client), acts (`act`: the executor, the finalizer, reports of unreadable objects)
//! and remembers (`memory`: per CephOSD, with the expectations of its writes); `serve` is what
//! the process offers and needs around it (leader lease, probes, metrics and who may read them,
//! the RBAC check). `backoff` paces the retries of reconciles and watches.

pub(crate) mod act;
mod backoff;
pub(crate) mod ceph;
pub(crate) mod controller;
pub(crate) mod memory;
pub(crate) mod observe;
pub(crate) mod operator;
#[cfg(test)]
mod scripted_api;
pub(crate) mod serve;
