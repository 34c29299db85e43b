//! Which OSD a pod runs, and the disks it holds. What no edit can change comes first
//! (`pod_record`): the host its spec binds it to and the data device the operator recorded in
//! its env. A pod made before that record existed is believed by its annotations only while
//! they agree with its host and its name; otherwise its name and host tell which OSD it runs,
//! if exactly one.

use crate::crd::desired::DesiredOsds;
use crate::crd::osd::{DeviceId, OsdKey, SUFFIX_LEN};
use crate::crd::storage_rules::normalise_host;
use crate::labels;
use crate::pod::pod_record::{bound_host, recorded_data};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

/// Every disk `pod` may run a daemon on, as the CR whose OSDs are `desired` sees it: its
/// OSD's, the one its annotations name, and those its name and host fit when its OSD cannot
/// be told.
pub(crate) fn held_disks(pod: &Pod, desired: &DesiredOsds) -> Vec<DeviceId> {
    let identity = identify(pod, &pod.name_any(), desired);
    let mut disks: Vec<DeviceId> = identity
        .key
        .as_ref()
        .map(OsdKey::device_id)
        .into_iter()
        .chain(identity.annotated)
        .chain(identity.fitting)
        .collect();
    disks.sort();
    disks.dedup();
    disks
}

/// Which OSD a pod runs, and what its annotations are worth (see the module docs).
pub(crate) struct Identity {
    pub key: Option<OsdKey>,
    /// The disk its annotations name.
    pub annotated: Option<DeviceId>,
    pub tampered: Option<String>,
    /// Why it runs no OSD that can be told.
    pub unknown: Option<String>,
    /// Disks its name and host fit, when its OSD cannot be told.
    pub fitting: Vec<DeviceId>,
}

/// Tells which OSD `pod` (named `name`) runs.
pub(crate) fn identify(pod: &Pod, name: &str, desired: &DesiredOsds) -> Identity {
    let annotation = |k: &str| pod.annotations().get(k).map(String::as_str);
    let annotated = match (annotation(labels::HOST), annotation(labels::DATA)) {
        (Some(host), Some(data)) => Some(OsdKey::new(host, data)),
        _ => None,
    };
    let annotated_disk = annotated.as_ref().map(OsdKey::device_id);
    let host = bound_host(pod);
    let mut identity = Identity {
        key: None,
        annotated: annotated_disk.clone(),
        tampered: None,
        unknown: None,
        fitting: Vec::new(),
    };
    if let (Some(host), Some(data)) = (host, recorded_data(pod)) {
        // Made by this operator with its record: that is what it runs, whatever it says.
        let recorded = OsdKey::new(host, data);
        if recorded.prefixes(name) {
            if annotated_disk.as_ref() != Some(&recorded.device_id()) {
                identity.tampered = Some(disagreement(annotated.as_ref(), &recorded));
            }
            identity.key = Some(recorded);
        } else {
            identity.unknown = Some(format!(
                "its name does not start with {}",
                recorded.name_prefix()
            ));
            identity.fitting.push(recorded.device_id());
        }
        return identity;
    }
    let has_hash = annotation(labels::TEMPLATE_HASH).is_some_and(|h| !h.is_empty());
    let believed = match &annotated {
        None => Err("it lacks the host or data annotation".to_owned()),
        Some(_) if !has_hash => Err("it lacks the pod-template-hash annotation".to_owned()),
        Some(key) if !key.prefixes(name) => Err(format!(
            "its name does not start with {}",
            key.name_prefix()
        )),
        Some(key) if !host_agrees(host, &key.host) => Err(format!(
            "its host annotation says {} but it is bound to {}",
            key.host,
            host.unwrap_or_default()
        )),
        Some(key) => Ok(key.clone()),
    };
    match believed {
        Ok(key) if desired.osds.contains_key(&key) => identity.key = Some(key),
        Ok(key) => {
            // An OSD the CR does not list, named like one it lists: the annotations may have
            // been edited (the daemon started on what they said then), or the spec moved the
            // OSD to another spelling. It holds the disks its name fits too, until it is gone.
            let mut fitting = desired.named_like(name, SUFFIX_LEN);
            fitting.retain(|osd| host_agrees(host, &osd.key.host));
            identity.fitting = fitting.iter().map(|o| o.device.clone()).collect();
            identity.key = Some(key);
        }
        Err(why) => {
            // Its name and host may still tell: the OSDs of the CR they fit.
            let mut fitting = desired.named_like(name, SUFFIX_LEN);
            fitting.retain(|osd| host_agrees(host, &osd.key.host));
            if let [osd] = fitting.as_slice() {
                identity.tampered = Some(format!(
                    "{why}; its name and host say it runs OSD {}",
                    osd.key
                ));
                identity.key = Some(osd.key.clone());
            } else {
                identity.unknown = Some(why);
                identity.fitting = fitting.iter().map(|o| o.device.clone()).collect();
            }
        }
    }
    identity
}

/// `its annotations name h:/dev/x but it runs h:/dev/y`.
fn disagreement(annotated: Option<&OsdKey>, runs: &OsdKey) -> String {
    match annotated {
        Some(key) => format!("its annotations name {key} but it runs {runs}"),
        None => format!("it lacks the host or data annotation but runs {runs}"),
    }
}

/// Whether a pod bound to `bound` (unknown: `None`) may run on `host`.
fn host_agrees(bound: Option<&str>, host: &str) -> bool {
    bound.is_none_or(|b| normalise_host(b) == normalise_host(host))
}
