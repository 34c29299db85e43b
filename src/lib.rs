//! ceph-osd-operator: reconciles `CephOSD` resources into one node-bound Pod per OSD.
//!
//! observe → plan → act, one folder a layer: `crd` (the resource and its rules), `pod` (building
//! a pod), `plan` (deciding, pure), `runtime` (watching, acting, remembering), `offline` (what
//! the CLI does without a cluster); `hash` and `labels` are the words they share.
//! Public: the resource types (`crd`), the label and annotation keys (`labels`), and what the
//! binary, the end-to-end harness and the benchmarks use, re-exported below.

pub mod ceph;
pub mod crd;
pub mod labels;

mod hash;
pub mod kubectl;
mod offline;
mod plan;
mod pod;
mod runtime;
#[doc(hidden)]
pub mod testing;

pub use crd::osd::{CountingSuffix, OsdKey, RandomSuffix, SuffixSource};
pub use hash::TemplateHash;
pub use offline::manifest::{parse_cephosd, read_manifest, ManifestError};
pub use offline::preview::{created_pods, preview_pods};
pub use plan::gate;
pub use plan::rules::expanded_spec::ExpandedSpec;
pub use plan::says::actions::Action;
pub use plan::{plan, plan_expanded, Hold, Observed, Plan, MAX_CREATIONS_PER_PLAN};
pub use runtime::ceph::cluster_lock::{ceph_lock_namespace, NoLockNamespace};
pub use runtime::ceph::gate_questions::GateSettings;
pub use runtime::controller::context::Settings;
pub use runtime::operator::run;
pub use runtime::serve::api_requests::counted_client;
pub use runtime::serve::lease::{lease_namespace, LeaseSettings, NoLeaseNamespace};
pub use runtime::serve::metrics::Metrics;
pub use runtime::serve::metrics_auth::MetricsAuth;
pub use runtime::serve::permissions::report_missing_permissions;
pub use runtime::serve::probes::{serve, Health};
