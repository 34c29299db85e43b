//! The update domains OSDs are grouped in, by the spec's `updateDomain`: the words the
//! rollout, the disruption budget and `kubectl ceph-osd` share.

use crate::crd::osd::OsdKey;
use crate::crd::UpdateDomain;
use std::collections::BTreeMap;

/// How the OSD keys of a spec group into update domains: by key, by host, or by the failure
/// domain (bucket) each host is in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UpdateDomains<'a> {
    pub kind: UpdateDomain,
    /// For `Topology`: the bucket of each placed host. A host without one is a domain of its
    /// own (counted apart, never joined to a bucket by a guess; the rollout halts on it).
    pub bucket_of: Option<&'a BTreeMap<String, String>>,
}

impl UpdateDomains<'_> {
    /// Domains of `kind` that need no membership (`OSD`, `Host`; `Topology` with none known).
    pub(crate) fn plain(kind: UpdateDomain) -> Self {
        Self {
            kind,
            bucket_of: None,
        }
    }

    /// The id of the update domain `key` belongs to: its key, its host, or its host's bucket.
    pub(crate) fn id(&self, key: &OsdKey) -> String {
        match self.kind {
            UpdateDomain::Osd => key.to_string(),
            UpdateDomain::Host => key.host.clone(),
            UpdateDomain::Topology => (self.bucket_of)
                .and_then(|b| b.get(&key.host))
                .cloned()
                .unwrap_or_else(|| key.host.clone()),
        }
    }
}

impl UpdateDomains<'_> {
    /// Whether update domain `domain` holds OSDs of `host`.
    pub(crate) fn has_host(&self, domain: &str, host: &str) -> bool {
        match self.kind {
            UpdateDomain::Osd => domain
                .strip_prefix(host)
                .is_some_and(|d| d.starts_with(':')),
            UpdateDomain::Host => domain == host,
            UpdateDomain::Topology => match self.bucket_of.and_then(|b| b.get(host)) {
                Some(bucket) => bucket == domain,
                None => domain == host,
            },
        }
    }
}

/// The id of the update domain an OSD belongs to where no membership is known: its key, or
/// its host (also for `Topology` while its hosts' buckets are unknown). The runtime and the
/// CLI always know the membership; tests of `OSD` and `Host` domains need none.
#[cfg(test)]
pub(crate) fn domain_id(key: &OsdKey, domain: UpdateDomain) -> String {
    UpdateDomains::plain(domain).id(key)
}
