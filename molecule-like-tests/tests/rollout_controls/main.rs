//! End-to-end scenarios of seeing and steering a rollout: status counts, phase and
//! conditions at each step of a rollout, `Stalled` after the progress deadline, `paused`,
//! `maxUnavailable`, the Event sequence of a rollout, leader election, zero writes in steady
//! state, and `/metrics`. Same fixture as `tests/scenarios/` (a namespace per scenario, the
//! operator as a child process, the pod event recorder, failure dumps).
//!
//! Needs the local control plane (`molecule-like-tests/control-plane install && ... up`) and a
//! built operator (`cargo build -p ceph-osd-operator`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod operator;
mod pace;
mod status;
