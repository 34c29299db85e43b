//! Building an OSD pod: the CR's template with the operator's additions, and reading back what
//! a pod records of its OSD. Pure; the planner decides which pods to build.

pub(crate) mod osd_pod;
pub(crate) mod pod_additions;
pub(crate) mod pod_record;
