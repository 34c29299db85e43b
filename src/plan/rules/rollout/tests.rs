use super::*;
use crate::crd::update_domain::{domain_id, UpdateDomains};
use crate::crd::UpdateDomain;
use crate::testing::observed_pods::observed_pod;
use serde_json::json;

fn spec(domain: UpdateDomain) -> CephOsdSpec {
    CephOsdSpec::new(Vec::new(), domain, json!({}))
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("time")
}

fn pod(host: &str, data: &str, class: PodClass) -> ObservedPod {
    observed_pod(OsdKey::new(host, data), class, at(0))
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
        UpdateDomains::plain(spec.update_domain),
        &candidates,
        &unready(pods),
        &[],
        [],
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
    let started = rollout_step(
        &by_host,
        UpdateDomains::plain(by_host.update_domain),
        &all,
        &[],
        &[],
        [],
        &Limits::none(),
    );
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
        UpdateDomains::plain(one.update_domain),
        &candidates,
        &unready(&pods),
        &[],
        [],
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
        UpdateDomains::plain(two.update_domain),
        &candidates,
        &[],
        &[],
        ["z:/dev/sdq".to_owned()],
        &Limits::none(),
    );
    assert_eq!(replaced(&step, &candidates), ["b:/dev/sdb"]);
    let step = rollout_step(
        &two,
        UpdateDomains::plain(two.update_domain),
        &candidates,
        &unready(&pods),
        &[],
        ["z:/dev/sdq".to_owned()],
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
    let step = rollout_step(
        &one,
        UpdateDomains::plain(one.update_domain),
        &candidates,
        &[],
        &missing,
        [],
        &Limits::none(),
    );
    assert!(step.chosen.is_empty());
    assert_eq!(
        step.halted.as_deref(),
        Some("waiting for OSD a:/dev/sdb to have a running pod")
    );
    let missing = [Missing {
        key: OsdKey::new("a", "/dev/sdb"),
        why: Some("the spec is ambiguous about it".into()),
    }];
    let step = rollout_step(
        &one,
        UpdateDomains::plain(one.update_domain),
        &candidates,
        &[],
        &missing,
        [],
        &Limits::none(),
    );
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
    let started = rollout_step(
        &one,
        UpdateDomains::plain(one.update_domain),
        &candidates,
        &[],
        &[],
        [],
        &Limits::none(),
    );
    assert_eq!(started.domains, ["a:/dev/sdb"]);
    assert!(started.unavailable.contains("a:/dev/sdb"));
    // Even with another domain down: it costs nothing.
    let missing = [Missing {
        key: OsdKey::new("c", "/dev/sdb"),
        why: None,
    }];
    let step = rollout_step(
        &one,
        UpdateDomains::plain(one.update_domain),
        &candidates,
        &[],
        &missing,
        [],
        &Limits::none(),
    );
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
        UpdateDomains::plain(by_host.update_domain),
        &candidates,
        &[],
        &missing,
        [],
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
    let step = rollout_step(
        &paused,
        UpdateDomains::plain(paused.update_domain),
        &candidates,
        &[],
        &[],
        [],
        &Limits::none(),
    );
    assert!(step.chosen.is_empty());
    assert_eq!(
        step.halted.as_deref(),
        Some("the rollout is paused (spec.paused)")
    );
    let step = rollout_step(
        &paused,
        UpdateDomains::plain(paused.update_domain),
        &[],
        &[],
        &[],
        [],
        &Limits::none(),
    );
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
