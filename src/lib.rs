//! ceph-osd-operator: reconciles `CephOSD` resources into one node-bound Pod per OSD.
//!
//! observe → plan → act: `controller` observes, `plan` decides (pure), `executor` acts.
pub mod backoff;
pub mod classify;
pub mod conditions;
pub mod controller;
pub mod crd;
pub mod desired;
pub mod events;
pub mod executor;
pub mod expectations;
pub mod failure;
pub mod hash;
pub mod labels;
pub mod lease;
pub mod metrics;
pub mod operator;
pub mod osd;
pub mod owned_objects;
pub mod plan;
pub mod preview;
pub mod render;
pub mod replica_sets;
pub mod rollout;
pub mod schema_check;
pub mod server;
pub mod status;
pub mod storage_rules;
pub mod template_rules;
pub mod validate;
pub mod written_status;
