//! ceph-osd-operator: reconciles `CephOSD` resources into one node-bound Pod per OSD.
//!
//! observe → plan → act: `controller` observes, `plan` decides (pure), `executor` acts.
//! Public: the resource types (`crd`), the label and annotation keys (`labels`), and what the
//! binary, the end-to-end harness and the benchmarks use, re-exported below.

pub mod crd;
pub mod labels;

mod actions;
mod api_requests;
mod backoff;
mod claims_registry;
mod classify;
mod conditions;
mod controller;
mod desired;
mod disk_claims;
mod events;
mod executor;
mod expanded_spec;
mod expectations;
mod failure;
mod hash;
mod lease;
mod locked;
mod manifest;
mod metrics;
mod metrics_auth;
mod operator;
mod osd;
mod osd_pod;
mod owned_objects;
mod permissions;
mod plan;
mod pod_additions;
mod pod_record;
mod preview;
mod probes;
mod replica_sets;
mod review_cache;
mod rollout;
mod schema_check;
mod server_numbers;
mod status;
mod storage_rules;
mod template_rules;
mod watched_pod;
mod written_status;

pub use actions::Action;
pub use api_requests::counted_client;
pub use controller::Settings;
pub use expanded_spec::ExpandedSpec;
pub use hash::TemplateHash;
pub use lease::{lease_namespace, LeaseSettings, NoLeaseNamespace};
pub use manifest::{parse_cephosd, read_manifest, ManifestError};
pub use metrics::Metrics;
pub use metrics_auth::MetricsAuth;
pub use operator::run;
pub use osd::{CountingSuffix, OsdKey, RandomSuffix, SuffixSource};
pub use permissions::report_missing_permissions;
pub use plan::{plan, plan_expanded, Observed, Plan, MAX_CREATIONS_PER_PLAN};
pub use preview::{created_pods, preview_pods};
pub use probes::{serve, Health};
