//! End-to-end scenarios, Molecule-style: create → converge → verify → destroy, each in
//! a namespace of its own, against the local control plane and the real operator binary.
//!
//! Needs: `molecule-like-tests/control-plane install && molecule-like-tests/control-plane up`
//! and a built operator (`cargo build -p ceph-osd-operator`); `molecule-like-tests/run` does
//! all of that. On failure each scenario prints its pods, the recorded pod events and the
//! operator's log tail.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod lifecycle;
mod rollouts;
mod sample;
