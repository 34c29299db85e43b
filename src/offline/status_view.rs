//! A CephOSD's rollout as `kubectl ceph-osd status` shows it: a header of counts, progress
//! and ETA, then its hosts in rollout order, each updated, replacing, next, held or waiting,
//! with its pods (by failure domain: each with its recorded bucket, those in none last).
//! Built from the CephOSD and its pods only; serialisable as it is shown.

use crate::crd::osd::OsdKey;
use crate::crd::{CephOsd, CephOsdStatus, UpdateDomain};
use crate::labels;
use crate::offline::eta::{elapsed, StepEstimate};
use crate::offline::failure_domains::RecordedDomains;
use crate::offline::rollout_preview::RolloutPreview;
use crate::plan::rules::expanded_spec::ExpandedSpec;
use crate::pod::pod_status::ready_since;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What `status` shows of one CephOSD.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatusView {
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// The CephOSD's status as the operator wrote it.
    pub(crate) status: CephOsdStatus,
    pub(crate) update_domain: UpdateDomain,
    /// With `updateDomain: Topology`: the bucket type of the recorded failure domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bucket_type: Option<String>,
    /// With `updateDomain: Topology`: why the hosts are not all in a recorded failure domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failure_domains_unknown: Option<String>,
    pub(crate) max_unavailable: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) partition: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) canary: Option<IntOrString>,
    pub(crate) paused: bool,
    /// The template hash pods are rolled to, and the older ones pods still run.
    pub(crate) template_hash: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) old_template_hashes: Vec<String>,
    /// Update domains that run the current template, of all.
    pub(crate) domains_updated: usize,
    pub(crate) domains_total: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) elapsed_seconds: Option<i64>,
    /// Seconds until the rollout reaches its cut (median, then p90), while it is under way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) eta_seconds: Option<(i64, i64)>,
    pub(crate) step: StepEstimate,
    pub(crate) hosts: Vec<HostView>,
    /// When it was read (how long ago a replacement entered its phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) now: Option<Timestamp>,
}

/// One host in rollout order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HostView {
    pub(crate) host: String,
    /// With `updateDomain: Topology`: its failure domain, as recorded (None: in none known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bucket: Option<String>,
    pub(crate) state: HostState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
    pub(crate) pods: Vec<PodView>,
}

/// Where a host is in the rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum HostState {
    /// Every OSD runs the current template and is Ready.
    Updated,
    /// Being replaced now.
    Replacing,
    /// The next step takes it.
    Next,
    /// `partition` or a canary keeps it as it is.
    Held,
    /// Out of date (or missing a pod), waiting for its turn.
    Waiting,
}

impl HostState {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Self::Updated => "updated",
            Self::Replacing => "replacing",
            Self::Next => "next",
            Self::Held => "held",
            Self::Waiting => "waiting",
        }
    }
}

/// One OSD of a host: its pod, or none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodView {
    /// The OSD's data device.
    pub(crate) data: String,
    /// Its pod, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pod_state: Option<String>,
    pub(crate) ready: bool,
    pub(crate) terminating: bool,
    /// Runs the current template.
    pub(crate) current: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) age_seconds: Option<i64>,
    /// The Ceph OSD ids the gate learnt for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) osd_ids: Vec<u32>,
    /// Those of its OSD ids that are `out` in Ceph (`status.osdsOut`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) out_ids: Vec<u32>,
}

/// The view of `cr` with `pods` (those with its owner label) and the `preview` of its rollout.
pub(crate) fn status_view(
    cr: &CephOsd,
    pods: &[Pod],
    preview: &RolloutPreview,
    now: Timestamp,
) -> StatusView {
    let expanded = ExpandedSpec::of(&cr.spec);
    let hash = expanded.template_hash.to_string();
    let status = cr.status.clone().unwrap_or_default();
    let domain_kind = cr.spec.update_domain;
    let recorded = RecordedDomains::of(cr);
    let rollout = recorded.domains();
    // Hosts in the order of their first update domain in rollout order; with failure
    // domains, those in none known last.
    let mut domains: Vec<(bool, String, String)> = (expanded.desired.osds.keys())
        .map(|k| {
            let unplaced = recorded.unplaced.contains_key(&k.host);
            (unplaced, rollout.id(k), k.host.clone())
        })
        .collect();
    domains.sort_by_key(|(u, d, _)| (*u, d.to_lowercase(), d.clone()));
    let mut hosts: Vec<String> = Vec::new();
    for (_, _, host) in &domains {
        if !hosts.contains(host) {
            hosts.push(host.clone());
        }
    }
    let mut old_hashes = BTreeSet::new();
    let mut by_key: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for pod in pods {
        let annotations = pod.annotations();
        if let (Some(host), Some(data)) =
            (annotations.get(labels::HOST), annotations.get(labels::DATA))
        {
            by_key
                .entry(OsdKey::new(host, data).to_string())
                .or_default()
                .push(pod);
        }
        if let Some(h) = annotations
            .get(labels::TEMPLATE_HASH)
            .filter(|h| **h != hash)
        {
            old_hashes.insert(h.clone());
        }
    }
    let first_batch: BTreeSet<&String> = preview.batches.first().into_iter().flatten().collect();
    let under_way: BTreeSet<&String> = status.current_update.iter().collect();
    let mut host_views = Vec::new();
    // Whether every OSD of each update domain runs the current template and is Ready.
    let mut domain_updated: BTreeMap<String, bool> = BTreeMap::new();
    for host in hosts {
        let mut pod_views = Vec::new();
        let mut host_domains = BTreeSet::new();
        for key in (expanded.desired.osds.keys()).filter(|k| k.host == host) {
            let domain = rollout.id(key);
            let live = (by_key.get(&key.to_string()).into_iter().flatten())
                .max_by_key(|p| p.metadata.deletion_timestamp.is_none());
            let view = pod_view(key, live.copied(), &hash, &status, now);
            let fine = view.current && view.ready && !view.terminating;
            *domain_updated.entry(domain.clone()).or_insert(true) &= fine;
            host_domains.insert(domain);
            pod_views.push(view);
        }
        let stale = host_domains
            .iter()
            .any(|d| domain_updated.get(d) == Some(&false));
        let (state, why) = host_state(&host_domains, stale, &under_way, &first_batch, preview);
        // A host's own reason; the membership's, shared by all, is said once in the header.
        let why = match recorded.unplaced.get(&host) {
            Some(own) => Some(own.clone()),
            None => why.filter(|_| recorded.unknown.is_none()),
        };
        host_views.push(HostView {
            bucket: recorded.bucket_of.get(&host).cloned(),
            host,
            state,
            why,
            pods: pod_views,
        });
    }
    let step = StepEstimate::of(cr, &hash);
    let record = status.rollout.as_ref().filter(|r| r.template_hash == hash);
    let rolling = !preview.batches.is_empty() || !preview.under_way.is_empty();
    let steps = preview.batches.len() + usize::from(!preview.under_way.is_empty());
    StatusView {
        namespace: cr.namespace().unwrap_or_default(),
        name: cr.name_any(),
        update_domain: domain_kind,
        bucket_type: recorded.bucket_type.clone(),
        failure_domains_unknown: recorded.unknown.clone(),
        max_unavailable: cr.spec.max_unavailable(),
        partition: cr.spec.partition.clone(),
        canary: cr.spec.canary.clone(),
        paused: cr.spec.is_paused(),
        template_hash: hash,
        old_template_hashes: old_hashes.into_iter().collect(),
        domains_updated: domain_updated.values().filter(|u| **u).count(),
        domains_total: domain_updated.len(),
        elapsed_seconds: record.and_then(|r| elapsed(r, now)),
        eta_seconds: (rolling && !cr.spec.is_paused()).then(|| step.remaining(steps)),
        step,
        hosts: host_views,
        status,
        now: Some(now),
    }
}

/// The state of a host with update domains `domains`, `stale` when one of its OSDs is not
/// updated and Ready, and why when it waits.
fn host_state(
    domains: &BTreeSet<String>,
    stale: bool,
    under_way: &BTreeSet<&String>,
    first_batch: &BTreeSet<&String>,
    preview: &RolloutPreview,
) -> (HostState, Option<String>) {
    if domains.iter().any(|d| under_way.contains(d)) {
        (HostState::Replacing, None)
    } else if let Some(why) = domains.iter().find_map(|d| preview.held.get(d)) {
        (HostState::Held, Some(why.clone()))
    } else if domains.iter().any(|d| first_batch.contains(d)) {
        (HostState::Next, None)
    } else if stale {
        (
            HostState::Waiting,
            preview.stops.clone().filter(|_| preview.batches.is_empty()),
        )
    } else {
        (HostState::Updated, None)
    }
}

fn pod_view(
    key: &OsdKey,
    pod: Option<&Pod>,
    hash: &str,
    status: &CephOsdStatus,
    now: Timestamp,
) -> PodView {
    let out_ids: Vec<u32> = (status.osds_out.iter())
        .filter(|o| o.key == key.to_string())
        .map(|o| o.id)
        .collect();
    let Some(pod) = pod else {
        return PodView {
            data: key.data.clone(),
            name: None,
            pod_state: None,
            ready: false,
            terminating: false,
            current: false,
            age_seconds: None,
            osd_ids: Vec::new(),
            out_ids,
        };
    };
    let annotations = pod.annotations();
    PodView {
        name: Some(pod.name_any()),
        pod_state: annotations.get(labels::POD_STATE).cloned(),
        ready: ready_since(pod).is_some(),
        terminating: pod.metadata.deletion_timestamp.is_some(),
        current: annotations.get(labels::TEMPLATE_HASH).map(String::as_str) == Some(hash),
        age_seconds: (pod.metadata.creation_timestamp.as_ref())
            .map(|t| now.duration_since(t.0).as_secs().max(0)),
        osd_ids: (status.osd_ids.get(&key.to_string()).cloned()).unwrap_or_default(),
        out_ids,
        data: key.data.clone(),
    }
}
