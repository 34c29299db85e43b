//! The vocabulary of what a plan says: the writes it asks for (actions), the status conditions
//! and their reasons, the Events, and what kind of API call failed.

pub(crate) mod actions;
pub(in crate::plan) mod conditions;
pub(crate) mod events;
pub(crate) mod failure;
