//! The failure domains `kubectl ceph-osd` groups the hosts of an `updateDomain: Topology`
//! CephOSD by: the membership the operator recorded in `status.failureDomains`, never a
//! guess. Hosts it does not place (none recorded yet, in no known failure domain, another
//! bucket type) are named with why, and no step is shown for them.

use crate::crd::desired::desired_osds;
use crate::crd::update_domain::UpdateDomains;
use crate::crd::{CephOsd, UpdateDomain};
use crate::plan::topology::{CrushPlacement, HostBuckets, TopologyView};
use std::collections::{BTreeMap, BTreeSet};

/// The membership the CLI shows for one CephOSD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordedDomains {
    pub(crate) kind: UpdateDomain,
    /// The bucket type of the recorded membership (`Auto` resolved).
    pub(crate) bucket_type: Option<String>,
    /// Each placed host's bucket.
    pub(crate) bucket_of: BTreeMap<String, String>,
    /// Each bucket's hosts.
    pub(crate) buckets: BTreeMap<String, Vec<String>>,
    /// Each host of the CephOSD in no known failure domain, and why.
    pub(crate) unplaced: BTreeMap<String, String>,
    /// Why the rollout cannot step by failure domain as recorded (None: every host placed).
    pub(crate) unknown: Option<String>,
}

impl RecordedDomains {
    /// What `cr.status.failureDomains` says of the hosts of `cr.spec` (nothing for `OSD` and
    /// `Host` update domains).
    pub(crate) fn of(cr: &CephOsd) -> Self {
        let kind = cr.spec.update_domain;
        let mut out = Self {
            kind,
            bucket_type: None,
            bucket_of: BTreeMap::new(),
            buckets: BTreeMap::new(),
            unplaced: BTreeMap::new(),
            unknown: None,
        };
        if kind != UpdateDomain::Topology {
            return out;
        }
        let Some(topology) = &cr.spec.topology else {
            out.unknown =
                Some("spec.topology is required when spec.updateDomain is Topology".into());
            return out;
        };
        let recorded = cr.status.as_ref().and_then(|s| s.failure_domains.as_ref());
        let Some(recorded) = recorded else {
            out.unknown = Some(
                "no failure domain is recorded yet (status.failureDomains): the operator has \
                 not placed the hosts"
                    .to_owned(),
            );
            return out;
        };
        let Some(bucket_type) = recorded.bucket_type.clone() else {
            out.unknown = Some(
                "the operator could not tell the failure domains (status.failureDomains has no \
                 bucket type; the Progressing condition says why)"
                    .to_owned(),
            );
            return out;
        };
        if !topology.is_auto() && topology.bucket_type != bucket_type {
            out.unknown = Some(format!(
                "status.failureDomains is by {bucket_type} and spec.topology.bucketType is {}: \
                 the operator has not placed the hosts by {} yet",
                topology.bucket_type, topology.bucket_type
            ));
            return out;
        }
        let hosts: BTreeSet<String> = (desired_osds(&cr.spec).osds.keys())
            .map(|k| k.host.clone())
            .collect();
        for (bucket, members) in &recorded.buckets {
            for host in members.iter().filter(|h| hosts.contains(*h)) {
                out.bucket_of.insert(host.clone(), bucket.clone());
                out.buckets
                    .entry(bucket.clone())
                    .or_default()
                    .push(host.clone());
            }
        }
        for host in &hosts {
            if let Some(why) = recorded.unplaced.get(host) {
                out.unplaced.insert(host.clone(), why.clone());
            } else if !out.bucket_of.contains_key(host) {
                out.unplaced.insert(
                    host.clone(),
                    "not in status.failureDomains yet: the operator has not placed it".to_owned(),
                );
            }
        }
        out.unknown = HostBuckets {
            bucket_type: Some(bucket_type.clone()),
            bucket_of: out.bucket_of.clone(),
            unplaced: out.unplaced.clone(),
            unknown: None,
        }
        .halt();
        out.bucket_type = Some(bucket_type);
        out
    }

    /// How OSD keys group into update domains: by the recorded bucket of their host (a host
    /// without one is a domain of its own, as the planner counts it).
    pub(crate) fn domains(&self) -> UpdateDomains<'_> {
        match self.kind {
            UpdateDomain::Topology => UpdateDomains {
                kind: self.kind,
                bucket_of: Some(&self.bucket_of),
            },
            kind => UpdateDomains::plain(kind),
        }
    }

    /// The recorded membership as the planner takes it in, when every host is placed: each
    /// host under its bucket as if Ceph's CRUSH map and its label both said so.
    pub(crate) fn view(&self) -> TopologyView {
        let Some(bucket_type) = self.bucket_type.clone().filter(|_| self.unknown.is_none()) else {
            return TopologyView::default();
        };
        let ancestors = (self.bucket_of.iter())
            .map(|(host, bucket)| {
                let above = BTreeMap::from([(bucket_type.clone(), bucket.clone())]);
                (host.clone(), above)
            })
            .collect();
        TopologyView {
            crush: Some(Ok(CrushPlacement {
                auto_type: Ok(bucket_type),
                ancestors,
            })),
            labels: (self.bucket_of.iter())
                .map(|(host, bucket)| (host.clone(), Some(bucket.clone())))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
