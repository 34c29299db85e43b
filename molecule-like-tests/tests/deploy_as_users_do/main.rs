//! The operator deployed the way users do it, against the real API server: the Helm chart with
//! Helm itself (built from its Go module by `control-plane install`) and deploy/ with
//! `kubectl apply -k`.
//!
//! - `helm lint --strict`; `helm template` with the defaults and with every value the chart
//!   documents changed (a check fails when values.yaml gains a value this test does not
//!   change); the chart's RBAC, Deployment and Ceph mounts equal the kustomize build's (one
//!   source of truth: a drift fails).
//! - `helm install` into a namespace that enforces the restricted Pod Security Standard (the
//!   real admission admits the Deployment's pods — KWOK fakes), the CRD from the chart's
//!   `crds/`; the operator run as the ServiceAccount Helm created, with the RBAC Helm created,
//!   reconciles a CephOSD; `helm upgrade` rolls the Deployment; `helm uninstall` leaves the
//!   CRD, the CephOSD and every OSD pod. Each journey's pod watch, recorded from the CephOSD's
//!   creation: never two pods for one disk, no OSD without a Ready pod once all were up.
//! - `kubectl apply -k deploy/`: `--dry-run=server` first, then for real, then again with
//!   every object unchanged; the namespace enforces the restricted standard on its pods.
//!
//! The Helm journey deletes the cluster-wide CRD first, so that Helm installs it (Helm installs
//! `crds/` only where absent): the journeys of this file hold one lock, and cargo runs no other
//! test binary meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod helm_render;
mod install;
