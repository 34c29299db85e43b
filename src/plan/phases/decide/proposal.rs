//! Part of the decide phase: the rollout step the planner proposes (which pods go in their
//! update domain's turn), with what the gate and the report read of it.

use crate::crd::osd::OsdKey;
use crate::plan::gate::GateSubject;
use crate::plan::observed::classify::{ObservedPod, PodClass, Workload};
use crate::plan::phases::seen::{Removal, Seen};
use crate::plan::rules::rollout::{rollout_step, Candidate, Hold, Limits, Missing};
use crate::plan::says::actions::{Action, DeleteReason};
use std::collections::{BTreeMap, BTreeSet};

/// The rollout step's outcome besides its deletions: what the gate and the report read.
pub(in crate::plan) struct Rollout {
    pub(in crate::plan) halted: Option<String>,
    /// Update domains with a missing, not-yet-Ready or still-terminating OSD pod.
    pub(in crate::plan) unavailable: BTreeSet<String>,
    /// The keys of every candidate still standing (live and Ready).
    pub(in crate::plan) standing: BTreeSet<String>,
    /// The update domains with an out-of-date pod (or era ReplicaSet).
    pub(in crate::plan) out_of_date: BTreeSet<String>,
    /// Those `partition` or a canary hold.
    pub(in crate::plan) held: BTreeMap<String, Hold>,
    /// The hold the rollout stops at, when nothing else waits.
    pub(in crate::plan) halted_by: Option<Hold>,
    /// Whether `halted` is the disruption budget's reason.
    pub(in crate::plan) waits_for_budget: bool,
}

/// The deletions of the rollout step, which the gate may trim.
#[derive(Default)]
pub(in crate::plan) struct StepDeletions {
    pub(in crate::plan) actions: Vec<Action>,
    /// The update domain of each of `actions`.
    pub(in crate::plan) action_domains: Vec<String>,
    /// The OSDs whose pods go now, in order.
    pub(in crate::plan) replacing: Vec<OsdKey>,
    /// The update domains started now.
    pub(in crate::plan) domains: Vec<String>,
    /// The keys of the chosen deletions with their pods, for the Ceph gate.
    pub(in crate::plan) subjects: Vec<GateSubject>,
}

/// At most `maxUnavailable` update domains unavailable at once: out-of-date pods (their
/// successors follow) and the removals, by update domain; a blocked OSD's pod is not
/// replaced.
pub(in crate::plan) fn rollout(
    seen: &Seen<'_>,
    current: &[&ObservedPod],
    removals: &[Removal<'_>],
    missing: &[Missing],
    limits: &Limits<'_>,
) -> (Rollout, StepDeletions) {
    let (candidates, reasons) = candidates(seen, current, removals);
    let gate_key = |c: &Candidate<'_>| gate_key(seen, c);
    let unready: Vec<&ObservedPod> = current
        .iter()
        .copied()
        .filter(|p| p.class == PodClass::Unready)
        .collect();
    let down = down_without_a_turn(seen, &candidates);
    let step = rollout_step(
        seen.spec,
        seen.domains(),
        &candidates,
        &unready,
        missing,
        down,
        limits,
    );
    let chosen = || {
        step.chosen
            .iter()
            .map(|&i| (candidates[i].pod, &reasons[i]))
    };
    let standing = (candidates.iter())
        .filter(|c| c.pod.ready)
        .filter_map(|c| gate_key(c).map(|k| k.to_string()))
        .collect();
    let out_of_date = (candidates.iter())
        .filter(|c| c.replaces)
        .map(|c| c.domain.clone())
        .collect();
    let proposed = StepDeletions {
        subjects: subjects(seen, &candidates, &step.chosen),
        actions: chosen()
            .map(|(pod, reason)| delete(pod, reason.clone()))
            .collect(),
        action_domains: (step.chosen.iter())
            .map(|&i| candidates[i].domain.clone())
            .collect(),
        replacing: chosen().filter_map(|(pod, _)| pod.key.clone()).collect(),
        domains: step.domains,
    };
    let rollout = Rollout {
        out_of_date,
        held: step.held,
        halted_by: step.halted_by,
        waits_for_budget: step.waits_for_budget,
        standing,
        halted: step.halted,
        unavailable: step.unavailable,
    };
    (rollout, proposed)
}

/// The pods that go in their update domain's turn, with why: the out-of-date ones (but a
/// pod preparing a new disk), then the removals.
fn candidates<'p>(
    seen: &Seen<'_>,
    current: &[&'p ObservedPod],
    removals: &[Removal<'p>],
) -> (Vec<Candidate<'p>>, Vec<DeleteReason>) {
    let out_of_date = current
        .iter()
        .copied()
        .filter(|p| p.class == PodClass::OutOfDate && !seen.is_blocked(p.key.as_ref()))
        // A pod preparing a new disk is not stopped mid-prepare: it is rolled once it is up.
        .filter(|p| {
            p.key
                .as_ref()
                .is_none_or(|k| !seen.prepare_ids.contains_key(k))
        })
        .filter_map(|pod| {
            let domain = seen.domain_of(pod.key.as_ref()?);
            Some((Candidate::replacing(pod, domain), DeleteReason::Replace))
        });
    let removals = removals.iter().filter_map(|(pod, reason, served)| {
        let key = served.map(|o| &o.key).or(pod.key.as_ref())?;
        let domain = seen.domain_of(key);
        Some((Candidate::removing(pod, domain), reason.clone()))
    });
    out_of_date.chain(removals).unzip()
}

/// The update domains down though no step took them: a removed OSD's pod still terminating
/// keeps its domain down until it is gone; an open drain's domains count as down from its
/// start (its pods go once Ceph lets them).
fn down_without_a_turn(seen: &Seen<'_>, candidates: &[Candidate<'_>]) -> Vec<String> {
    let removing = (seen.pods.iter())
        .filter(|p| p.class == PodClass::Terminating)
        .filter(|p| {
            p.device()
                .is_some_and(|d| !seen.desired.disks.contains_key(d))
        })
        .filter_map(|p| Some(seen.domain_of(p.key.as_ref()?)));
    let drain_keys: BTreeSet<&str> = (seen.previous.ceph_step.iter())
        .filter(|s| s.drain.is_some())
        .flat_map(|s| s.keys.iter().map(String::as_str))
        .collect();
    let draining = (candidates.iter())
        .filter(|c| gate_key(seen, c).is_some_and(|k| drain_keys.contains(k.to_string().as_str())))
        .map(|c| c.domain.clone());
    removing.chain(draining).collect()
}

/// The OSD a candidate stands for: its own, or the desired one on its disk.
fn gate_key(seen: &Seen<'_>, candidate: &Candidate<'_>) -> Option<OsdKey> {
    (candidate.pod.key.clone())
        .or_else(|| (candidate.pod.holds()).find_map(|d| seen.osd_on(d).map(|o| o.key.clone())))
}

/// The keys of the `chosen` candidates, once each, with their pods: what the gate asks about.
fn subjects(seen: &Seen<'_>, candidates: &[Candidate<'_>], chosen: &[usize]) -> Vec<GateSubject> {
    let mut subjects: Vec<GateSubject> = Vec::new();
    for &i in chosen {
        let Some(key) = gate_key(seen, &candidates[i]) else {
            continue;
        };
        if subjects.iter().all(|s| s.key != key) {
            let pod = pod_of(seen, &candidates[i], &key);
            let leaving = !seen.desired.osds.contains_key(&key);
            subjects.push(GateSubject {
                key,
                pod,
                domain: candidates[i].domain.clone(),
                leaving,
            });
        }
    }
    subjects
}

impl StepDeletions {
    /// Only the deletions of the update domains `allowed` (Ceph let the first go).
    pub(in crate::plan) fn keep_domains(
        &mut self,
        allowed: &BTreeSet<String>,
        domain_of: impl Fn(&OsdKey) -> String,
    ) {
        let actions = std::mem::take(&mut self.actions);
        let domains = std::mem::take(&mut self.action_domains);
        for (action, domain) in actions.into_iter().zip(domains) {
            if allowed.contains(&domain) {
                self.actions.push(action);
                self.action_domains.push(domain);
            }
        }
        self.domains.retain(|d| allowed.contains(d));
        self.subjects.retain(|s| allowed.contains(&s.domain));
        self.replacing.retain(|k| allowed.contains(&domain_of(k)));
    }

    /// Only the deletions of the keys `allowed` (a drain's, once Ceph let its OSDs go).
    pub(in crate::plan) fn keep_keys(&mut self, allowed: &BTreeSet<String>) {
        let kept = |key: Option<&OsdKey>| key.is_some_and(|k| allowed.contains(&k.to_string()));
        let actions = std::mem::take(&mut self.actions);
        let domains = std::mem::take(&mut self.action_domains);
        for (action, domain) in actions.into_iter().zip(domains) {
            let key = match &action {
                Action::Delete { key, .. } | Action::DeleteReplicaSet { key, .. } => key.as_ref(),
                _ => None,
            };
            if kept(key) {
                self.actions.push(action);
                self.action_domains.push(domain);
            }
        }
        let started: BTreeSet<&String> = self.action_domains.iter().collect();
        self.domains.retain(|d| started.contains(d));
        self.subjects.retain(|s| kept(Some(&s.key)));
        self.replacing.retain(|k| kept(Some(k)));
    }
}

/// The pod a candidate's OSD daemon runs in: the candidate itself, or the pod of its era
/// ReplicaSet.
fn pod_of(seen: &Seen<'_>, candidate: &Candidate<'_>, key: &OsdKey) -> Option<String> {
    match candidate.pod.workload {
        Workload::Pod => Some(candidate.pod.name.clone()),
        Workload::ReplicaSet => (seen.pods.iter())
            .find(|p| p.key.as_ref() == Some(key) && matches!(p.class, PodClass::Foreign(_)))
            .map(|p| p.name.clone()),
    }
}

pub(in crate::plan) fn delete(pod: &ObservedPod, reason: DeleteReason) -> Action {
    let (name, uid, key) = (pod.name.clone(), pod.uid.clone(), pod.key.clone());
    match pod.workload {
        Workload::Pod => Action::Delete {
            name,
            uid,
            key,
            reason,
        },
        Workload::ReplicaSet => Action::DeleteReplicaSet {
            name,
            uid,
            key,
            reason,
        },
    }
}
