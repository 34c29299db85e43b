//! The Ceph gate under faults, end to end (the fixture of `tests/ceph_gate.rs`: a real Ceph
//! whose OSD daemons the bridge runs for KWOK's pods, the operator asking it before each step):
//!
//! - the mgr, then the mon, stopped while a step is under way: nothing more goes down, the
//!   `CephGate` condition says why, the rollout completes once they are back;
//! - the operator SIGKILLed between `noout` and clean: a new process finishes the step from
//!   the status, clears exactly its own `noout` (an admin's stays), completes the rollout;
//! - an OSD outside the step killed mid-rollout: the next step waits until it is back.
//!
//! Needs the local control plane, a built operator and Ceph's daemons (as `tests/ceph_gate.rs`).
//! The machine is shared: run one at a time (`--test-threads=1`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod mons_away;
mod operator_killed;
mod osd_killed;
