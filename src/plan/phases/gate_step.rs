//! The gate phase: the Ceph gate on the proposed rollout step (`plan::gate` holds its rules),
//! with what a CephOSD being deleted changes.

use crate::crd::CephStep;
use crate::plan::gate::crashes::{crash_halt, CrashHalt};
use crate::plan::gate::{gate, CephView, GateCondition, GateInput, GateOutcome, GateSubject};
use crate::plan::observed::classify::{ObservedPod, PodClass};
use crate::plan::phases::decide::Decided;
use crate::plan::phases::seen::Seen;
use crate::plan::rules::deletion::{open_step_at_deletion, Deletion, ORPHANED};
use crate::plan::says::conditions::ConditionReason;
use crate::plan::topology::HostBuckets;
use k8s_openapi::jiff::Timestamp;

/// The gate on the rollout step of `decided`, whose deletions are about `subjects`: what the
/// gate lets go, asks, records and says. A CephOSD being deleted ends its open step its own
/// way; one whose pods all go at once takes nothing down and asks nothing.
pub(in crate::plan) fn gate_step(
    seen: &Seen<'_>,
    ceph: &CephView,
    decided: &Decided<'_>,
    subjects: &[GateSubject],
    now: Timestamp,
) -> GateOutcome {
    let open = seen.previous.ceph_step.as_ref();
    let crashed = (ceph.crashes.as_deref())
        .and_then(|crashes| crash_halt(&seen.pods, &seen.previous.osd_ids, crashes));
    let mut gated = match (seen.deletion, open) {
        (Some(deleting), Some(open)) => {
            let live = seen.pods.iter().any(ObservedPod::is_live);
            open_step_at_deletion(deleting, open, live)
        }
        _ => None,
    }
    .unwrap_or_else(|| {
        gate(&gate_input(
            seen,
            ceph,
            decided,
            subjects,
            crashed.as_ref(),
            now,
        ))
    });
    if seen.deletion.is_none() {
        gated.crashed = crashed;
    }
    if let Some(buckets) = &seen.buckets {
        failure_domains(&mut gated, open, buckets);
    }
    let kept = match seen.deletion {
        // Kubernetes takes every pod down itself.
        Some(Deletion::AtOnce(why)) => Some(why),
        // The pods keep running.
        Some(Deletion::Orphaned) => Some(ORPHANED),
        _ => None,
    };
    if let Some(why) = kept {
        // The operator takes no pod down and asks nothing.
        gated.deletions_allowed = false;
        gated.question = None;
        gated.halted.get_or_insert_with(|| why.to_owned());
    }
    gated
}

/// With failure domains: a step that starts records each of its domains with its hosts; while
/// it is open, a host of it that Ceph's CRUSH map (or its label) now puts elsewhere halts the
/// rollout, named (nothing more goes down until the step ends; the next step is asked about
/// as the domains are then).
fn failure_domains(gated: &mut GateOutcome, open: Option<&CephStep>, buckets: &HostBuckets) {
    let Some(step) = gated.step.as_mut() else {
        return;
    };
    let continuing = open.is_some_and(|o| o.started == step.started && o.keys == step.keys);
    if !continuing {
        for key in &step.keys {
            let host = key.split_once(':').map_or(key.as_str(), |(h, _)| h);
            let bucket = buckets.bucket_of.get(host).map_or(host, String::as_str);
            let hosts = step.domains.entry(bucket.to_owned()).or_default();
            if !hosts.iter().any(|h| h == host) {
                hosts.push(host.to_owned());
            }
        }
        return;
    }
    let moved: Vec<String> = (step.domains.iter())
        .flat_map(|(domain, hosts)| hosts.iter().map(move |h| (domain, h)))
        .filter_map(|(domain, host)| match buckets.bucket_of.get(host) {
            Some(now) if now == domain => None,
            Some(now) => Some(format!("host {host} moved from {domain} to {now}")),
            None => Some(format!(
                "host {host} of {domain} is in no known failure domain now"
            )),
        })
        .collect();
    if moved.is_empty() {
        return;
    }
    let message = format!(
        "{} while the step on {} is under way: nothing more goes down until that step ends, \
         then the next step is asked about as the failure domains are then",
        moved.join("; "),
        step.keys.join(", ")
    );
    gated.halted = Some(message.clone());
    gated.condition = GateCondition {
        holds: false,
        reason: ConditionReason::CephBlocked("FailureDomainChanged"),
        message,
    };
}

/// What the gate is given about the rollout step of `decided` (`crashed`: a new daemon's crash
/// that halts the rollout).
fn gate_input<'i>(
    seen: &'i Seen<'_>,
    ceph: &'i CephView,
    decided: &'i Decided<'_>,
    subjects: &'i [GateSubject],
    crashed: Option<&'i CrashHalt>,
    now: Timestamp,
) -> GateInput<'i> {
    let open = seen.previous.ceph_step.as_ref();
    let standing = &decided.rollout.standing;
    GateInput {
        view: ceph,
        skipped: seen.spec.skips_ceph_gate(),
        open,
        proposed: subjects,
        settled: open.is_some_and(|s| step_settled(seen, s)),
        untouched: open.is_some_and(|s| s.keys.iter().all(|k| standing.contains(k))),
        crashed,
        replacing: &seen.replacing,
        returned: open
            .filter(|s| s.drain.is_some())
            .map(|s| {
                (s.keys.iter())
                    .filter(|k| seen.desired.osds.keys().any(|d| d.to_string() == **k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
        now,
    }
}

/// Whether every key of the Ceph step `step` has its replacement Ready and soaked (an
/// up-to-date pod; an admin's `up-to-date` mark counts), or, no longer desired, no pod left.
fn step_settled(seen: &Seen<'_>, step: &CephStep) -> bool {
    step.keys.iter().all(|key| {
        let of_key = |p: &&ObservedPod| p.key.as_ref().is_some_and(|k| k.to_string() == *key);
        let desired = seen.desired.osds.keys().any(|k| k.to_string() == *key);
        if desired {
            seen.pods
                .iter()
                .filter(of_key)
                .any(|p| matches!(p.class, PodClass::UpToDate | PodClass::Ready))
                && !seen.era.iter().any(|p| of_key(&p))
        } else {
            !seen
                .pods
                .iter()
                .chain(&seen.era_superfluous)
                .any(|p| of_key(&p))
        }
    })
}
