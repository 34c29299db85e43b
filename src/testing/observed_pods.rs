//! Observed pods for the planner's rule tests, as classify makes them.

use crate::crd::osd::OsdKey;
use crate::plan::observed::classify::{ObservedPod, Ownership, PodClass, Workload};
use k8s_openapi::jiff::Timestamp;

/// The pod of `key` in `class`, ours, created at `created`; Ready as its class says.
pub(crate) fn observed_pod(key: OsdKey, class: PodClass, created: Timestamp) -> ObservedPod {
    ObservedPod {
        name: format!("{}x", key.name_prefix()),
        uid: None,
        device: Some(key.device_id()),
        osd: Some(0),
        key: Some(key),
        ready: matches!(
            class,
            PodClass::UpToDate | PodClass::OutOfDate | PodClass::Ready
        ),
        class,
        state: None,
        created: Some(created),
        soaking_since: None,
        deleted: None,
        ownership: Ownership::Controller,
        workload: Workload::Pod,
        unschedulable: None,
        also_holds: Vec::new(),
        tampered: None,
        duplicate: false,
        domain_label: None,
    }
}
