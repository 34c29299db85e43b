//! Manifests: CephOSDs (through the operator's own builder), the reference sample, the fake
//! kubelet's knobs on a pod template, and host names of a scenario's own.

use std::collections::BTreeSet;

use anyhow::{anyhow, Context as _};
use ceph_osd_operator::crd::CephOsd;
use ceph_osd_operator::testing::CephOsdBuilder;
use ceph_osd_operator::{OsdKey, TemplateHash};
use kube::api::ApiResource;
use serde_json::{json, Value};

use crate::paths::workspace_root;

/// Pod annotation (KWOK stage `pod-ready`): seconds after creation until the pod is Ready.
pub const READY_AFTER_ANNOTATION: &str = "testing.local/ready-after-seconds";
/// Pod annotation (KWOK stage `pod-running-never-ready`): `"never"` keeps the pod not Ready.
pub const READY_ANNOTATION: &str = "testing.local/ready";
/// Pod annotation (KWOK stage `pod-failed`): `"true"` makes the pod fail.
pub const FAIL_ANNOTATION: &str = "testing.local/fail";
/// Pod annotation (KWOK stage `pod-image-pull-failed`): `"ErrImagePull"` keeps the pod
/// Pending, its containers waiting for an image the kubelet cannot pull.
pub const PULL_ANNOTATION: &str = "testing.local/pull";

/// Field manager of the scenarios' server-side applies.
pub const FIELD_MANAGER: &str = "molecule-like-tests";
/// The reference sample CR, relative to the workspace root.
pub const SAMPLE: &str = "deploy/samples/ceph-osds.yaml";

/// A short random lowercase hex string (namespaces, names).
pub fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("{:06x}", h.finish() & 0xff_ffff)
}

/// The `ApiResource` of `CephOSD` (for untyped objects, e.g. malformed CRs).
pub fn cephosd_resource() -> ApiResource {
    ApiResource::erase::<CephOsd>(&())
}

/// The reference sample CR as JSON.
pub fn sample() -> anyhow::Result<Value> {
    let path = workspace_root().join(SAMPLE);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_saphyr::from_str(&text).map_err(|e| anyhow!("parsing {}: {e}", path.display()))
}

/// The fake kubelet's knobs on a pod template (KWOK stages in `kwok/stages.yaml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Knobs {
    /// Seconds after creation until the pod is Ready (`testing.local/ready-after-seconds`).
    pub ready_after: u32,
    /// The pod never becomes Ready (`testing.local/ready: never`).
    pub never_ready: bool,
    /// `spec.terminationGracePeriodSeconds`.
    pub grace: i64,
}

/// Adds the fake kubelet's `knobs` to a pod template: `testing.local/ready-after-seconds`,
/// `testing.local/ready: never` or not, and `spec.terminationGracePeriodSeconds`.
pub fn with_kubelet_knobs(mut template: Value, knobs: Knobs) -> Value {
    let annotations = &mut template["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[READY_AFTER_ANNOTATION] = json!(knobs.ready_after.to_string());
    if knobs.never_ready {
        annotations[READY_ANNOTATION] = json!("never");
    } else if let Some(map) = annotations.as_object_mut() {
        map.remove(READY_ANNOTATION);
    }
    template["spec"]["terminationGracePeriodSeconds"] = json!(knobs.grace);
    template
}

/// The sample's podTemplate with the kubelet knobs (Ready after 1 s, grace 1 s).
pub fn fast_sample_template() -> anyhow::Result<Value> {
    let sample = sample()?;
    let template = sample
        .pointer("/spec/podTemplate")
        .cloned()
        .ok_or_else(|| anyhow!("{SAMPLE} has no spec.podTemplate"))?;
    Ok(with_kubelet_knobs(
        template,
        Knobs {
            ready_after: 1,
            never_ready: false,
            grace: 1,
        },
    ))
}

/// The `spec.podTemplate.metadata` of a template edit to revision `rev` (label `rev`) whose
/// pods the test kubelet never makes Ready (`testing.local/ready: never`).
pub fn never_ready_revision(rev: &str) -> Value {
    json!({"labels": {"rev": rev}, "annotations": {READY_ANNOTATION: "never"}})
}

/// The `spec.podTemplate.metadata` of a template edit to revision `rev` (label `rev`) that
/// removes `testing.local/ready: never` again (the fix of [`never_ready_revision`]).
pub fn ready_again_revision(rev: &str) -> Value {
    json!({"labels": {"rev": rev}, "annotations": {READY_ANNOTATION: null}})
}

/// A `CephOSD` manifest.
pub fn cephosd(name: &str, storage: Value, update_domain: &str, template: Value) -> Value {
    CephOsdBuilder::new(name)
        .raw_storage(storage)
        .update_domain(update_domain)
        .template(template)
        .manifest()
}

/// The name of the scenarios' `CephOSD`.
pub const CR: &str = "ceph-osds";

/// Every OSD key of `devices` on each of `hosts`.
pub fn keys(hosts: &[impl AsRef<str>], devices: &[&str]) -> BTreeSet<OsdKey> {
    hosts
        .iter()
        .flat_map(|h| devices.iter().map(move |d| OsdKey::new(h.as_ref(), *d)))
        .collect()
}

/// A `spec.storage` of one entry: `devices` (as `data`) on each of `hosts`.
pub fn storage(hosts: &[impl AsRef<str>], devices: &[&str]) -> Value {
    ceph_osd_operator::testing::storage(hosts, devices)
}

/// `base` made unique to the run tagged `tag`: the tag joins its first DNS label
/// (`worker1` → `worker1-3f9c2a`, `w1.example.com` → `w1-3f9c2a.example.com`). A disk belongs
/// to one CephOSD cluster-wide, so scenarios running side by side must not name the same
/// host:data.
pub fn tagged_host(base: &str, tag: &str) -> String {
    match base.split_once('.') {
        Some((first, rest)) => format!("{first}-{tag}.{rest}"),
        None => format!("{base}-{tag}"),
    }
}

/// Whether `host` is a [`tagged_host`] of `tag`.
pub fn is_tagged_host(host: &str, tag: &str) -> bool {
    let first = host.split('.').next().unwrap_or(host);
    first
        .strip_suffix(tag)
        .is_some_and(|base| base.len() > 1 && base.ends_with('-'))
}

/// `manifest` (a CephOSD, or its spec) with every host of `spec.storage[].hosts[]` made unique
/// to the run tagged `tag` ([`tagged_host`]); everything else as it was. For manifests written
/// with fixed hosts (the reference sample): scenarios running side by side must not claim each
/// other's disks.
pub fn with_tagged_hosts(mut manifest: Value, tag: &str) -> Value {
    let spec = if manifest.get("spec").is_some() {
        &mut manifest["spec"]
    } else {
        &mut manifest
    };
    for entry in spec
        .get_mut("storage")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for host in entry
            .get_mut("hosts")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(base) = host.as_str() {
                *host = json!(tagged_host(base, tag));
            }
        }
    }
    manifest
}

/// The template hash of a CR's pod template (what its up-to-date pods carry).
pub fn hash_of(cr: &CephOsd) -> String {
    TemplateHash::of(&cr.spec.pod_template).as_str().to_owned()
}

/// A pod exactly as the reference (Ansible) operator would have laid it down — its name,
/// labels, annotations, node affinity and env — built here by hand rather than by the
/// operator's renderer.
pub fn reference_pod(
    template: &Value,
    cr_uid: &str,
    name: &str,
    host: &str,
    data: &str,
    db: &str,
    hash: &str,
) -> anyhow::Result<k8s_openapi::api::core::v1::Pod> {
    let mut pod = template.clone();
    pod["apiVersion"] = json!("v1");
    pod["kind"] = json!("Pod");
    let meta = &mut pod["metadata"];
    meta["name"] = json!(name);
    meta["labels"][ceph_osd_operator::labels::OWNER] = json!(format!("CephOSD-{CR}"));
    let annotations = &mut meta["annotations"];
    annotations[ceph_osd_operator::labels::TEMPLATE_HASH] = json!(hash);
    annotations[ceph_osd_operator::labels::HOST] = json!(host);
    annotations[ceph_osd_operator::labels::DATA] = json!(data);
    annotations[ceph_osd_operator::labels::DB] = json!(db);
    annotations[ceph_osd_operator::labels::POD_STATE] = json!("up-to-date");
    meta["ownerReferences"] = json!([{
        "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD", "name": CR, "uid": cr_uid,
    }]);
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "kubernetes.io/hostname", "operator": "In", "values": [host],
        }]}],
    });
    let env = [
        ("OSD_DEVICE", "data"),
        ("OSD_DB_DEVICE", "db"),
        ("OSD_WAL_DEVICE", "wal"),
    ]
    .map(|(var, key)| {
        json!({"name": var, "valueFrom": {"fieldRef": {
            "fieldPath": format!("metadata.annotations['ceph.elemental.net/{key}']"),
        }}})
    });
    for container in pod["spec"]["containers"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let list = &mut container["env"];
        if !list.is_array() {
            *list = json!([]);
        }
        if let Some(list) = list.as_array_mut() {
            list.extend(env.iter().cloned());
        }
    }
    Ok(serde_json::from_value(pod)?)
}

#[cfg(test)]
mod tests;
