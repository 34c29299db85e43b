//! Building an OSD pod: the CR's template with the operator's additions, and reading back what
//! a pod records of its OSD; the facts of a pod that the planner and the runtime both read
//! (which OSD it runs and the disks it holds, what its status says, whether an owner reference
//! names a CephOSD). Pure; the planner decides which pods to build.

pub(crate) mod identity;
pub(crate) mod osd_pod;
pub(crate) mod owner_reference;
pub(crate) mod pod_additions;
pub(crate) mod pod_record;
pub(crate) mod pod_status;
pub(crate) mod prepare_id;
