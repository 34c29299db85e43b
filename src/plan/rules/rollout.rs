//! The rolling update: which update domains to replace now, why none can be, and which
//! deadlines and soaks to watch. Pure.

use crate::crd::osd::OsdKey;
use crate::crd::update_domain::UpdateDomains;
use crate::crd::CephOsdSpec;
use crate::plan::observed::classify::{ObservedPod, PodClass};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// A pod (or era ReplicaSet) the rollout takes down in its update domain's turn: an
/// out-of-date one (its successor follows once it is gone), or one that goes without one
/// (its OSD left the spec, or it may run a daemon the planner cannot place).
pub(crate) struct Candidate<'a> {
    pub pod: &'a ObservedPod,
    pub domain: String,
    /// Out of date (a successor follows), not a removal: what `partition` and a canary hold.
    pub replaces: bool,
}

impl<'a> Candidate<'a> {
    /// An out-of-date pod of `domain`.
    pub(crate) fn replacing(pod: &'a ObservedPod, domain: String) -> Self {
        Self {
            pod,
            domain,
            replaces: true,
        }
    }

    /// A pod of `domain` that goes without a successor of its own.
    pub(crate) fn removing(pod: &'a ObservedPod, domain: String) -> Self {
        Self {
            pod,
            domain,
            replaces: false,
        }
    }
}

/// Why an out-of-date update domain is not replaced under the current template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// One of the last `spec.partition` out-of-date domains in rollout order.
    Partition,
    /// The canary replaced its domains; the template waits for a promotion.
    Canary,
}

/// How far the rollout may go: the last `partition` out-of-date domains stay; with a canary
/// hold, at most `canary_left` more domains start. Domains `continuing` (under way) are never
/// held.
#[derive(Clone, Copy)]
pub(crate) struct Limits<'a> {
    pub partition: usize,
    pub canary_left: Option<usize>,
    pub continuing: &'a BTreeSet<&'a str>,
    /// Why no domain that is up may start now (the disruption budget, failure domains that
    /// cannot be told), if so.
    pub start_blocked: Option<&'a str>,
}

impl Limits<'static> {
    /// Nothing held.
    #[cfg(test)]
    pub(crate) fn none() -> Self {
        static NONE: BTreeSet<&str> = BTreeSet::new();
        Self {
            partition: 0,
            canary_left: None,
            continuing: &NONE,
            start_blocked: None,
        }
    }
}

/// A desired OSD without a live pod, and why none is made when the planner knows.
pub(crate) struct Missing {
    pub key: OsdKey,
    pub why: Option<String>,
}

/// The outcome of the rollout step for one reconcile.
pub(crate) struct RolloutStep {
    /// The candidates to take down now (indices, in rollout order).
    pub chosen: Vec<usize>,
    /// The update domains they belong to, in order.
    pub domains: Vec<String>,
    /// Why no step starts although candidates wait.
    pub halted: Option<String>,
    /// Update domains with a missing, not-yet-Ready or still-terminating OSD pod.
    pub unavailable: BTreeSet<String>,
    /// The out-of-date domains `partition` or a canary hold, and which.
    pub held: BTreeMap<String, Hold>,
    /// The hold that halts the rollout: nothing else waits.
    pub halted_by: Option<Hold>,
    /// Whether `halted` is `limits.start_blocked`'s reason.
    pub waits_for_budget: bool,
}

/// At most `maxUnavailable` update domains unavailable at once; nothing starts while paused.
/// `unready` are the live pods waiting for Ready; `missing` the desired OSDs without a live
/// pod; `also_unavailable` domains down for other reasons (a removed OSD's pod terminating).
/// A candidate that is not Ready is down already: its domain counts as unavailable. Taking
/// down a pod that is down already, or one in a domain that is down already, costs nothing
/// (no more domains are down after it), so such candidates go at once: a stuck replacement of
/// an older template is replaced by the fixed one first, and the rest of a host goes with the
/// host. `limits` hold domains past the cut (no candidate of theirs goes, down already or
/// not) and say why no domain that is up may start now (`start_blocked`).
pub(crate) fn rollout_step(
    spec: &CephOsdSpec,
    domains: UpdateDomains<'_>,
    candidates: &[Candidate<'_>],
    unready: &[&ObservedPod],
    missing: &[Missing],
    also_unavailable: impl IntoIterator<Item = String>,
    limits: &Limits<'_>,
) -> RolloutStep {
    let down = candidates
        .iter()
        .filter(|c| !c.pod.ready)
        .map(|c| c.domain.clone());
    let unavailable: BTreeSet<String> = missing
        .iter()
        .map(|m| &m.key)
        .chain(unready.iter().filter_map(|p| p.key.as_ref()))
        .map(|k| domains.id(k))
        .chain(also_unavailable)
        .chain(down)
        .collect();
    let mut step = RolloutStep {
        chosen: Vec::new(),
        domains: Vec::new(),
        halted: None,
        unavailable,
        held: held_domains(candidates, limits),
        halted_by: None,
        waits_for_budget: false,
    };
    if candidates.is_empty() {
        return step;
    }
    if spec.is_paused() {
        step.halted = Some("the rollout is paused (spec.paused)".to_owned());
        return step;
    }
    let open = |i: &usize| !step.held.contains_key(&candidates[*i].domain);
    let costless = (0..candidates.len())
        .filter(open)
        .filter(|&i| !candidates[i].pod.ready || step.unavailable.contains(&candidates[i].domain));
    (step.chosen, step.domains) = in_rollout_order(candidates, costless, usize::MAX);
    let free = spec
        .max_unavailable()
        .saturating_sub(step.unavailable.len());
    let mut available = (0..candidates.len())
        .filter(open)
        .filter(|&i| !step.unavailable.contains(&candidates[i].domain))
        .peekable();
    if available.peek().is_none() && step.chosen.is_empty() && step.unavailable.is_empty() {
        // Only held domains wait (or none at all): the rollout is at its cut.
        step.halted_by = (step.held.values())
            .copied()
            .max_by_key(|h| *h == Hold::Canary);
    } else if free == 0 {
        step.halted = Some(halt_reason(unready, missing));
    } else if let Some(why) = limits.start_blocked.filter(|_| available.peek().is_some()) {
        step.halted = Some(why.to_owned());
        step.waits_for_budget = true;
    } else {
        let (chosen, domains) = in_rollout_order(candidates, available, free);
        step.chosen.extend(chosen);
        step.domains.extend(domains);
    }
    step
}

/// A replacement past its progress deadline, and when to look again (a deadline or a soak).
#[derive(Default)]
pub(crate) struct Deadlines {
    pub stalled: Option<String>,
    pub requeue_after: Option<SignedDuration>,
}

/// Checks `pods`: the unready replacements, and the old pods whose successors wait for them
/// to be gone.
pub(crate) fn deadlines<'a>(
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

/// Why the rollout waits: the first unready pod, else the first missing OSD.
fn halt_reason(unready: &[&ObservedPod], missing: &[Missing]) -> String {
    if let Some(pod) = unready.first() {
        match &pod.unschedulable {
            Some(why) => format!(
                "waiting for pod {} to become Ready; it cannot be scheduled: {why}",
                pod.describe()
            ),
            None => format!("waiting for pod {} to become Ready", pod.describe()),
        }
    } else if let Some(Missing { key, why }) = missing.first() {
        match why {
            Some(why) => format!("OSD {key} has no running pod: {why}"),
            None => format!("waiting for OSD {key} to have a running pod"),
        }
    } else {
        "waiting for unavailable OSDs".to_owned()
    }
}

/// The out-of-date domains past the cut, in rollout order: the last `partition`, then (with
/// a canary hold) all but the first `canary_left` of the rest not under way.
fn held_domains(candidates: &[Candidate<'_>], limits: &Limits<'_>) -> BTreeMap<String, Hold> {
    let out_of_date: BTreeSet<(String, &str)> = (candidates.iter())
        .filter(|c| c.replaces)
        .map(|c| (c.domain.to_lowercase(), c.domain.as_str()))
        .collect();
    let cut = out_of_date.len().saturating_sub(limits.partition);
    let mut held = BTreeMap::new();
    let mut canary_left = limits.canary_left;
    for (index, (_, domain)) in out_of_date.into_iter().enumerate() {
        let hold = if index >= cut {
            Some(Hold::Partition)
        } else if limits.continuing.contains(domain) {
            None
        } else {
            match &mut canary_left {
                Some(0) => Some(Hold::Canary),
                Some(left) => {
                    *left -= 1;
                    None
                }
                None => None,
            }
        };
        if let Some(hold) = hold {
            held.insert(domain.to_owned(), hold);
        }
    }
    held
}

/// Of the candidates `among`, those of the first `count` update domains (in case-insensitive
/// order of their ids, then by key), and those domains.
fn in_rollout_order(
    candidates: &[Candidate<'_>],
    among: impl Iterator<Item = usize>,
    count: usize,
) -> (Vec<usize>, Vec<String>) {
    // By (case-folded id, id): the members' keys and indices.
    type Members<'k> = Vec<(Option<&'k OsdKey>, usize)>;
    let mut domains: BTreeMap<(String, &str), Members<'_>> = BTreeMap::new();
    for index in among {
        let candidate = &candidates[index];
        domains
            .entry((candidate.domain.to_lowercase(), candidate.domain.as_str()))
            .or_default()
            .push((candidate.pod.key.as_ref(), index));
    }
    let mut chosen = Vec::new();
    let mut started = Vec::new();
    for ((_, domain), mut members) in domains.into_iter().take(count) {
        members.sort();
        chosen.extend(members.into_iter().map(|(_, index)| index));
        started.push(domain.to_owned());
    }
    (chosen, started)
}

#[cfg(test)]
mod tests;
