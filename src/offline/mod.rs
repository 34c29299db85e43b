//! What the CLI does without a cluster: read and check a manifest as the API server would, and
//! preview the pods a CephOSD gets.

pub(crate) mod eta;
pub(crate) mod failure_domains;
pub(crate) mod manifest;
pub(crate) mod plan_text;
pub(crate) mod preview;
pub(crate) mod release_preview;
pub(crate) mod rollout_preview;
mod schema_check;
pub(crate) mod status_text;
pub(crate) mod status_view;
mod topology_check;

#[cfg(test)]
mod tests;
