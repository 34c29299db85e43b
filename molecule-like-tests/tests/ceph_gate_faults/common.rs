//! What the gate-fault journeys share: the gate's condition sequence, a rollout
//! started and waited on, what else went down, the gate's log.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use ceph_osd_operator::crd::CephStep;
use kube::ResourceExt;
use molecule_like_tests::ceph::OsdMap;
use molecule_like_tests::journeys::gated::{GateSample, Gated};
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::pods::pod_key;
use molecule_like_tests::recording::ceph::{CephRecording, Observed};
use serde_json::json;

/// Long waits: the machine is shared, a step takes ~20 s, a mgr back ~10 s more.
pub(crate) const LONG: Duration = Duration::from_mins(5);
/// How long a fault is held while checking that nothing more goes down.
pub(crate) const HELD: Duration = Duration::from_secs(12);

/// The `CephGate` condition's changes from `from` on: (when, status, reason, message).
pub(crate) fn condition_sequence(
    samples: &[GateSample],
    from: Duration,
) -> Vec<(Duration, String, String, String)> {
    let mut out: Vec<(Duration, String, String, String)> = Vec::new();
    for s in samples.iter().filter(|s| s.at >= from) {
        let Some((status, reason, message)) = &s.condition else {
            continue;
        };
        if out
            .last()
            .is_none_or(|(_, st, r, m)| st != status || r != reason || m != message)
        {
            out.push((s.at, status.clone(), reason.clone(), message.clone()));
        }
    }
    out
}

pub(crate) fn render_sequence(seq: &[(Duration, String, String, String)]) -> String {
    seq.iter()
        .map(|(at, status, reason, message)| {
            format!(
                "  {:>8.2}s {status} {reason}: {message}\n",
                at.as_secs_f64()
            )
        })
        .collect()
}

/// Waits until `status.cephStep` is present and `done` holds for it; returns it.
pub(crate) async fn wait_step(
    g: &Gated,
    what: &str,
    timeout: Duration,
    done: impl Fn(&CephStep) -> bool,
) -> anyhow::Result<CephStep> {
    g.s.wait_until(what, timeout, || async {
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        Ok(status.ceph_step.filter(|s| done(s)))
    })
    .await
    .map_err(|e| anyhow!("{e:#}\ngate status:\n{}", g.gate.render()))
}

/// A rollout started by a template change, its first step open with `noout`.
pub(crate) struct Started {
    /// When the template changed, on the Ceph recorder's clock.
    pub(crate) from: Duration,
    pub(crate) at: Instant,
    pub(crate) hash: String,
    pub(crate) step: CephStep,
}

pub(crate) async fn start_rollout(g: &Gated) -> anyhow::Result<Started> {
    let from = g.ceph.elapsed();
    let at = Instant::now();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let step = wait_step(g, "the first step open with noout", LONG, |s| {
        !s.noout.is_empty()
    })
    .await?;
    Ok(Started {
        from,
        at,
        hash,
        step,
    })
}

/// Nothing went down beyond `step` (keys as `host:data`): each other key still has exactly its
/// converged pod, not terminating, and no step on another key is open.
pub(crate) async fn nothing_more_down(
    g: &Gated,
    step: &BTreeSet<String>,
    when: &str,
) -> anyhow::Result<()> {
    let pods = g.s.owned_pods(CR).await?;
    for (key, old) in &g.converged.pods {
        if step.contains(&key.to_string()) {
            continue;
        }
        let of_key: Vec<String> = pods
            .iter()
            .filter(|p| pod_key(p).as_ref() == Some(key))
            .map(|p| {
                let terminating = if p.metadata.deletion_timestamp.is_some() {
                    " (terminating)"
                } else {
                    ""
                };
                format!("{}{terminating}", p.name_any())
            })
            .collect();
        anyhow::ensure!(
            of_key == [old.name_any()],
            "{when}: the pods of {key} are {of_key:?}, expected its pod {} alone\ngate \
             status:\n{}{}",
            old.name_any(),
            g.gate.render(),
            g.bridge.render()
        );
    }
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    if let Some(open) = &status.ceph_step {
        anyhow::ensure!(
            open.keys.iter().all(|k| step.contains(k)),
            "{when}: a step on {:?} is open, only {step:?} may be\ngate status:\n{}",
            open.keys,
            g.gate.render()
        );
    }
    Ok(())
}

/// When the first osdmap sample from `from` on satisfied `done`.
pub(crate) fn first_map(
    recording: &CephRecording,
    from: Duration,
    done: impl Fn(&OsdMap) -> bool,
) -> Option<Duration> {
    recording.events.iter().find_map(|e| match &e.observed {
        Observed::OsdMap(map) if e.at >= from && done(map) => Some(e.at),
        _ => None,
    })
}

/// The operator log's lines about its start, the gate's answers, the steps, `noout`, pods
/// deleted and created, Ceph calls timed out (each reconcile's summary left out).
pub(crate) fn gate_log(g: &Gated) -> String {
    let words = [
        "press ctrl+c",
        "asked Ceph",
        "Ceph step",
        "noout",
        "deleted pod",
        "created pod",
        "timed out",
    ];
    g.s.operator_log()
        .lines()
        .filter(|l| !l.contains("reconciled cephosd") && words.iter().any(|w| l.contains(w)))
        .map(|l| format!("  {l}\n"))
        .collect()
}

/// When each OSD's first (converged) daemon was asked to stop, by the bridge's record.
pub(crate) fn old_daemon_stops(g: &Gated) -> BTreeMap<u32, Option<Duration>> {
    let daemons = g.bridge.daemons();
    g.table
        .values()
        .map(|id| {
            (
                *id,
                daemons
                    .get(id)
                    .and_then(|list| list.first())
                    .and_then(|d| d.stopping),
            )
        })
        .collect()
}
