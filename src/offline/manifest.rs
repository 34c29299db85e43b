//! A CephOSD manifest file read and checked offline: bounded reading, one document, and what
//! the CRD schema enforces on the API server, with the field path in every message (used by
//! `ceph-osd-operator render`).

use crate::crd::desired::desired_osds;
use crate::crd::server_numbers::normalise_numbers;
use crate::crd::storage_rules::{device_path_problem, host_problem};
use crate::crd::template_rules::template_problems;
use crate::crd::{cephosd_schema, CephOsd, MAX_NAME_LEN};
use crate::offline::schema_check::first_mismatch;
use crate::offline::topology_check::topology_problem;
use serde_json::Value;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::LazyLock;

/// Built once: deriving the CRD is the slowest part of a check.
static SCHEMA: LazyLock<Result<Value, String>> =
    LazyLock::new(|| cephosd_schema().map_err(|e| e.to_string()));

/// The largest manifest read: the API server's limit for one request body.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 3 * 1024 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ManifestError {
    #[error("cannot read: {0}")]
    Read(String),
    #[error("larger than 3 MiB, the API server's limit for one request")]
    TooLarge,
    #[error("not UTF-8 text")]
    NotText,
    #[error("holds {0} YAML documents: one CephOSD per file")]
    Documents(usize),
    #[error("holds no YAML document: expected one CephOSD")]
    Empty,
    #[error("not valid YAML: {0}")]
    Yaml(String),
    #[error("expected kind CephOSD (apiVersion ceph.elemental.net/v1alpha1), found {0}")]
    WrongKind(String),
    #[error("{path}: {message}")]
    Field { path: String, message: String },
    #[error("cannot check it: {0}")]
    Schema(String),
}

fn field(path: impl Into<String>, message: impl Into<String>) -> ManifestError {
    ManifestError::Field {
        path: path.into(),
        message: message.into(),
    }
}

/// Reads a manifest file, at most `MAX_MANIFEST_BYTES` of UTF-8 text (a directory, a device
/// or a huge file is refused without reading it all).
pub fn read_manifest(path: &Path) -> Result<String, ManifestError> {
    let read = |e: std::io::Error| ManifestError::Read(e.to_string());
    let file = File::open(path).map_err(read)?;
    if file.metadata().map_err(read)?.is_dir() {
        return Err(ManifestError::Read("is a directory".to_owned()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(ManifestError::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| ManifestError::NotText)
}

/// Parses one CephOSD from YAML (or JSON) and checks it like the API server would; numbers
/// come back as the server stores them (a whole `1.0` or `1e3` as an integer).
pub fn parse_cephosd(text: &str) -> Result<CephOsd, ManifestError> {
    let documents: Vec<Value> =
        serde_saphyr::from_str_multiple(text).map_err(|e| ManifestError::Yaml(e.to_string()))?;
    let mut documents: Vec<Value> = documents.into_iter().filter(|d| !d.is_null()).collect();
    if documents.len() > 1 {
        return Err(ManifestError::Documents(documents.len()));
    }
    let mut value = documents.pop().ok_or(ManifestError::Empty)?;
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("nothing");
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if kind != "CephOSD" || api_version != "ceph.elemental.net/v1alpha1" {
        return Err(ManifestError::WrongKind(
            format!("{api_version} {kind}").trim().to_owned(),
        ));
    }
    let schema = SCHEMA
        .as_ref()
        .map_err(|e| ManifestError::Schema(e.clone()))?;
    if let Some((path, message)) = first_mismatch(schema, &value) {
        return Err(field(path, message));
    }
    // From here on, the CephOSD as the API server stores it: `cpu: 1.0` is `cpu: 1`.
    normalise_numbers(&mut value);
    let cr: CephOsd = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        field(
            if path == "." { String::new() } else { path },
            e.inner().to_string(),
        )
    })?;
    check(&cr)?;
    Ok(cr)
}

/// The schema's constraints that serde cannot express (lengths, non-empty lists).
pub(crate) fn check(cr: &CephOsd) -> Result<(), ManifestError> {
    let name = cr.metadata.name.as_deref().unwrap_or("");
    if name.is_empty() {
        return Err(field("metadata.name", "is required"));
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Err(field(
            "metadata.name",
            format!("must be at most {MAX_NAME_LEN} characters: the owner label CephOSD-<name> must fit in 63"),
        ));
    }
    for (i, entry) in cr.spec.storage.iter().enumerate() {
        if entry.hosts.is_empty() {
            return Err(field(
                format!("spec.storage[{i}].hosts"),
                "must list at least one host",
            ));
        }
        for (j, host) in entry.hosts.iter().enumerate() {
            let problem = if host.is_empty() {
                Some("must not be empty")
            } else {
                host_problem(host)
            };
            if let Some(problem) = problem {
                return Err(field(format!("spec.storage[{i}].hosts[{j}]"), problem));
            }
        }
        if entry.osds.is_empty() {
            return Err(field(
                format!("spec.storage[{i}].osds"),
                "must list at least one OSD",
            ));
        }
        for (j, osd) in entry.osds.iter().enumerate() {
            let devices = [
                ("data", Some(&osd.data)),
                ("db", osd.db.as_ref()),
                ("wal", osd.wal.as_ref()),
            ];
            for (device, path) in devices {
                let problem = match path {
                    Some(path) if path.is_empty() => Some("must not be empty"),
                    Some(path) => device_path_problem(path),
                    None => None,
                };
                if let Some(problem) = problem {
                    return Err(field(
                        format!("spec.storage[{i}].osds[{j}].{device}"),
                        problem,
                    ));
                }
            }
        }
    }
    if !cr.spec.pod_template.is_object() {
        return Err(field(
            "spec.podTemplate",
            "must be a complete Pod (a mapping)",
        ));
    }
    if let Some(problem) = template_problems(&cr.spec.pod_template).into_iter().next() {
        return Err(field(problem.path, problem.message));
    }
    if let Some((path, message)) = topology_problem(&cr.spec) {
        return Err(field(path, message));
    }
    // Not a schema rule, but the operator would not act on these OSDs: say so before applying.
    if let Some(problem) = desired_osds(&cr.spec)
        .problems
        .into_iter()
        .find(|p| !p.blocks.is_empty())
    {
        return Err(field("spec.storage", problem.message));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
