//! The Ceph gate end to end: the operator runs with `--ceph-conf`/`--ceph-keyring`/`--ceph-id`
//! (the key with the operator's minimal caps) against a real Ceph whose OSD daemons the bridge
//! runs for KWOK's pods. A rollout by host must then hold in Ceph's own view: at most one host's
//! OSDs down, no PG unavailable, each step's new daemons booted and every PG clean before the
//! next host stops, no `noout` left.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`; the cluster installs them when missing).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::ROLLOUT;
use molecule_like_tests::journeys::steps::clean_after;
use molecule_like_tests::kubernetes::manifests::CR;
use serde_json::json;

/// Seconds from `from` to `at`, `-` when it never happened.
fn secs(at: Option<Duration>, from: Duration) -> String {
    at.map_or_else(
        || "-".into(),
        |at| format!("{:+.2}s", at.as_secs_f64() - from.as_secs_f64()),
    )
}

/// A template change with the gate on: host by host, each host's new daemon booted and every
/// PG clean before the next host stops; at most one host down in Ceph's view, no PG
/// unavailable, no `noout` left, the gate idle at the end.
#[tokio::test]
async fn a_gated_rollout_by_host_holds_in_cephs_view() -> anyhow::Result<()> {
    let g = Gated::up("cephgate-roll").await?;
    let map = g.cluster.osd_dump().await?;
    let before: BTreeMap<u32, u64> = g
        .table
        .values()
        .map(|id| (*id, map.osd(*id).map_or(0, |o| o.up_from)))
        .collect();

    let from = g.ceph.elapsed();
    let t_roll = Instant::now();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let rolled = g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
    let pods_converged = t_roll.elapsed();
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let gate_idle = t_roll.elapsed();
    g.cluster.wait_clean(Duration::from_mins(1)).await?;

    // The pods: one per disk at any time, host by host, each host's replacement Ready first.
    g.check_pods_rolled_by_host().await?;
    g.bridge.check()?;

    // Ceph's view: one host down at most, no PG unavailable, no noout at the end.
    let recording = g.ceph.recording();
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    recording.check_one_host_at_a_time(from).map_err(fail)?;

    // Per OSD in the order the rollout stopped them: the old daemon stopped, the new one
    // booted with a newer up_from, then every PG clean, all before the next host's stop.
    let lines = check_steps_in_order(&g, &rolled, &before, &report)?;

    // The gate at the end: idle, no step, noout on no OSD.
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(status.ceph_step.is_none(), "{status:?}");
    Milestones::new("gated rollout by host")
        .span("pods converged after the template change", pods_converged)
        .span("gate idle after the template change", gate_idle)
        .section("steps (times from each stop request)", lines.join("\n"))
        .section("records", &report)
        .print();
    g.down().await
}

/// Per OSD in the order the rollout stopped them: the old daemon stopped, the new one booted
/// with a newer up_from (than `before`), then every PG clean, all before the next host's
/// stop. Returns a line per step: the operator's step against Ceph's stop, down, boot, clean.
fn check_steps_in_order(
    g: &Gated,
    rolled: &BTreeMap<OsdKey, Pod>,
    before: &BTreeMap<u32, u64>,
    report: &str,
) -> anyhow::Result<Vec<String>> {
    let recording = g.ceph.recording();
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    let mut steps: Vec<(Duration, OsdKey, u32)> = Vec::new();
    for (key, id) in &g.table {
        let (old_pod, new_pod) = (g.converged.pods[key].name_any(), rolled[key].name_any());
        let list = g
            .bridge
            .daemons_of(*id, &[&old_pod, &new_pod])
            .map_err(fail)?;
        let stopping = list[0]
            .stopping
            .ok_or_else(|| anyhow::anyhow!("osd.{id}: never stopped\n{report}"))?;
        steps.push((stopping, key.clone(), *id));
    }
    steps.sort();
    let daemons = g.bridge.daemons();
    let gate_samples = g.gate.samples();
    let mut lines = Vec::new();
    for (i, (stopping, key, id)) in steps.iter().enumerate() {
        let list = &daemons[id];
        let (booted_at, up_from) = list[1]
            .booted
            .ok_or_else(|| anyhow::anyhow!("osd.{id}: new daemon never booted\n{report}"))?;
        anyhow::ensure!(up_from > before[id], "osd.{id}: up_from {up_from}");
        let down_at = recording
            .osd_down_spans(*stopping)
            .get(&format!("osd.{id}"))
            .and_then(|spans| spans.first().map(|s| s.from));
        let up_seen = recording
            .boots(*id)
            .into_iter()
            .find(|(_, u)| *u == up_from)
            .map(|(at, _)| at);
        // The first PG sample after the boot with every PG active+clean.
        let clean_at = clean_after(&recording, booted_at);
        // The operator's step: opened with this OSD, closed when no longer open.
        let opened = gate_samples
            .iter()
            .find(|s| s.step.as_ref().is_some_and(|(_, ids)| ids.contains(id)))
            .map(|s| s.at);
        let closed = opened.and_then(|o| {
            gate_samples
                .iter()
                .find(|s| s.at > o && !s.step.as_ref().is_some_and(|(_, ids)| ids.contains(id)))
                .map(|s| s.at)
        });
        if let Some((next_stop, next_key, next_id)) = steps.get(i + 1) {
            anyhow::ensure!(
                booted_at < *next_stop,
                "osd.{id} ({key}) booted at {:.2}s, after osd.{next_id} ({next_key}) was \
                 stopped at {:.2}s\n{report}",
                booted_at.as_secs_f64(),
                next_stop.as_secs_f64()
            );
            // Clean before the next stop showed in Ceph (a sample may follow the stop asked).
            let next_seen = recording.stop_seen_at(*next_stop);
            anyhow::ensure!(
                clean_at.is_some_and(|c| c < next_seen),
                "every PG clean after osd.{id}'s boot only at {clean_at:?}, osd.{next_id} \
                 stopped at {:.2}s (seen in Ceph at {:.2}s)\n{report}",
                next_stop.as_secs_f64(),
                next_seen.as_secs_f64()
            );
        }
        lines.push(format!(
            "  osd.{id} on {}: operator's step open {} → closed {} | Ceph: stop requested \
             {:.2}s, down {}, new daemon booted {} (up_from {} → {up_from}, seen up {}), every \
             PG clean {}",
            key.host,
            secs(opened, *stopping),
            secs(closed, *stopping),
            stopping.as_secs_f64(),
            secs(down_at, *stopping),
            secs(Some(booted_at), *stopping),
            before[id],
            secs(up_seen, *stopping),
            secs(clean_at, *stopping),
        ));
    }

    Ok(lines)
}

/// An OSD killed outside any rollout (its pod stays Ready: only Ceph knows): a template change
/// starts no step, `CephGate` names the OSD; once its daemon runs again the rollout resumes and
/// completes.
#[tokio::test]
async fn an_osd_down_outside_the_rollout_halts_it_until_it_is_back() -> anyhow::Result<()> {
    let g = Gated::up("cephgate-down").await?;
    // The last host in the rollout's order: the first step would stop another host.
    let (key, id) = g.last_in_rollout_order();
    let pod = g.converged.pods[&key].name_any();
    g.cluster.osd_stop(id, true).await?;
    g.wait_osd("the killed OSD down", id, Duration::from_mins(1), |o| !o.up)
        .await?;

    let from = g.ceph.elapsed();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let osd = format!("osd.{id}");
    let r =
        g.s.wait_until(
            "CephGate False naming the OSD down",
            Duration::from_secs(30),
            || async {
                let status = g.s.cr_status(CR).await?.unwrap_or_default();
                Ok(status
                    .conditions
                    .iter()
                    .find(|c| {
                        c.type_ == "CephGate" && c.status == "False" && c.message.contains(&osd)
                    })
                    .map(|c| (c.reason.clone(), c.message.clone())))
            },
        )
        .await;
    let (reason, message) =
        r.map_err(|e| anyhow::anyhow!("{e:#}\ngate status:\n{}", g.gate.render()))?;
    // Nothing goes down while the OSD is: every old pod stays.
    g.converged_pods_stand(Duration::from_secs(5), &format!("osd.{id} was down"))
        .await?;
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(status.ceph_step.is_none(), "a step opened: {status:?}");
    let halted_at = g.ceph.elapsed();

    // Back as its pod's daemon: the rollout resumes and completes.
    g.start_as_pod(id, &key, &pod).await?;
    let restarted = g.ceph.elapsed();
    g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let done = g.ceph.elapsed();
    let recording = g.ceph.recording();
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    recording.check_one_host_at_a_time(from).map_err(fail)?;
    println!(
        "==== osd.{id} killed before the rollout: CephGate False {reason}: {message}\nhalted \
         (checked for 5 s) until {:.2}s, restarted {:.2}s, rollout done and gate idle {:.2}s \
         after the restart\n{report}",
        halted_at.as_secs_f64(),
        restarted.as_secs_f64(),
        done.as_secs_f64() - restarted.as_secs_f64(),
    );
    g.down().await
}

/// By OSD with `maxUnavailable: 2` over 3 hosts × 1 OSD (pool size 3, min_size 2): the
/// rollout proposes two OSDs at once; Ceph refuses the pair (two copies of every PG down),
/// so the operator asks about the first alone and stops only it. In Ceph's view one host
/// down at most and no PG unavailable; the rollout completes.
#[tokio::test]
async fn by_osd_a_pair_ceph_refuses_goes_one_at_a_time() -> anyhow::Result<()> {
    Box::pin(by_osd_in_pairs("cephgate-pair", &["/dev/sdb"], 1)).await
}

/// By OSD with `maxUnavailable: 2` over 3 hosts × 2 OSDs: the rollout proposes each host's
/// two OSDs together, Ceph lets the pair go (one host's copies), both stop in one step.
#[tokio::test]
async fn by_osd_a_pair_ceph_lets_go_stops_together() -> anyhow::Result<()> {
    Box::pin(by_osd_in_pairs(
        "cephgate-pairs",
        &["/dev/sdb", "/dev/sdc"],
        2,
    ))
    .await
}

/// A rollout by OSD with `maxUnavailable: 2` over 3 hosts × `data`: every step the operator
/// records holds `per_step` OSDs, pairs refused by Ceph are logged exactly when `per_step`
/// is 1; in Ceph's view one host down at most, no PG unavailable, no `noout` left.
async fn by_osd_in_pairs(name: &str, data: &[&str], per_step: usize) -> anyhow::Result<()> {
    let g = Gated::up_with(
        name,
        &GatedOptions {
            data,
            update_domain: "OSD",
            spec_patch: Some(json!({"maxUnavailable": 2})),
            ..GatedOptions::default()
        },
    )
    .await?;
    let from = g.ceph.elapsed();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let recording = g.ceph.recording();
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    recording.check_one_host_at_a_time(from).map_err(fail)?;
    g.s.assert_one_pod_per_key().await?;
    let mut steps: Vec<Vec<u32>> = g
        .gate
        .samples()
        .into_iter()
        .filter_map(|s| s.step.map(|(_, ids)| ids))
        .collect();
    steps.dedup();
    anyhow::ensure!(
        steps.len() == g.table.len() / per_step && steps.iter().all(|ids| ids.len() == per_step),
        "steps {steps:?}, expected {per_step} OSDs each\n{report}"
    );
    let refused =
        g.s.operator_log()
            .lines()
            .filter(|l| l.contains("does not let these update domains stop together"))
            .count();
    anyhow::ensure!(
        (refused > 0) == (per_step == 1),
        "{refused} pairs refused by Ceph\n{report}"
    );
    println!(
        "==== by OSD, maxUnavailable 2, 3 hosts × {} OSDs: steps {steps:?}; {refused} pairs \
         refused by Ceph\n{report}",
        data.len()
    );
    g.down().await
}
