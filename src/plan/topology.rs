//! Which failure domain (CRUSH bucket) each host of a CephOSD is in, for
//! `updateDomain: Topology`, from what the runtime learnt: Ceph's CRUSH map when the gate is
//! on, a node label (`spec.topology.topologyKey`) otherwise, both when both are there. Pure.
//! A host without a bucket, or one Ceph and its label disagree on, is never placed by a guess:
//! it is named, and the rollout halts on it.

use crate::crd::topology::{misspells_auto, TopologySpec, AUTO_MISSPELT};
use crate::crd::FailureDomainsStatus;
use std::collections::BTreeMap;

pub(crate) mod auto_type;

/// What Ceph's CRUSH map says about a CephOSD's hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrushPlacement {
    /// The widest bucket type every pool's CRUSH rule spreads its replicas across (what
    /// `bucketType: Auto` stands for), or why there is none.
    pub auto_type: Result<String, String>,
    /// For each host of the CephOSD that CRUSH has a host bucket for: the buckets above it,
    /// by type (`rack` → `rack1`), its host bucket included (`host` → its name in CRUSH).
    pub ancestors: BTreeMap<String, BTreeMap<String, String>>,
}

/// What the runtime learnt of the hosts' failure domains.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopologyView {
    /// Ceph's CRUSH map (None: Ceph not looked at — the gate is off; `Err`: it could not be
    /// read, said why).
    pub crush: Option<Result<CrushPlacement, String>>,
    /// The value of `spec.topology.topologyKey` on each host's Node (`None`: the Node has no
    /// such label; a host missing here has no Node).
    pub labels: BTreeMap<String, Option<String>>,
}

/// The failure domain of each host, as the rollout uses it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostBuckets {
    /// The bucket type the update domains are (`Auto` resolved), when known.
    pub bucket_type: Option<String>,
    /// Each placed host's bucket.
    pub bucket_of: BTreeMap<String, String>,
    /// Each host that could not be placed, and why.
    pub unplaced: BTreeMap<String, String>,
    /// Why no host could be placed at all, if so.
    pub unknown: Option<String>,
}

impl HostBuckets {
    /// Why the rollout cannot step by failure domain now, naming what is missing: no
    /// membership, or the first hosts without a bucket.
    pub(crate) fn halt(&self) -> Option<String> {
        if let Some(why) = &self.unknown {
            return Some(format!("the update domains are unknown: {why}"));
        }
        let mut unplaced = self.unplaced.iter();
        let (host, why) = unplaced.next()?;
        let more = match unplaced.count() {
            0 => String::new(),
            n => format!(" (and {n} more hosts)"),
        };
        Some(format!(
            "host {host} is in no known failure domain: {why}{more}"
        ))
    }
}

impl From<&HostBuckets> for FailureDomainsStatus {
    fn from(buckets: &HostBuckets) -> Self {
        let mut by_bucket: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (host, bucket) in &buckets.bucket_of {
            by_bucket
                .entry(bucket.clone())
                .or_default()
                .push(host.clone());
        }
        Self {
            bucket_type: buckets.bucket_type.clone(),
            buckets: by_bucket,
            unplaced: buckets.unplaced.clone(),
        }
    }
}

/// The failure domain of each of `hosts` under `topology`, from `view`.
pub(crate) fn host_buckets<'h>(
    topology: &TopologySpec,
    hosts: impl IntoIterator<Item = &'h str>,
    view: &TopologyView,
) -> HostBuckets {
    let mut out = HostBuckets::default();
    let crush = match &view.crush {
        Some(Err(why)) => {
            out.unknown = Some(format!("Ceph's CRUSH map could not be read: {why}"));
            return out;
        }
        Some(Ok(crush)) => Some(crush),
        None => None,
    };
    if misspells_auto(&topology.bucket_type) {
        out.unknown = Some(format!(
            "spec.topology.bucketType {AUTO_MISSPELT}, found {:?}",
            topology.bucket_type
        ));
        return out;
    }
    let bucket_type = match (topology.is_auto(), crush) {
        (false, _) => topology.bucket_type.clone(),
        (true, Some(crush)) => match &crush.auto_type {
            Ok(t) => t.clone(),
            Err(why) => {
                out.unknown = Some(format!("spec.topology.bucketType is Auto: {why}"));
                return out;
            }
        },
        (true, None) => {
            out.unknown = Some(
                "spec.topology.bucketType is Auto, which Ceph's CRUSH rules decide, and the \
                 Ceph gate is off: name a bucket type"
                    .to_owned(),
            );
            return out;
        }
    };
    let key = topology.topology_key.as_deref();
    if crush.is_none() && key.is_none() {
        out.unknown = Some(
            "the Ceph gate is off and spec.topology.topologyKey names no node label to read \
             the failure domains from"
                .to_owned(),
        );
        return out;
    }
    for host in hosts {
        match place(host, &bucket_type, crush, key, view) {
            Ok(bucket) => out.bucket_of.insert(host.to_owned(), bucket),
            Err(why) => out.unplaced.insert(host.to_owned(), why),
        };
    }
    out.bucket_type = Some(bucket_type);
    out
}

/// The bucket of type `bucket_type` that `host` is in: CRUSH's, checked against the label's
/// when both are there.
fn place(
    host: &str,
    bucket_type: &str,
    crush: Option<&CrushPlacement>,
    key: Option<&str>,
    view: &TopologyView,
) -> Result<String, String> {
    let label = key.map(|key| match view.labels.get(host) {
        None => Err(format!("no Node named {host} to read label {key} from")),
        Some(None) => Err(format!("its Node has no label {key}")),
        Some(Some(value)) => Ok(value.clone()),
    });
    let Some(crush) = crush else {
        // No Ceph: the label alone (there is one: checked by the caller).
        return label.unwrap_or_else(|| Err("no membership".to_owned()));
    };
    let ancestors = crush
        .ancestors
        .get(host)
        .ok_or_else(|| "Ceph's CRUSH map has no host bucket for it".to_owned())?;
    let bucket = ancestors.get(bucket_type).ok_or_else(|| {
        format!("it is under no CRUSH bucket of type {bucket_type} in Ceph's CRUSH map")
    })?;
    match label {
        None => Ok(bucket.clone()),
        Some(Ok(value)) if value == *bucket => Ok(bucket.clone()),
        Some(Ok(value)) => Err(format!(
            "Ceph's CRUSH map has it in {bucket_type} {bucket} but its label {} says {value}",
            key.unwrap_or_default()
        )),
        Some(Err(why)) => Err(format!(
            "Ceph's CRUSH map has it in {bucket_type} {bucket} but {why}"
        )),
    }
}

#[cfg(test)]
mod tests;
