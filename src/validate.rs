//! Offline checks of a CephOSD manifest, mirroring what the CRD schema enforces on the API
//! server, with the field path in every message (used by `ceph-osd-operator render`).

use crate::crd::{CephOsd, MAX_NAME_LEN};
use serde_json::Value;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ManifestError {
    #[error("not valid YAML: {0}")]
    Yaml(String),
    #[error("expected kind CephOSD (apiVersion ceph.elemental.net/v1alpha1), found {0}")]
    WrongKind(String),
    #[error("{path}: {message}")]
    Field { path: String, message: String },
}

fn field(path: impl Into<String>, message: impl Into<String>) -> ManifestError {
    ManifestError::Field {
        path: path.into(),
        message: message.into(),
    }
}

/// Parses one CephOSD from YAML and checks it like the API server would.
pub fn parse_cephosd(text: &str) -> Result<CephOsd, ManifestError> {
    let value: Value =
        serde_saphyr::from_str(text).map_err(|e| ManifestError::Yaml(e.to_string()))?;
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
pub fn check(cr: &CephOsd) -> Result<(), ManifestError> {
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
        if let Some(j) = entry.hosts.iter().position(String::is_empty) {
            return Err(field(
                format!("spec.storage[{i}].hosts[{j}]"),
                "must not be empty",
            ));
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
                if path.is_some_and(String::is_empty) {
                    return Err(field(
                        format!("spec.storage[{i}].osds[{j}].{device}"),
                        "must not be empty",
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
apiVersion: ceph.elemental.net/v1alpha1
kind: CephOSD
metadata: {name: ceph-osds}
spec:
  storage:
    - hosts: [h1]
      osds: [{data: /dev/sdb}]
  updateDomain: Host
  podTemplate: {apiVersion: v1, kind: Pod, metadata: {}, spec: {containers: [{name: c}]}}
"#;

    fn error_of(text: &str) -> String {
        parse_cephosd(text).expect_err("rejected").to_string()
    }

    #[test]
    fn accepts_a_good_manifest() {
        let cr = parse_cephosd(GOOD).expect("parses");
        assert_eq!(cr.spec.storage[0].hosts, ["h1"]);
    }

    #[test]
    fn rejections_name_the_field() {
        let cases = [
            (
                GOOD.replace("updateDomain: Host", "updateDomain: host"),
                "spec.updateDomain",
            ),
            (GOOD.replace("  updateDomain: Host\n", ""), "updateDomain"),
            (
                GOOD.replace("hosts: [h1]", "hosts: []"),
                "spec.storage[0].hosts",
            ),
            (
                GOOD.replace("hosts: [h1]", "hosts: [\"\"]"),
                "spec.storage[0].hosts[0]",
            ),
            (
                GOOD.replace("osds: [{data: /dev/sdb}]", "osds: []"),
                "spec.storage[0].osds",
            ),
            (
                GOOD.replace("{data: /dev/sdb}", "{data: /dev/sdb, db: \"\"}"),
                "spec.storage[0].osds[0].db",
            ),
            (GOOD.replace("{data: /dev/sdb}", "{db: /dev/sdc}"), "data"),
            (
                GOOD.replace("hosts: [h1]", "hosts: h1"),
                "spec.storage[0].hosts",
            ),
            (
                GOOD.replace("name: ceph-osds", &format!("name: {}", "x".repeat(56))),
                "metadata.name",
            ),
            (GOOD.replace("kind: CephOSD", "kind: Pod"), "CephOSD"),
            ("storage: [".to_owned(), "YAML"),
        ];
        for (text, expected) in cases {
            let message = error_of(&text);
            assert!(
                message.contains(expected),
                "expected {expected:?} in {message:?}"
            );
        }
    }
}
