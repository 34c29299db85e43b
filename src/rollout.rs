//! The rolling update: which update domains to replace now, why none can be, and which
//! deadlines and soaks to watch. Pure.

use crate::classify::{ObservedPod, PodClass};
use crate::crd::{CephOsdSpec, UpdateDomain};
use crate::osd::OsdKey;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// The outcome of step 5 for one reconcile.
pub struct RolloutStep<'a> {
    /// The out-of-date pods to delete now (the successors follow once they are gone).
    pub replace: Vec<&'a ObservedPod>,
    /// Why no step starts although pods are out of date.
    pub halted: Option<String>,
    /// Update domains with a missing or not-yet-Ready OSD pod.
    pub unavailable: BTreeSet<String>,
}

/// At most `maxUnavailable` update domains unavailable at once; nothing starts while paused.
/// `current` are the live pods of desired OSDs; `missing` the desired OSDs without one;
/// `blocked` the OSDs a spec problem keeps from being created or replaced.
pub fn rollout_step<'a>(
    spec: &CephOsdSpec,
    current: &[&'a ObservedPod],
    missing: &[OsdKey],
    blocked: &BTreeSet<OsdKey>,
) -> RolloutStep<'a> {
    let of_class = |class: PodClass| -> Vec<&'a ObservedPod> {
        current
            .iter()
            .copied()
            .filter(|p| p.class == class)
            .collect()
    };
    let (out_of_date, unready) = (of_class(PodClass::OutOfDate), of_class(PodClass::Unready));
    let unavailable: BTreeSet<String> = missing
        .iter()
        .chain(unready.iter().filter_map(|p| p.key.as_ref()))
        .map(|k| domain_id(k, spec.update_domain))
        .collect();
    let mut step = RolloutStep {
        replace: Vec::new(),
        halted: None,
        unavailable,
    };
    if out_of_date.is_empty() {
        return step;
    }
    let free = spec
        .max_unavailable()
        .saturating_sub(step.unavailable.len());
    if spec.is_paused() {
        step.halted = Some("the rollout is paused (spec.paused)".to_owned());
    } else if free == 0 {
        step.halted = Some(halt_reason(&unready, missing, blocked));
    } else {
        step.replace =
            next_update_domains(&out_of_date, spec.update_domain, &step.unavailable, free);
    }
    step
}

/// A replacement past its progress deadline, and when to look again (a deadline or a soak).
#[derive(Default)]
pub struct Deadlines {
    pub stalled: Option<String>,
    pub requeue_after: Option<SignedDuration>,
}

/// Checks `pods`: the unready replacements, and the old pods whose successors wait for them
/// to be gone.
pub fn deadlines<'a>(
    spec: &CephOsdSpec,
    pods: impl IntoIterator<Item = &'a ObservedPod>,
    now: Timestamp,
) -> Deadlines {
    let deadline = spec.progress_deadline();
    let mut out = Deadlines::default();
    let wake_at = |at: Timestamp, requeue: &mut Option<SignedDuration>| {
        let wait = at.duration_since(now).max(SignedDuration::from_secs(1));
        *requeue = Some(requeue.map_or(wait, |r| r.min(wait)));
    };
    for pod in pods {
        // A replacement not Ready in time; or an old pod that never finishes terminating,
        // which blocks its successor just as surely.
        let (since, what) = match pod.class {
            PodClass::Unready => (pod.created, "has not become Ready"),
            PodClass::Terminating => (
                pod.deleted,
                "has not finished terminating (its successor starts once it is gone)",
            ),
            _ => continue,
        };
        if let Some(soaking) = pod.soaking_since {
            // Ready and soaking for minReadySeconds: progressing, not stalled.
            wake_at(soaking + spec.min_ready(), &mut out.requeue_after);
            continue;
        }
        let Some(since) = since else { continue };
        let waited = now.duration_since(since);
        if waited >= deadline {
            out.stalled.get_or_insert_with(|| {
                // A fixed start, not a growing count: the message stays true without a write.
                format!(
                    "pod {} {what} within the progress deadline of {}s (waiting since {})",
                    pod.describe(),
                    deadline.as_secs(),
                    since
                        .round(k8s_openapi::jiff::Unit::Second)
                        .unwrap_or(since)
                )
            });
        } else {
            wake_at(since + deadline, &mut out.requeue_after);
        }
    }
    out
}

/// The id of the update domain an OSD belongs to: its key, or its host.
pub fn domain_id(key: &OsdKey, domain: UpdateDomain) -> String {
    match domain {
        UpdateDomain::Osd => key.to_string(),
        UpdateDomain::Host => key.host.clone(),
    }
}

/// Why the rollout waits: the first unready pod, else the first missing OSD.
fn halt_reason(unready: &[&ObservedPod], missing: &[OsdKey], blocked: &BTreeSet<OsdKey>) -> String {
    if let Some(pod) = unready.first() {
        match &pod.unschedulable {
            Some(why) => format!(
                "waiting for pod {} to become Ready; it cannot be scheduled: {why}",
                pod.describe()
            ),
            None => format!("waiting for pod {} to become Ready", pod.describe()),
        }
    } else if let Some(key) = missing.first() {
        if blocked.contains(key) {
            format!(
                "OSD {key} has no running pod and the spec is ambiguous about it \
                 (see the InvalidSpec condition)"
            )
        } else {
            format!("waiting for OSD {key} to have a running pod")
        }
    } else {
        "waiting for unavailable OSDs".to_owned()
    }
}

/// The out-of-date pods of the first `count` update domains (in case-insensitive key order)
/// that are not unavailable already.
fn next_update_domains<'a>(
    out_of_date: &[&'a ObservedPod],
    domain: UpdateDomain,
    unavailable: &BTreeSet<String>,
    count: usize,
) -> Vec<&'a ObservedPod> {
    let mut by_key: BTreeMap<&OsdKey, &ObservedPod> = BTreeMap::new();
    for pod in out_of_date {
        if let Some(key) = &pod.key {
            by_key.insert(key, pod);
        }
    }
    // Hosts sort the same case-insensitive way keys do.
    let mut domains: BTreeMap<(String, String), Vec<&ObservedPod>> = BTreeMap::new();
    for (key, pod) in by_key {
        let id = domain_id(key, domain);
        if unavailable.contains(&id) {
            continue;
        }
        domains
            .entry((id.to_lowercase(), id))
            .or_default()
            .push(pod);
    }
    domains.into_values().take(count).flatten().collect()
}
