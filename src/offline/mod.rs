//! What the CLI does without a cluster: read and check a manifest as the API server would, and
//! preview the pods a CephOSD gets.

pub(crate) mod manifest;
pub(crate) mod preview;
mod schema_check;
