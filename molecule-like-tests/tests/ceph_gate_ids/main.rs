//! The Ceph gate's OSD ids and its limits, end to end over real OSD daemons (the fixture of
//! `tests/ceph_gate.rs`): a pod whose OSD id the operator cannot tell is never stopped (Ceph's
//! `ok-to-stop` says yes for an id that does not exist), until an admin states its id by
//! annotation; a Ceph key without the caps the gate needs stops nothing and says Ceph refused;
//! `noout` held past `--ceph-max-noout-seconds` is cleared while the rollout stays halted.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`; the cluster installs them when missing).
//! Conditions are matched on `status`/`reason`, OSD names (`osd.3`) and pod names, not on
//! their sentences.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod ceph_refuses;
mod common;
mod noout;
mod stated_ids;
