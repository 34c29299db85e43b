//! What a plan of a CephOSD of `updateDomain: Topology` learns of its hosts' failure domains:
//! one look at Ceph's CRUSH map (when the gate is on) and the `topologyKey` label of every
//! node (from the node cache), read with the other inputs of a reconcile; made into the
//! planner's `TopologyView` for the hosts of the plan.

use crate::crd::storage_rules::normalise_host;
use crate::crd::{CephOsd, UpdateDomain};
use crate::plan::rules::expanded_spec::ExpandedSpec;
use crate::plan::topology::TopologyView;
use crate::pod::pod_record::bound_host;
use crate::runtime::ceph::crush_look::{look_at_crush, CrushLook};
use crate::runtime::controller::context::Context;
use crate::runtime::observe::node_labels::label_of_nodes;
use k8s_openapi::api::core::v1::Pod;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The failure-domain inputs of one reconcile (nothing unless `updateDomain: Topology`).
#[derive(Debug, Default)]
pub(super) struct TopologyInputs {
    /// Ceph's CRUSH map (None: not looked at, the gate is off).
    crush: Option<Result<CrushLook, String>>,
    /// The `topologyKey` label of every node (None: no key).
    labels: Option<BTreeMap<String, Option<String>>>,
}

impl TopologyInputs {
    /// Reads what `cr` needs: the CRUSH map when the gate is on for it, the labels when it
    /// names a key.
    pub(super) async fn read(ctx: &Context, cr: &CephOsd) -> Self {
        let spec = &cr.spec;
        let Some(topology) = spec.topology.as_ref() else {
            return Self::default();
        };
        if spec.update_domain != UpdateDomain::Topology {
            return Self::default();
        }
        let ceph = ctx.ceph.as_deref().filter(|_| !spec.skips_ceph_gate());
        let crush = match ceph {
            Some(ceph) => Some(look_at_crush(ceph, topology.is_auto()).await),
            None => None,
        };
        if let Some(Err(why)) = &crush {
            tracing::warn!(cephosd = %cr.object_key(), %why, "Ceph's CRUSH map could not be read");
        }
        let labels = (topology.topology_key.as_deref())
            .map(|key| label_of_nodes(&ctx.budget_caches.nodes, key));
        Self { crush, labels }
    }

    /// Identifies these inputs for `cr`'s hosts: part of the fingerprint that lets an
    /// unchanged reconcile be skipped (a host moved in CRUSH, or relabelled, is a change).
    pub(super) fn fingerprint(&self, cr: &CephOsd) -> u64 {
        let mut hasher = DefaultHasher::new();
        self.crush.hash(&mut hasher);
        if let Some(labels) = &self.labels {
            for host in (cr.spec.storage.iter()).flat_map(|e| &e.hosts) {
                labels.get(&normalise_host(host)).hash(&mut hasher);
            }
        }
        hasher.finish()
    }

    /// The planner's view for the hosts a plan of `expanded` and `pods` deals with, each as
    /// the CephOSD spells it (its Node's name is the same in lower case).
    pub(super) fn view(&self, expanded: &ExpandedSpec, pods: &[Arc<Pod>]) -> TopologyView {
        if self.crush.is_none() && self.labels.is_none() {
            return TopologyView::default();
        }
        let hosts: BTreeSet<String> = (expanded.desired.osds.keys())
            .map(|k| k.host.clone())
            .chain(pods.iter().filter_map(|p| bound_host(p).map(str::to_owned)))
            .collect();
        let crush = (self.crush.as_ref()).map(|crush| {
            (crush.as_ref())
                .map(|look| look.placement(hosts.iter().map(String::as_str)))
                .map_err(Clone::clone)
        });
        let labels = (self.labels.as_ref())
            .map(|labels| {
                (hosts.iter())
                    .filter_map(|h| Some((h.clone(), labels.get(&normalise_host(h))?.clone())))
                    .collect()
            })
            .unwrap_or_default();
        TopologyView { crush, labels }
    }
}

#[cfg(test)]
mod tests;
