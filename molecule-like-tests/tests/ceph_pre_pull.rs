//! `spec.prePull` with the Ceph gate, over real OSD daemons: the pods of a gated scenario are
//! Ready only once their OSD is up in Ceph (`testing.local/ready: ceph`), so its pre-pull pods,
//! which carry the template's annotations, run but never get Ready, as pods waiting for a
//! readiness probe. Their pull is done once their containers run: with the default deadline
//! (300 s) a rollout of three hosts must end well within one deadline, each old pod deleted
//! after its node's pull, no `PrePull` Warning, and hold in Ceph's view as any gated rollout.
//!
//! Needs the local control plane, a built operator and Ceph's daemons (as `tests/ceph_gate.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use ceph_osd_operator::labels;
use kube::ResourceExt;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::scenario::ROLLOUT;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::pods::{annotation, is_ready};
use serde_json::json;

#[tokio::test]
async fn a_gated_rollout_with_pre_pull_waits_for_pulls_not_for_the_deadline() -> anyhow::Result<()>
{
    let options = GatedOptions {
        spec_patch: Some(json!({"prePull": {}})),
        ..GatedOptions::default()
    };
    let g = Gated::up_with("cephprepull", &options).await?;
    let from = g.ceph.elapsed();
    let t_roll = Instant::now();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    // With a step held until the 300 s deadline this takes more than ROLLOUT (2 min).
    g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
    let converged = t_roll.elapsed();
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    g.cluster.wait_clean(Duration::from_mins(1)).await?;

    g.check_pods_rolled_by_host().await?;
    g.bridge.check()?;
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    g.ceph
        .recording()
        .check_one_host_at_a_time(from)
        .map_err(fail)?;

    // Each old pod deleted after its node's pre-pull pod ran, none of which got Ready.
    let rec = g.s.recorder()?;
    rec.catch_up(&g.s.pods).await?;
    let events = rec.events();
    let mut ran: BTreeMap<String, Duration> = BTreeMap::new();
    for e in &events {
        if !labels::is_pre_pull(&e.pod)
            || annotation(&e.pod, labels::PRE_PULL_TEMPLATE_HASH) != Some(hash.as_str())
        {
            continue;
        }
        ensure!(!is_ready(&e.pod), "a pre-pull pod Ready: {:?}", e.pod);
        let statuses = (e.pod.status.as_ref())
            .and_then(|s| s.container_statuses.as_deref())
            .unwrap_or_default();
        let running = !statuses.is_empty()
            && (statuses.iter()).all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
        let node = annotation(&e.pod, labels::PRE_PULL_NODE).unwrap_or_default();
        if running {
            ran.entry(node.to_owned()).or_insert(e.at);
        }
    }
    let t = rec.timeline();
    let at: BTreeMap<usize, Duration> = events.iter().map(|e| (e.seq, e.at)).collect();
    let mut lines = Vec::new();
    for (key, pod) in &g.converged.pods {
        let deleted = (t.get(&pod.name_any())?.deletion_started)
            .and_then(|seq| at.get(&seq).copied())
            .with_context(|| format!("{key}'s old pod was not deleted"))?;
        let pulled = *ran
            .get(&key.host)
            .with_context(|| format!("no pre-pull pod ran on {}: {ran:?}", key.host))?;
        ensure!(
            pulled < deleted,
            "{key}'s old pod went at {deleted:?}, before its node's pull ({pulled:?})"
        );
        lines.push(format!(
            "{key}: pulled at {pulled:.2?}, old pod deleted at {deleted:.2?}"
        ));
    }
    let events = g.s.cr_events(CR).await?;
    let warnings: Vec<&str> = (events.iter())
        .filter(|e| e.reason.as_deref() == Some("PrePull") && e.type_.as_deref() == Some("Warning"))
        .filter_map(|e| e.note.as_deref())
        .collect();
    ensure!(warnings.is_empty(), "PrePull Warnings: {warnings:?}");
    println!(
        "pods converged {converged:.2?} after the template change (deadline 300 s)\n{}",
        lines.join("\n")
    );
    g.down().await
}
