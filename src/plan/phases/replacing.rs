//! The first phase when disks are being replaced: the replacements judged from the CephOSD,
//! its pods and Ceph (`rules::replacement`), before anything else sees the spec. Their keys
//! that must have no pod leave the spec for this plan.

use crate::crd::osd::OsdKey;
use crate::crd::replacement::replace_requests;
use crate::crd::CephOsd;
use crate::labels;
use crate::plan::gate::{CephInput, GateOff};
use crate::plan::phases::seen::Observed;
use crate::plan::rules::deletion::deletion_of;
use crate::plan::rules::expanded_spec::ExpandedSpec;
use crate::plan::rules::replacement::{replacements, KeyPods, ReplaceInput, ReplaceOutcome};
use crate::pod::identity::identify;
use crate::pod::pod_status::failure;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};

/// The replacements of `cr` after this plan; the default (nothing) when none is asked for or
/// recorded, or the CephOSD is being deleted (its records then stay as they are).
pub(in crate::plan) fn replacing(
    cr: &CephOsd,
    expanded: &ExpandedSpec,
    observed: &Observed<'_>,
    now: Timestamp,
) -> ReplaceOutcome {
    let previous = cr.status.as_ref().map_or(&[][..], |s| &s.replacements[..]);
    let asked = cr.annotations().get(labels::REPLACE);
    if previous.is_empty() && asked.is_none() {
        return ReplaceOutcome::default();
    }
    if deletion_of(cr, observed.namespace_terminating).is_some() {
        return ReplaceOutcome {
            records: previous.to_vec(),
            ..ReplaceOutcome::default()
        };
    }
    let (requests, problems) = replace_requests(asked.map_or("", String::as_str));
    let spec_keys: BTreeSet<OsdKey> = expanded.desired.osds.keys().cloned().collect();
    let mut pods: BTreeMap<OsdKey, KeyPods> = BTreeMap::new();
    for pod in &observed.pods {
        let Some(key) = identify(pod, &pod.name_any(), &expanded.desired).key else {
            continue;
        };
        let seen = pods.entry(key).or_default();
        seen.any = true;
        if seen.failed.is_none() {
            seen.failed = failure(pod);
        }
    }
    let gate_off = match &observed.ceph.input {
        CephInput::Off {
            why: GateOff::NotConfigured,
        } => Some("the operator has no Ceph configured"),
        CephInput::Off {
            why: GateOff::Skipped,
        } => Some("spec.cephGate is Skipped"),
        _ => None,
    };
    let status = cr.status.as_ref();
    // The ids the status keeps, and those learnt for this plan.
    let mut known_ids = status.map(|s| s.osd_ids.clone()).unwrap_or_default();
    for (key, ids) in observed.ceph.learned_ids.iter().flatten() {
        known_ids.insert(key.to_string(), ids.iter().map(|id| id.0).collect());
    }
    let mut outcome = replacements(&ReplaceInput {
        previous,
        requests: &requests,
        spec_keys: &spec_keys,
        blocked: &expanded.desired.blocked,
        known_ids: &known_ids,
        pods: &pods,
        gate_off,
        osds: observed.ceph.osds.as_ref(),
        pgs: observed.ceph.pgs.as_ref(),
        destroy_look: observed.ceph.destroy_look.as_ref(),
        backfill_look: observed.ceph.backfill_look.as_ref(),
        step: status.and_then(|s| s.ceph_step.as_ref()),
        now,
    });
    outcome.unreadable = problems;
    outcome
}
