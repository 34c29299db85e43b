//! Faults asked for by disk: a daemon withheld (never boots), a daemon that reports no pod,
//! daemons run as the reference operator's pods run them.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;

use super::table::Disk;

/// Faults asked for by disk (see [`CephBridge::withhold`](super::CephBridge::withhold),
/// [`CephBridge::anonymous`](super::CephBridge::anonymous)); by default none.
#[derive(Clone, Debug, Default)]
pub(super) struct Faults {
    withheld: BTreeSet<Disk>,
    anonymous: BTreeSet<Disk>,
    /// [`CephBridge::like_reference_pods`](super::CephBridge::like_reference_pods).
    like_reference_pods: bool,
}

impl Faults {
    pub(super) fn withhold(&mut self, disk: Disk) {
        self.withheld.insert(disk);
    }

    pub(super) fn release(&mut self, disk: &Disk) {
        self.withheld.remove(disk);
    }

    pub(super) fn make_anonymous(&mut self, disk: Disk) {
        self.anonymous.insert(disk);
    }

    pub(super) fn run_like_reference_pods(&mut self) {
        self.like_reference_pods = true;
    }

    /// Whether no daemon is to start on `disk`.
    pub(super) fn is_withheld(&self, disk: Option<&Disk>) -> bool {
        disk.is_some_and(|d| self.withheld.contains(d))
    }

    /// Whether `disk`'s daemons start without the pod's name and namespace.
    pub(super) fn is_anonymous(&self, disk: Option<&Disk>) -> bool {
        disk.is_some_and(|d| self.anonymous.contains(d))
    }

    /// The image `pod`'s daemon reports when it runs as a reference operator's pod runs it:
    /// when asked for, and `pod`'s first container declares no `POD_NAME` env.
    pub(super) fn reference_image(&self, pod: &Pod) -> Option<String> {
        if !self.like_reference_pods {
            return None;
        }
        let container = pod.spec.as_ref()?.containers.first()?;
        let declares = (container.env.iter().flatten()).any(|e| e.name == "POD_NAME");
        (!declares).then(|| {
            container
                .image
                .clone()
                .unwrap_or_else(|| "unknown".to_owned())
        })
    }
}
