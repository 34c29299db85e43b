//! The rolling update: which update domains to replace now, why none can be, and which
//! deadlines and soaks to watch. Pure.

use crate::crd::osd::OsdKey;
use crate::crd::update_domain::domain_id;
use crate::crd::CephOsdSpec;
use crate::plan::classify::{ObservedPod, PodClass};
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
    /// Whether `halted` is `start_blocked`'s reason (the disruption budget).
    pub waits_for_budget: bool,
}

/// At most `maxUnavailable` update domains unavailable at once; nothing starts while paused.
/// `unready` are the live pods waiting for Ready; `missing` the desired OSDs without a live
/// pod; `also_unavailable` domains down for other reasons (a removed OSD's pod terminating).
/// A candidate that is not Ready is down already: its domain counts as unavailable. Taking
/// down a pod that is down already, or one in a domain that is down already, costs nothing
/// (no more domains are down after it), so such candidates go at once: a stuck replacement of
/// an older template is replaced by the fixed one first, and the rest of a host goes with the
/// host. `start_blocked` says why no domain that is up may start now (the disruption budget).
/// `limits` hold domains past the cut: no candidate of theirs goes, down already or not.
pub(crate) fn rollout_step(
    spec: &CephOsdSpec,
    candidates: &[Candidate<'_>],
    unready: &[&ObservedPod],
    missing: &[Missing],
    also_unavailable: impl IntoIterator<Item = String>,
    start_blocked: Option<&str>,
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
        .map(|k| domain_id(k, spec.update_domain))
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
    } else if let Some(why) = start_blocked.filter(|_| available.peek().is_some()) {
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
mod tests {
    use super::*;
    use crate::crd::UpdateDomain;
    use crate::plan::classify::Workload;
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
            also_holds: Vec::new(),
            tampered: None,
            duplicate: false,
            domain_label: None,
        }
    }

    /// The keys `step` takes down.
    fn replaced(step: &RolloutStep, candidates: &[Candidate<'_>]) -> Vec<String> {
        step.chosen
            .iter()
            .filter_map(|i| candidates[*i].pod.key.as_ref().map(ToString::to_string))
            .collect()
    }

    /// The out-of-date pods among `pods`, as candidates of `spec`'s domains.
    fn candidates<'a>(spec: &CephOsdSpec, pods: &'a [ObservedPod]) -> Vec<Candidate<'a>> {
        pods.iter()
            .filter(|p| p.class == PodClass::OutOfDate)
            .filter_map(|pod| {
                Some(Candidate::replacing(
                    pod,
                    domain_id(pod.key.as_ref()?, spec.update_domain),
                ))
            })
            .collect()
    }

    fn unready(pods: &[ObservedPod]) -> Vec<&ObservedPod> {
        pods.iter()
            .filter(|p| p.class == PodClass::Unready)
            .collect()
    }

    /// The step for `pods` with nothing missing.
    fn step(spec: &CephOsdSpec, pods: &[ObservedPod]) -> Vec<String> {
        let candidates = candidates(spec, pods);
        let step = rollout_step(
            spec,
            &candidates,
            &unready(pods),
            &[],
            [],
            None,
            &Limits::none(),
        );
        replaced(&step, &candidates)
    }

    #[test]
    fn replaces_the_first_out_of_date_domains_in_case_insensitive_order() {
        let pods = [
            pod("b", "/dev/sdb", PodClass::OutOfDate),
            pod("A", "/dev/sdc", PodClass::OutOfDate),
            pod("A", "/dev/sdb", PodClass::OutOfDate),
            pod("c", "/dev/sdb", PodClass::UpToDate),
        ];
        assert_eq!(step(&spec(UpdateDomain::Osd), &pods), ["A:/dev/sdb"]);
        let by_host = spec(UpdateDomain::Host);
        assert_eq!(step(&by_host, &pods), ["A:/dev/sdb", "A:/dev/sdc"]);
        let all = candidates(&by_host, &pods);
        let started = rollout_step(&by_host, &all, &[], &[], [], None, &Limits::none());
        assert_eq!(started.domains, ["A"]);
        assert!(started.halted.is_none() && started.unavailable.is_empty());
        let mut two = spec(UpdateDomain::Host);
        two.max_unavailable = Some(2);
        assert_eq!(
            step(&two, &pods),
            ["A:/dev/sdb", "A:/dev/sdc", "b:/dev/sdb"]
        );
    }

    #[test]
    fn an_unavailable_domain_uses_up_the_budget_and_says_why() {
        let mut waiting = pod("a", "/dev/sdb", PodClass::Unready);
        waiting.unschedulable = Some("0/3 nodes are available".into());
        let pods = [waiting, pod("b", "/dev/sdb", PodClass::OutOfDate)];
        let one = spec(UpdateDomain::Osd);
        let candidates = candidates(&one, &pods);
        let step = rollout_step(
            &one,
            &candidates,
            &unready(&pods),
            &[],
            [],
            None,
            &Limits::none(),
        );
        assert!(step.chosen.is_empty());
        assert_eq!(step.unavailable, BTreeSet::from(["a:/dev/sdb".to_owned()]));
        let halted = step.halted.expect("halted");
        assert!(
            halted.contains("to become Ready") && halted.contains("0/3 nodes"),
            "{halted}"
        );
        // With room for two domains, the other one goes.
        let mut two = spec(UpdateDomain::Osd);
        two.max_unavailable = Some(2);
        assert_eq!(self::step(&two, &pods), ["b:/dev/sdb"]);
        // A domain down for another reason counts the same.
        let step = rollout_step(
            &two,
            &candidates,
            &[],
            &[],
            ["z:/dev/sdq".to_owned()],
            None,
            &Limits::none(),
        );
        assert_eq!(replaced(&step, &candidates), ["b:/dev/sdb"]);
        let step = rollout_step(
            &two,
            &candidates,
            &unready(&pods),
            &[],
            ["z:/dev/sdq".to_owned()],
            None,
            &Limits::none(),
        );
        assert!(step.chosen.is_empty() && step.halted.is_some());
    }

    #[test]
    fn a_missing_osd_halts_and_says_why_when_that_is_known() {
        let pods = [pod("b", "/dev/sdb", PodClass::OutOfDate)];
        let one = spec(UpdateDomain::Osd);
        let candidates = candidates(&one, &pods);
        let missing = [Missing {
            key: OsdKey::new("a", "/dev/sdb"),
            why: None,
        }];
        let step = rollout_step(&one, &candidates, &[], &missing, [], None, &Limits::none());
        assert!(step.chosen.is_empty());
        assert_eq!(
            step.halted.as_deref(),
            Some("waiting for OSD a:/dev/sdb to have a running pod")
        );
        let missing = [Missing {
            key: OsdKey::new("a", "/dev/sdb"),
            why: Some("the spec is ambiguous about it".into()),
        }];
        let step = rollout_step(&one, &candidates, &[], &missing, [], None, &Limits::none());
        assert_eq!(
            step.halted.as_deref(),
            Some("OSD a:/dev/sdb has no running pod: the spec is ambiguous about it")
        );
    }

    #[test]
    fn a_candidate_that_is_down_already_goes_at_once_and_holds_its_domain() {
        // a's out-of-date pod is not Ready (a stuck replacement of an older template): it is
        // replaced whatever the budget, and b waits, its domain counting a's.
        let mut stuck = pod("a", "/dev/sdb", PodClass::OutOfDate);
        stuck.ready = false;
        let pods = [stuck, pod("b", "/dev/sdb", PodClass::OutOfDate)];
        let one = spec(UpdateDomain::Osd);
        assert_eq!(step(&one, &pods), ["a:/dev/sdb"]);
        let candidates = candidates(&one, &pods);
        let started = rollout_step(&one, &candidates, &[], &[], [], None, &Limits::none());
        assert_eq!(started.domains, ["a:/dev/sdb"]);
        assert!(started.unavailable.contains("a:/dev/sdb"));
        // Even with another domain down: it costs nothing.
        let missing = [Missing {
            key: OsdKey::new("c", "/dev/sdb"),
            why: None,
        }];
        let step = rollout_step(&one, &candidates, &[], &missing, [], None, &Limits::none());
        assert_eq!(replaced(&step, &candidates), ["a:/dev/sdb"]);
        assert!(step.halted.is_some());
        let mut two = spec(UpdateDomain::Osd);
        two.max_unavailable = Some(2);
        assert_eq!(self::step(&two, &pods), ["a:/dev/sdb", "b:/dev/sdb"]);
        // Never while paused.
        let mut paused = spec(UpdateDomain::Osd);
        paused.paused = Some(true);
        assert!(self::step(&paused, &pods).is_empty());
    }

    #[test]
    fn the_rest_of_a_domain_that_is_down_goes_with_it() {
        // Host a: one OSD missing, one out of date and Ready. Host b: out of date.
        let pods = [
            pod("a", "/dev/sdc", PodClass::OutOfDate),
            pod("b", "/dev/sdb", PodClass::OutOfDate),
        ];
        let by_host = spec(UpdateDomain::Host);
        let candidates = candidates(&by_host, &pods);
        let missing = [Missing {
            key: OsdKey::new("a", "/dev/sdb"),
            why: None,
        }];
        let step = rollout_step(
            &by_host,
            &candidates,
            &[],
            &missing,
            [],
            None,
            &Limits::none(),
        );
        assert_eq!(replaced(&step, &candidates), ["a:/dev/sdc"]);
        assert_eq!(step.domains, ["a"]);
        assert!(step.halted.is_some(), "b waits");
    }

    #[test]
    fn paused_replaces_nothing_and_nothing_to_take_down_is_no_halt() {
        let pods = [pod("a", "/dev/sdb", PodClass::OutOfDate)];
        let mut paused = spec(UpdateDomain::Osd);
        paused.paused = Some(true);
        let candidates = candidates(&paused, &pods);
        let step = rollout_step(&paused, &candidates, &[], &[], [], None, &Limits::none());
        assert!(step.chosen.is_empty());
        assert_eq!(
            step.halted.as_deref(),
            Some("the rollout is paused (spec.paused)")
        );
        let step = rollout_step(&paused, &[], &[], &[], [], None, &Limits::none());
        assert!(step.chosen.is_empty() && step.halted.is_none());
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
