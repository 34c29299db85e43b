//! Offline check of `spec.topology` and `spec.prePull` as the API server enforces them (the
//! CEL rules tying `topology` to `updateDomain: Topology` and refusing a misspelt `Auto`, the
//! patterns of a bucket type and a label key), with the field path.

use crate::crd::topology::{misspells_auto, AUTO_BUCKET_TYPE, AUTO_MISSPELT};
use crate::crd::{CephOsdSpec, UpdateDomain};

/// The longest name part of a label key (and a bucket type).
const MAX_NAME: usize = 63;

/// The longest label key the CRD's schema allows (a prefix of up to 253 and a name).
const MAX_KEY: usize = 316;

/// The first problem of the topology fields of `spec`, as `(path, message)`.
pub(crate) fn topology_problem(spec: &CephOsdSpec) -> Option<(String, String)> {
    let problem = |path: &str, message: String| Some((path.to_owned(), message));
    if let Some(pre_pull) = &spec.pre_pull {
        if pre_pull.command.as_ref().is_some_and(Vec::is_empty) {
            return problem(
                "spec.prePull.command",
                "must list at least one word (or be left out for the default [\"true\"])".into(),
            );
        }
    }
    let topology = match (&spec.topology, spec.update_domain) {
        (None, UpdateDomain::Topology) => {
            return problem(
                "spec.topology",
                "is required when spec.updateDomain is Topology (bucketType, and topologyKey \
                 without the Ceph gate)"
                    .into(),
            )
        }
        (None, _) => return None,
        (Some(_), domain) if domain != UpdateDomain::Topology => {
            return problem(
                "spec.topology",
                format!(
                    "is allowed only when spec.updateDomain is Topology, found {}",
                    serde_json::to_string(&domain).unwrap_or_default()
                ),
            )
        }
        (Some(topology), _) => topology,
    };
    if misspells_auto(&topology.bucket_type) {
        return problem(
            "spec.topology.bucketType",
            format!("{AUTO_MISSPELT}, found {:?}", topology.bucket_type),
        );
    }
    if topology.bucket_type != AUTO_BUCKET_TYPE && !is_bucket_type(&topology.bucket_type) {
        return problem(
            "spec.topology.bucketType",
            format!(
                "must be Auto or a CRUSH bucket type (like rack, row or zone: a lowercase letter, \
                 then at most 62 lowercase letters, digits, '_' or '-'), found {:?}",
                topology.bucket_type
            ),
        );
    }
    if let Some(key) = topology.topology_key.as_deref() {
        if !is_label_key(key) {
            return problem(
                "spec.topology.topologyKey",
                format!(
                    "must be a node label key (like topology.kubernetes.io/zone: an optional DNS \
                     subdomain and '/', then a name of 1 to 63 letters, digits, '-', '_' or '.' \
                     that starts and ends with a letter or digit), found {key:?}"
                ),
            );
        }
    }
    None
}

fn is_bucket_type(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && text.len() <= MAX_NAME
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn is_label_key(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    key.len() <= MAX_KEY && prefix.is_none_or(is_dns_subdomain) && is_label_name(name)
}

fn is_dns_subdomain(text: &str) -> bool {
    text.split('.').all(|label| {
        let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        label.starts_with(alphanumeric)
            && label.ends_with(alphanumeric)
            && label.chars().all(|c| alphanumeric(c) || c == '-')
    })
}

fn is_label_name(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_alphanumeric();
    name.len() <= MAX_NAME
        && name.starts_with(alphanumeric)
        && name.ends_with(alphanumeric)
        && name
            .chars()
            .all(|c| alphanumeric(c) || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests;
