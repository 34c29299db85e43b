//! What the process offers and needs around the controller: leader election on a Lease, the
//! probe and metrics endpoint, who may read `/metrics`, the metrics and the count of API
//! requests, and the RBAC check at start.

pub(crate) mod api_requests;
pub(crate) mod lease;
pub(crate) mod metrics;
pub(crate) mod metrics_auth;
pub(crate) mod permissions;
pub(crate) mod probes;
mod review_cache;
