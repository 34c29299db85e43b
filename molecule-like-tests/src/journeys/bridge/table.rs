//! The bridge's table: each disk (`host:data`) to its pre-created OSD id, and each pod's disk
//! as a kubelet would run it, kept from when the pod was first seen bound.

use std::collections::BTreeMap;

use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::kubernetes::pods::annotation;

/// A disk, whatever the spelling of its key (`OsdKey::device_id`, displayed).
pub(super) type Disk = String;

pub(super) fn disk_of(key: &OsdKey) -> Disk {
    key.device_id().to_string()
}

/// The OSD ids of the disks, and the disk of each pod (see the module docs).
pub(super) struct Table {
    osds: BTreeMap<Disk, u32>,
    /// The disk of each pod (uid) as first seen bound; None when it has none.
    pods: BTreeMap<String, Option<Disk>>,
}

impl Table {
    pub(super) fn new(osds: &BTreeMap<OsdKey, u32>) -> Self {
        Self {
            osds: osds.iter().map(|(k, id)| (disk_of(k), *id)).collect(),
            pods: BTreeMap::new(),
        }
    }

    /// Keeps `pod`'s disk the first time it is seen bound.
    pub(super) fn learn(&mut self, pod: &Pod) {
        let uid = pod.uid().unwrap_or_default();
        if !self.pods.contains_key(&uid) && bound(pod) {
            self.pods.insert(uid, pod_disk(pod));
        }
    }

    /// The disk of pod `uid`, as first seen bound.
    pub(super) fn disk(&self, uid: &str) -> Option<&Disk> {
        self.pods.get(uid).and_then(Option::as_ref)
    }

    /// The OSD id of `disk`.
    pub(super) fn osd(&self, disk: &Disk) -> Option<u32> {
        self.osds.get(disk).copied()
    }

    /// From now on `disk`'s OSD id is `id` (a blank disk prepared with that id).
    pub(super) fn set_osd(&mut self, disk: &Disk, id: u32) {
        self.osds.insert(disk.clone(), id);
    }

    /// The pods (uid) seen bound on `disk`.
    pub(super) fn pods_on(&self, disk: &Disk) -> Vec<String> {
        (self.pods.iter())
            .filter(|(_, d)| d.as_ref() == Some(disk))
            .map(|(uid, _)| uid.clone())
            .collect()
    }

    /// The OSD id of pod `uid`'s disk.
    pub(super) fn osd_of(&self, uid: &str) -> Option<u32> {
        self.disk(uid).and_then(|d| self.osd(d))
    }
}

/// The disk a kubelet would run a bound pod's daemon on: its first container's `OSD_DEVICE`
/// on its node, else its annotations.
pub(super) fn pod_disk(pod: &Pod) -> Option<Disk> {
    let node = pod.spec.as_ref()?.node_name.clone()?;
    let env = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.env.as_ref())
        .and_then(|env| env.iter().find(|e| e.name == "OSD_DEVICE"))
        .and_then(|e| e.value.clone());
    match env {
        Some(data) => Some(disk_of(&OsdKey::new(node, data))),
        None => annotation(pod, labels::HOST)
            .zip(annotation(pod, labels::DATA))
            .map(|(h, d)| disk_of(&OsdKey::new(h, d))),
    }
}

pub(super) fn bound(pod: &Pod) -> bool {
    pod.spec.as_ref().is_some_and(|s| s.node_name.is_some())
}

pub(super) fn running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && bound(pod)
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

pub(super) fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
