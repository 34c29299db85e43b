//! The rolling update: which update domains to replace now, why none can be, and which
//! deadlines and soaks to watch. Pure.

use crate::classify::{ObservedPod, PodClass};
use crate::crd::{CephOsdSpec, UpdateDomain};
use crate::osd::OsdKey;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// The outcome of step 5 for one reconcile.
pub(crate) struct RolloutStep<'a> {
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
pub(crate) fn rollout_step<'a>(
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

/// The id of the update domain an OSD belongs to: its key, or its host.
pub(crate) fn domain_id(key: &OsdKey, domain: UpdateDomain) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Workload;
    use serde_json::json;

    fn spec(domain: UpdateDomain) -> CephOsdSpec {
        CephOsdSpec::new(Vec::new(), domain, json!({}))
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("time")
    }

    fn pod(host: &str, data: &str, class: PodClass) -> ObservedPod {
        let key = OsdKey::new(host, data);
        ObservedPod {
            name: format!("{}x", key.name_prefix()),
            uid: None,
            device: Some(key.device_id()),
            osd: Some(0),
            key: Some(key),
            ready: matches!(
                class,
                PodClass::UpToDate | PodClass::OutOfDate | PodClass::Ready
            ),
            class,
            state: None,
            created: Some(at(0)),
            soaking_since: None,
            deleted: None,
            controlled: true,
            workload: Workload::Pod,
            unschedulable: None,
        }
    }

    fn replaced(step: &RolloutStep<'_>) -> Vec<String> {
        step.replace
            .iter()
            .filter_map(|p| p.key.as_ref().map(ToString::to_string))
            .collect()
    }

    #[test]
    fn replaces_the_first_out_of_date_domains_in_case_insensitive_order() {
        let pods = [
            pod("b", "/dev/sdb", PodClass::OutOfDate),
            pod("A", "/dev/sdc", PodClass::OutOfDate),
            pod("A", "/dev/sdb", PodClass::OutOfDate),
            pod("c", "/dev/sdb", PodClass::UpToDate),
        ];
        let current: Vec<&ObservedPod> = pods.iter().collect();
        let none = BTreeSet::new();
        let by_osd = rollout_step(&spec(UpdateDomain::Osd), &current, &[], &none);
        assert_eq!(replaced(&by_osd), ["A:/dev/sdb"]);
        let by_host = rollout_step(&spec(UpdateDomain::Host), &current, &[], &none);
        assert_eq!(replaced(&by_host), ["A:/dev/sdb", "A:/dev/sdc"]);
        let mut two = spec(UpdateDomain::Host);
        two.max_unavailable = Some(2);
        let two = rollout_step(&two, &current, &[], &none);
        assert_eq!(replaced(&two), ["A:/dev/sdb", "A:/dev/sdc", "b:/dev/sdb"]);
        assert!(by_host.halted.is_none() && by_host.unavailable.is_empty());
    }

    #[test]
    fn an_unavailable_domain_uses_up_the_budget_and_says_why() {
        let mut waiting = pod("a", "/dev/sdb", PodClass::Unready);
        waiting.unschedulable = Some("0/3 nodes are available".into());
        let pods = [waiting, pod("b", "/dev/sdb", PodClass::OutOfDate)];
        let current: Vec<&ObservedPod> = pods.iter().collect();
        let none = BTreeSet::new();
        let step = rollout_step(&spec(UpdateDomain::Osd), &current, &[], &none);
        assert!(step.replace.is_empty());
        assert_eq!(step.unavailable, BTreeSet::from(["a:/dev/sdb".to_owned()]));
        let halted = step.halted.expect("halted");
        assert!(
            halted.contains("to become Ready") && halted.contains("0/3 nodes"),
            "{halted}"
        );
        // With room for two domains, the other one goes.
        let mut two = spec(UpdateDomain::Osd);
        two.max_unavailable = Some(2);
        assert_eq!(
            replaced(&rollout_step(&two, &current, &[], &none)),
            ["b:/dev/sdb"]
        );
    }

    #[test]
    fn a_missing_osd_halts_and_a_blocked_one_points_at_the_spec() {
        let pods = [pod("b", "/dev/sdb", PodClass::OutOfDate)];
        let current: Vec<&ObservedPod> = pods.iter().collect();
        let missing = [OsdKey::new("a", "/dev/sdb")];
        let step = rollout_step(
            &spec(UpdateDomain::Osd),
            &current,
            &missing,
            &BTreeSet::new(),
        );
        assert!(step.replace.is_empty());
        assert_eq!(
            step.halted.as_deref(),
            Some("waiting for OSD a:/dev/sdb to have a running pod")
        );
        let blocked = BTreeSet::from([missing[0].clone()]);
        let step = rollout_step(&spec(UpdateDomain::Osd), &current, &missing, &blocked);
        assert!(step.halted.is_some_and(|h| h.contains("InvalidSpec")));
    }

    #[test]
    fn paused_replaces_nothing_and_nothing_out_of_date_is_no_halt() {
        let pods = [pod("a", "/dev/sdb", PodClass::OutOfDate)];
        let current: Vec<&ObservedPod> = pods.iter().collect();
        let mut paused = spec(UpdateDomain::Osd);
        paused.paused = Some(true);
        let step = rollout_step(&paused, &current, &[], &BTreeSet::new());
        assert!(step.replace.is_empty());
        assert_eq!(
            step.halted.as_deref(),
            Some("the rollout is paused (spec.paused)")
        );
        let settled = [pod("a", "/dev/sdb", PodClass::UpToDate)];
        let current: Vec<&ObservedPod> = settled.iter().collect();
        let step = rollout_step(&paused, &current, &[], &BTreeSet::new());
        assert!(step.replace.is_empty() && step.halted.is_none());
    }

    #[test]
    fn deadlines_stall_late_replacements_and_wake_for_the_next_one() {
        let mut s = spec(UpdateDomain::Osd);
        s.progress_deadline_seconds = Some(100);
        let late = pod("a", "/dev/sdb", PodClass::Unready);
        let mut young = pod("b", "/dev/sdb", PodClass::Unready);
        young.created = Some(at(50));
        // At 60: nothing late yet; look again when the first deadline passes (at 100).
        let early = deadlines(&s, [&late, &young], at(60));
        assert_eq!(early.stalled, None);
        assert_eq!(early.requeue_after, Some(SignedDuration::from_secs(40)));
        // At 120: the first is late (the message names a fixed start); wake for the second.
        let later = deadlines(&s, [&late, &young], at(120));
        let stalled = later.stalled.expect("stalled");
        assert!(
            stalled.contains("has not become Ready")
                && stalled.contains("waiting since 1970-01-01T00:00:00Z"),
            "{stalled}"
        );
        assert_eq!(later.requeue_after, Some(SignedDuration::from_secs(30)));
    }

    #[test]
    fn a_soaking_pod_wakes_at_the_end_of_its_soak_and_never_stalls() {
        let mut s = spec(UpdateDomain::Osd);
        s.min_ready_seconds = Some(30);
        s.progress_deadline_seconds = Some(10);
        let mut soaking = pod("a", "/dev/sdb", PodClass::Unready);
        soaking.soaking_since = Some(at(100));
        let out = deadlines(&s, [&soaking], at(110));
        assert_eq!(out.stalled, None);
        assert_eq!(out.requeue_after, Some(SignedDuration::from_secs(20)));
        // A terminating old pod stalls after the deadline from its deletionTimestamp.
        let mut stuck = pod("b", "/dev/sdb", PodClass::Terminating);
        stuck.deleted = Some(at(0));
        let out = deadlines(&s, [&stuck], at(110));
        assert!(out
            .stalled
            .is_some_and(|m| m.contains("finished terminating")));
    }
}
