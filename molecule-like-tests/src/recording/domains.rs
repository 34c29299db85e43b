//! How a rollout's OSD keys group into update domains, as the invariants count them: each key
//! (`OSD`), each host (`Host`), or each host's failure domain (`Topology`: the CRUSH bucket the
//! harness put the host in). A host the harness put in no bucket is a domain of its own: the
//! checks then count more domains, never fewer.

use std::collections::{BTreeMap, BTreeSet};

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;

/// The update domains of a rollout (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Domains {
    Osd,
    Host,
    /// Each host's bucket (host → bucket).
    Buckets(BTreeMap<String, String>),
}

impl From<UpdateDomain> for Domains {
    /// `Topology` without the hosts' buckets: every host a domain of its own.
    fn from(domain: UpdateDomain) -> Self {
        match domain {
            UpdateDomain::Osd => Self::Osd,
            UpdateDomain::Host => Self::Host,
            UpdateDomain::Topology => Self::Buckets(BTreeMap::new()),
        }
    }
}

impl Domains {
    /// The domain `key` belongs to: the key, its host, or its host's bucket.
    pub fn id(&self, key: &OsdKey) -> String {
        match self {
            Self::Osd => key.to_string(),
            Self::Host => key.host.clone(),
            Self::Buckets(bucket_of) => bucket_of
                .get(&key.host)
                .cloned()
                .unwrap_or_else(|| format!("{} (in no bucket)", key.host)),
        }
    }

    /// `ordered` keys (in rollout order) grouped into domains: hosts in case-insensitive
    /// order, buckets in the order of their first key; each domain's keys in `ordered`'s order.
    pub fn group(&self, ordered: &[OsdKey]) -> Vec<Vec<OsdKey>> {
        let mut ids: Vec<String> = ordered.iter().map(|k| self.id(k)).collect();
        if *self == Self::Host {
            ids.sort_by_key(|h| (h.to_lowercase(), h.clone()));
        }
        let mut seen = BTreeSet::new();
        ids.retain(|id| seen.insert(id.clone()));
        ids.iter()
            .map(|id| {
                (ordered.iter())
                    .filter(|k| self.id(k) == *id)
                    .cloned()
                    .collect()
            })
            .collect()
    }

    /// Whether a domain's OSDs all go at once (a host's, a bucket's), not one by one.
    pub fn all_at_once(&self) -> bool {
        !matches!(self, Self::Osd)
    }
}

#[cfg(test)]
mod tests;
