//! What the scenarios share: pod uids by key and the reference sample on a
//! scenario's own hosts.

pub(crate) use std::collections::{BTreeMap, BTreeSet};
pub(crate) use std::time::Duration;

pub(crate) use ceph_osd_operator::crd::{CephOsd, UpdateDomain};
pub(crate) use ceph_osd_operator::labels;
pub(crate) use ceph_osd_operator::OsdKey;
pub(crate) use k8s_openapi::api::core::v1::Pod;
pub(crate) use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
pub(crate) use kube::ResourceExt;
pub(crate) use molecule_like_tests::journeys::scenario::{
    hold, Converged, Scenario, CONVERGE, ROLLOUT,
};
pub(crate) use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, hash_of, keys, never_ready_revision, random_suffix,
    ready_again_revision, reference_pod, storage, with_kubelet_knobs, Knobs, CR,
};
pub(crate) use molecule_like_tests::kubernetes::operator::OperatorOptions;
pub(crate) use molecule_like_tests::kubernetes::pods::{
    annotation, is_ready, names_by_key, pod_key,
};
pub(crate) use molecule_like_tests::recording::pods::PodRecorder;
pub(crate) use serde_json::{json, Value};

/// Sample hosts (each scenario uses its own: `s.hosts(SAMPLE_HOSTS)`, as `s.own_sample()` does)
/// and devices.
pub(crate) const SAMPLE_HOSTS: [&str; 2] = ["worker041.example.com", "worker042.example.com"];
pub(crate) const SAMPLE_DATA: [&str; 2] = [
    "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-1",
    "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-2",
];

pub(crate) fn sample_db(data: &str) -> &'static str {
    if data.ends_with("slot-1") {
        "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-10-part1"
    } else {
        "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-10-part2"
    }
}

/// The sample CR on the scenario's own hosts, with the kubelet knobs (ready after 1 s, grace
/// 1 s).
pub(crate) fn sample_cr(s: &Scenario, update_domain: &str) -> anyhow::Result<Value> {
    let sample = s.own_sample()?;
    Ok(cephosd(
        CR,
        sample["spec"]["storage"].clone(),
        update_domain,
        fast_sample_template()?,
    ))
}
