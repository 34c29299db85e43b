//! A `noout` held past its limit: cleared, and the rollout stays halted.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ceph_osd_operator::OsdKey;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::ROLLOUT;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::pods::{is_ready, pod_key};
use serde_json::json;

use crate::common::{at, ceph_calls, check_pod_watch, report, wait_condition, Gate, HALT_HOLD};

/// The operator's `--ceph-max-noout-seconds` in the noout scenario.
const MAX_NOOUT: u64 = 10;
/// `--ceph-max-noout-seconds 10`, a rollout by host whose first replacement daemon never
/// boots: ~10 s into the step its `noout` is cleared in Ceph's view, a Warning event
/// `NooutExpired` is on the CephOSD, `CephGate` False `NooutExpired`, and the rollout stays
/// halted (no other host's pod goes); once the daemon boots the step ends and the rollout
/// completes, no `noout` left, no PG unavailable.
#[tokio::test]
async fn noout_held_past_its_limit_is_cleared_and_the_rollout_stays_halted() -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up_with(
        "ids-noout",
        &GatedOptions {
            extra_args: &["--ceph-max-noout-seconds", "10"],
            ..GatedOptions::default()
        },
    )
    .await?;
    let mut m = Milestones::on_clock(format!("noout held past {MAX_NOOUT}s"), g.ceph.clock());
    m.span("set up", t0.elapsed());
    // The first host in the rollout's order: its replacement's daemon will not start.
    let (key, id) = g.first_in_rollout_order();
    g.bridge.withhold(&key);

    let from = g.ceph.elapsed();
    let watch_from = g.s.pod_watch_mark().await?;
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let started = wait_step_with_noout(&g, &key, id, &mut m).await?;
    let mut findings: Vec<String> = Vec::new();
    wait_noout_expired(&g, from, started, &mut m, &mut findings).await?;

    // Halted: no other host's pod goes, the step stays open; the condition stays NooutExpired.
    let held_from = g.ceph.elapsed();
    let condition_seen = hold_halt_after_noout_expired(&g, &key, from).await?;
    let not_expired: Vec<&Option<Gate>> = condition_seen
        .iter()
        .filter(|c| {
            !c.as_ref()
                .is_some_and(|(s, r, _)| s == "False" && r == "NooutExpired")
        })
        .collect();
    if !not_expired.is_empty() {
        findings.push(format!(
            "CephGate was not False NooutExpired throughout the halt ({}s from {}): {not_expired:?}",
            HALT_HOLD.as_secs(),
            at(held_from)
        ));
    }
    m.figure(
        format!("CephGate during the {}s halt", HALT_HOLD.as_secs()),
        format!("{condition_seen:?}"),
    );

    // The daemon boots: the step ends, the rollout completes.
    m.mark("released");
    g.bridge.release(&key);
    g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let done = g.ceph.elapsed();
    let report = report(&g, from).await;
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    let recording = g.ceph.recording();
    recording.check_one_host_at_a_time(from).map_err(fail)?;
    check_pod_watch(&g, watch_from).await?;
    g.bridge.check().map_err(fail)?;
    let (expired_osds, expired_events) = expired_noouts(&g, &mut findings).await?;
    let booted = (g.bridge.daemons().get(&id))
        .and_then(|l| l.get(1).and_then(|d| d.booted))
        .map(|(t, _)| t);
    match booted {
        Some(booted) => m.mark_at("new daemon booted", booted),
        None => m.figure("new daemon booted", "-"),
    };
    m.mark_since("rollout done and gate idle", done, "released")
        .figure("noout expired on", format!("{expired_osds:?}"))
        .figure("NooutExpired events", format!("{expired_events:?}"))
        .section(
            "the operator's noout calls",
            ceph_calls(&g, "noout", 0).join("\n"),
        )
        .section("records", &report)
        .print();
    anyhow::ensure!(
        findings.is_empty(),
        "the scenario completed, but:\n{}\n{report}",
        findings.join("\n")
    );
    g.down().await
}

/// Waits for the rollout's first step, on `key` with `noout` on `id`, and for that `noout` in
/// Ceph's view. Returns when the step started (`cephStep.started`) on the recorders' clock.
async fn wait_step_with_noout(
    g: &Gated,
    key: &OsdKey,
    id: u32,
    m: &mut Milestones,
) -> anyhow::Result<Duration> {
    let step =
        g.s.wait_until(
            "a step on the first host",
            Duration::from_mins(1),
            || async {
                Ok(g.s.cr_status(CR).await?.and_then(|s| {
                    s.ceph_step
                        .filter(|st| st.keys.contains(&key.to_string()) && st.noout == [id])
                }))
            },
        )
        .await?;
    let step_seen = g.ceph.elapsed();
    // `cephStep.started` (whole seconds, as the API stores it) on the recorders' clock.
    let ago = Timestamp::now()
        .duration_since(step.started.0)
        .unsigned_abs();
    let started = g.ceph.elapsed().saturating_sub(ago);
    let noout_set = g
        .wait_osd(
            "noout on the step's OSD",
            id,
            Duration::from_secs(30),
            |o| o.noout,
        )
        .await?
        .osdmap
        .map(|(t, _)| t)
        .unwrap_or_default();
    m.mark_at("step started", started)
        .figure("step", format!("on osd.{id}, started {}", step.started.0))
        .mark_at("step seen", step_seen)
        .mark_since("noout set in Ceph", noout_set, "step started");
    Ok(started)
}

/// Past the limit (from the step's start, `started`): `noout` cleared in Ceph's view, no
/// sooner and soon after (a look at Ceph every second, `rm-noout`, the recorder's next
/// sample); `CephGate` False `NooutExpired` (a finding otherwise) and a Warning event.
async fn wait_noout_expired(
    g: &Gated,
    from: Duration,
    started: Duration,
    m: &mut Milestones,
    findings: &mut Vec<String>,
) -> anyhow::Result<()> {
    let cleared = g
        .ceph
        .wait_until("noout cleared", Duration::from_secs(MAX_NOOUT + 50), |v| {
            v.osdmap.as_ref().is_some_and(|(_, m)| m.noout().is_empty())
        })
        .await?
        .osdmap
        .map(|(t, _)| t)
        .unwrap_or_default();
    m.mark_since("noout cleared in Ceph", cleared, "step started");
    if let Some(set) = m.moment("noout set in Ceph") {
        m.span("noout cleared after the set", cleared.saturating_sub(set));
    }
    let expired = wait_condition(
        g,
        "CephGate False NooutExpired",
        Duration::from_secs(30),
        |(s, r, _)| s == "False" && r == "NooutExpired",
    )
    .await;
    m.mark("CephGate polled");
    m.figure("CephGate", format!("{:?}", expired.as_ref().ok()));
    if let Err(e) = &expired {
        findings.push(format!("{e:#}"));
    }
    let event =
        g.s.wait_until(
            "a Warning event NooutExpired",
            Duration::from_secs(30),
            || async {
                Ok(g.s.cr_events(CR).await?.into_iter().find(|e| {
                    e.type_.as_deref() == Some("Warning")
                        && e.reason.as_deref() == Some("NooutExpired")
                }))
            },
        )
        .await?;
    m.figure(
        format!("Warning {}", event.reason.as_deref().unwrap_or("-")),
        event.note.as_deref().unwrap_or("-"),
    );
    anyhow::ensure!(
        cleared >= started + Duration::from_secs(MAX_NOOUT)
            && cleared <= started + Duration::from_secs(MAX_NOOUT + 8),
        "noout cleared at {}, the step started at {}: not {MAX_NOOUT}s later\n{}",
        at(cleared),
        at(started),
        report(g, from).await
    );
    Ok(())
}

/// While the step's `noout` has expired and its OSD is still down: no other host's pod goes,
/// the step stays open without `noout`, `noout` is not set again, the disk's pod is not
/// Ready. Returns each change of `CephGate` seen meanwhile (`HALT_HOLD`).
async fn hold_halt_after_noout_expired(
    g: &Gated,
    key: &OsdKey,
    from: Duration,
) -> anyhow::Result<Vec<Option<Gate>>> {
    let others: BTreeMap<String, Option<String>> = g
        .converged
        .pods
        .iter()
        .filter(|(k, _)| *k != key)
        .map(|(_, p)| (p.name_any(), p.uid()))
        .collect();
    let key_text = key.to_string();
    let mut condition_seen: Vec<Option<Gate>> = Vec::new();
    let mut record = |c: Option<Gate>| {
        if condition_seen.last() != Some(&c) {
            condition_seen.push(c);
        }
    };
    let end = Instant::now() + HALT_HOLD;
    loop {
        for p in g.s.owned_pods(CR).await? {
            let mine = pod_key(&p).as_ref() == Some(key);
            anyhow::ensure!(
                mine || others.get(&p.name_any()) == Some(&p.uid())
                    && p.metadata.deletion_timestamp.is_none(),
                "pod {} changed while the step on {key} was held\n{}",
                p.name_any(),
                report(g, from).await
            );
            anyhow::ensure!(
                !mine || !is_ready(&p),
                "pod {} of {key} Ready though its daemon never started",
                p.name_any()
            );
        }
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        anyhow::ensure!(
            status
                .ceph_step
                .as_ref()
                .is_some_and(|s| s.keys.contains(&key_text) && s.noout.is_empty()),
            "the step is {:?} after noout expired\n{}",
            status.ceph_step,
            report(g, from).await
        );
        let latest = g.ceph.latest();
        anyhow::ensure!(
            latest
                .osdmap
                .as_ref()
                .is_some_and(|(_, m)| m.noout().is_empty()),
            "noout set again during the halt\n{}",
            report(g, from).await
        );
        record(g.gate_condition().await?);
        if Instant::now() > end {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(condition_seen)
}

/// Each OSD whose `noout` expired (`CephGate` said so) must have a `NooutExpired` event
/// naming it (a finding otherwise). Returns those OSDs and the events.
async fn expired_noouts(
    g: &Gated,
    findings: &mut Vec<String>,
) -> anyhow::Result<(Vec<u32>, Vec<String>)> {
    let expired_events: Vec<String> =
        g.s.cr_events(CR)
            .await?
            .iter()
            .filter(|e| e.reason.as_deref() == Some("NooutExpired"))
            .map(|e| {
                format!(
                    "{:?} (series count {})",
                    e.note.as_deref().unwrap_or("-"),
                    e.series.as_ref().map_or(1, |s| s.count)
                )
            })
            .collect();
    let mut expired_osds: Vec<u32> = g
        .gate
        .samples()
        .iter()
        .filter_map(|s| s.condition.as_ref())
        .filter(|(_, r, _)| r == "NooutExpired")
        .filter_map(|(_, _, m)| {
            m.split("osd.")
                .nth(1)
                .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
        })
        .collect();
    expired_osds.dedup();
    for osd in &expired_osds {
        let named = format!("osd.{osd}");
        if !expired_events.iter().any(|e| e.contains(&named)) {
            findings.push(format!(
                "noout on {named} expired (CephGate said so) but no NooutExpired event names it: \
                 {expired_events:?}"
            ));
        }
    }
    Ok((expired_osds, expired_events))
}
