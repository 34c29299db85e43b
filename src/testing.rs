//! CephOSDs for the unit tests, the benchmarks and the end-to-end harness: one builder, so they
//! all mean the same by "a CephOSD of these hosts and disks"; and, for the unit tests alone,
//! builders of the Ceph gate's inputs (`gate_inputs`). Not part of the operator's API.

use crate::crd::CephOsd;
use serde::Serialize;
use serde_json::{json, Value};

/// A CephOSD manifest, built up as JSON: what the harness applies is exactly what it wrote,
/// malformed on purpose or not; [`CephOsdBuilder::build`] reads it as the API server's
/// objects are read.
#[derive(Clone, Debug)]
pub struct CephOsdBuilder {
    manifest: Value,
}

impl CephOsdBuilder {
    /// A CephOSD named `name` without storage, OSD update domain, an empty pod template.
    pub fn new(name: &str) -> Self {
        Self {
            manifest: json!({
                "apiVersion": "ceph.elemental.net/v1alpha1",
                "kind": "CephOSD",
                "metadata": {"name": name},
                "spec": {"storage": [], "updateDomain": "OSD", "podTemplate": {}},
            }),
        }
    }

    /// Adds a storage entry: every device of `datas` (as `data`) on every host of `hosts`.
    #[must_use]
    pub fn storage(mut self, hosts: &[impl AsRef<str>], datas: &[impl AsRef<str>]) -> Self {
        if let Some(entries) = self.manifest["spec"]["storage"].as_array_mut() {
            entries.extend(
                storage(hosts, datas)
                    .as_array()
                    .into_iter()
                    .flatten()
                    .cloned(),
            );
        }
        self
    }

    /// Adds a storage entry as given (a `StorageEntry`, or JSON).
    #[must_use]
    pub fn entry(mut self, entry: impl Serialize) -> Self {
        if let Some(entries) = self.manifest["spec"]["storage"].as_array_mut() {
            entries.push(json_of(entry));
        }
        self
    }

    /// Replaces `spec.storage` with `storage`, whatever it is.
    #[must_use]
    pub fn raw_storage(mut self, storage: Value) -> Self {
        self.manifest["spec"]["storage"] = storage;
        self
    }

    /// Sets `spec.updateDomain`: an `UpdateDomain`, or any string.
    #[must_use]
    pub fn update_domain(mut self, domain: impl Serialize) -> Self {
        self.manifest["spec"]["updateDomain"] = json_of(domain);
        self
    }

    #[must_use]
    pub fn template(mut self, template: Value) -> Self {
        self.manifest["spec"]["podTemplate"] = template;
        self
    }

    #[must_use]
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.manifest["metadata"]["namespace"] = json!(namespace);
        self
    }

    #[must_use]
    pub fn uid(mut self, uid: &str) -> Self {
        self.manifest["metadata"]["uid"] = json!(uid);
        self
    }

    #[must_use]
    pub fn generation(mut self, generation: i64) -> Self {
        self.manifest["metadata"]["generation"] = json!(generation);
        self
    }

    /// The manifest as JSON.
    pub fn manifest(self) -> Value {
        self.manifest
    }

    /// The typed CephOSD (an error when the manifest is not one).
    pub fn build(self) -> Result<CephOsd, serde_json::Error> {
        serde_json::from_value(self.manifest)
    }
}

/// A `spec.storage` of one entry: every device of `datas` (as `data`) on every host of `hosts`.
pub fn storage(hosts: &[impl AsRef<str>], datas: &[impl AsRef<str>]) -> Value {
    let hosts: Vec<&str> = hosts.iter().map(AsRef::as_ref).collect();
    let osds: Vec<Value> = datas.iter().map(|d| json!({"data": d.as_ref()})).collect();
    json!([{"hosts": hosts, "osds": osds}])
}

fn json_of(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
pub(crate) mod gate_inputs;
#[cfg(test)]
pub(crate) mod observed_pods;
#[cfg(test)]
mod tests;
