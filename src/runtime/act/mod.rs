//! Acting on what was planned: the executor that applies a plan through the API, the
//! finalizer's writes, and the report on a CephOSD the operator cannot read.

pub(crate) mod executor;
pub(crate) mod finalizer;
pub(crate) mod unreadable;
