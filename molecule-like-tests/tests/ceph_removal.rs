//! Removal as Ceph expects it, end to end against a real Ceph (the operator's minimal-caps
//! key, its OSD daemons run by the bridge for KWOK's pods): a host removed from the spec is
//! drained before its pod stops — marked out, its data moved (every PG clean without it),
//! then its pod deleted, with no `noout` — and stays down and out; where Ceph cannot place
//! the data elsewhere nothing stops and `CephGate` says why with Ceph's numbers; a host put
//! back before its pod stopped is marked in again.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::CephStep;
use ceph_osd_operator::OsdKey;
use kube::ResourceExt;
use molecule_like_tests::ceph::OsdMap;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::{hold, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{storage, CR};
use molecule_like_tests::recording::ceph::{CephRecording, Observed};
use serde_json::json;

/// The osdmaps recorded from `from` on, in order.
fn osdmaps(recording: &CephRecording, from: Duration) -> Vec<(Duration, &OsdMap)> {
    recording
        .events
        .iter()
        .filter(|e| e.at >= from)
        .filter_map(|e| match &e.observed {
            Observed::OsdMap(m) => Some((e.at, m)),
            _ => None,
        })
        .collect()
}

/// The hosts of `g` without the last one, and the last one's key and OSD id.
fn without_last(g: &Gated) -> (Vec<String>, OsdKey, u32) {
    let (key, id) = g.last_in_rollout_order();
    let kept: BTreeSet<String> = g
        .want
        .iter()
        .filter(|k| k.host != key.host)
        .map(|k| k.host.clone())
        .collect();
    (kept.into_iter().collect(), key, id)
}

/// 4 hosts × 1 OSD, pool size 3: the last host removed from the spec is marked out, its data
/// moves (every PG clean, none on it), then its pod stops; no `noout` at any time, no step
/// left open, the OSD down and out at the end; a template change then rolls the rest.
#[tokio::test]
async fn a_host_removed_on_four_hosts_is_drained_then_stopped() -> anyhow::Result<()> {
    let g = Gated::up_with(
        "cephrm-four",
        &GatedOptions {
            hosts: &["ceph-a", "ceph-b", "ceph-c", "ceph-d"],
            ..GatedOptions::default()
        },
    )
    .await?;
    let (kept, key, id) = without_last(&g);
    let pod = g.converged.pods[&key].name_any();
    let want: BTreeSet<OsdKey> = g.want.iter().filter(|k| **k != key).cloned().collect();

    let from = g.ceph.elapsed();
    let t_remove = Instant::now();
    g.set_hosts(&kept, &want).await?;
    let pod_gone = t_remove.elapsed();
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let gate_idle = t_remove.elapsed();
    g.s.assert_one_pod_per_key().await?;

    let recording = g.ceph.recording();
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    recording.check_hosts_down_at_most(1, from).map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;

    // Ceph's view: out first, with its daemon up; no noout at any time.
    let (out_at, down_at) = out_before_down(&recording, from, id).map_err(fail)?;
    // The pod watch: the pod deleted only after the out, and once Ceph's PGs were all clean
    // with none of them on the leaving OSD.
    let (deleted_at, pgs_at) = deleted_once_drained(&g, &pod, id, out_at).map_err(fail)?;
    // The operator's record: a drain step on exactly this OSD, without noout, then none.
    let drain_events = check_drain_record(&g, id).await.map_err(fail)?;
    // A later rollout proceeds, one host at a time.
    let rolled = roll_the_rest(&g, &want).await?;
    let since_change = |at: Duration| at.saturating_sub(from);
    Milestones::new(format!(
        "host {} removed (osd.{id}, 4 hosts, size 3)",
        key.host
    ))
    .span("out after the spec change", since_change(out_at))
    .span(
        "pod deleted after the spec change",
        since_change(deleted_at),
    )
    .span(
        "PGs all clean without it after the spec change",
        since_change(pgs_at),
    )
    .span("down after the spec change", since_change(down_at))
    .span("pods converged", pod_gone)
    .span("gate idle", gate_idle)
    .span("then a rollout of the 3 hosts left", rolled)
    .figure("drain events", format!("{drain_events:?}"))
    .section("records", &report)
    .print();
    g.down().await
}

/// In Ceph's view from `from`: no `noout` at any time, OSD `id` out before it is down, down
/// and out at the end (never purged). Returns when it was out and when down.
fn out_before_down(
    recording: &CephRecording,
    from: Duration,
    id: u32,
) -> anyhow::Result<(Duration, Duration)> {
    let maps = osdmaps(recording, from);
    for (at, map) in &maps {
        let noout = map.noout();
        anyhow::ensure!(
            noout.is_empty(),
            "noout on {noout:?} at {:.2}s",
            at.as_secs_f64()
        );
    }
    let out_at = maps
        .iter()
        .find(|(_, m)| m.osd(id).is_some_and(|o| !o.in_))
        .map(|(at, _)| *at)
        .ok_or_else(|| anyhow::anyhow!("osd.{id} was never out"))?;
    let down_at = maps
        .iter()
        .find(|(_, m)| m.osd(id).is_some_and(|o| !o.up))
        .map(|(at, _)| *at)
        .ok_or_else(|| anyhow::anyhow!("osd.{id} never went down"))?;
    anyhow::ensure!(
        out_at < down_at,
        "osd.{id} down at {:.2}s before out at {:.2}s",
        down_at.as_secs_f64(),
        out_at.as_secs_f64()
    );
    let (_, last) = maps.last().expect("an osdmap");
    let osd = last
        .osd(id)
        .expect("the OSD stays in the osdmap: purging is an admin's act");
    anyhow::ensure!(!osd.up && !osd.in_, "osd.{id} at the end: {osd:?}");

    Ok((out_at, down_at))
}

/// In the pod watch: pod `pod` deleted only after OSD `id` was out (`out_at`), and once
/// Ceph's PGs were all clean with none of them on it. Returns when it was deleted and the
/// moment of that last PG sample.
fn deleted_once_drained(
    g: &Gated,
    pod: &str,
    id: u32,
    out_at: Duration,
) -> anyhow::Result<(Duration, Duration)> {
    let recording = g.ceph.recording();
    let timeline = g.s.recorder()?.timeline();
    let events = g.s.recorder()?.events();
    let deleted_seq = timeline
        .get(pod)?
        .deletion_started
        .expect("the pod was deleted");
    let deleted_at = events[deleted_seq].at;
    // The bridge stops the daemon when its own watch sees the deletion, which may come a few
    // milliseconds before the recorder's: the earlier of the two is when the OSD stopped.
    let daemons = g.bridge.daemons_of(id, &[pod])?;
    let stopping = daemons[0].stopping.expect("the daemon was stopped");
    let stopped_at = deleted_at.min(stopping);
    anyhow::ensure!(
        stopped_at > out_at,
        "pod {pod} deleted at {:.2}s (its daemon stopping at {:.2}s), osd.{id} out at {:.2}s",
        deleted_at.as_secs_f64(),
        stopping.as_secs_f64(),
        out_at.as_secs_f64()
    );
    let pgs_before = recording
        .events
        .iter()
        .filter(|e| e.at <= stopped_at)
        .filter_map(|e| match &e.observed {
            Observed::Pgs(p) => Some((e.at, p)),
            _ => None,
        })
        .next_back();
    let (pgs_at, pgs) = pgs_before.ok_or_else(|| anyhow::anyhow!("no PG sample"))?;
    anyhow::ensure!(
        pgs.all_clean() && pgs.pgs.iter().all(|p| !p.acting.contains(&id)),
        "the last PG sample before the OSD stopped ({:.2}s) is not clean without osd.{id}: \
         {:?}",
        pgs_at.as_secs_f64(),
        pgs.by_state
    );

    Ok((deleted_at, pgs_at))
}

/// The operator's record: a drain step on exactly OSD `id`, without `noout`, none open at the
/// end, a `Drain` event naming `ceph osd purge`. Returns the `Drain` events' notes.
async fn check_drain_record(g: &Gated, id: u32) -> anyhow::Result<Vec<String>> {
    let samples = g.gate.samples();
    let drained: Vec<_> = samples
        .iter()
        .filter(|s| s.step.as_ref().is_some_and(|(_, ids)| *ids == [id]))
        .collect();
    anyhow::ensure!(!drained.is_empty(), "no step on osd.{id}");
    anyhow::ensure!(
        drained.iter().all(|s| s.noout.is_empty()),
        "noout in a drain step on osd.{id}"
    );
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(status.ceph_step.is_none(), "{status:?}");
    let drain_events: Vec<String> =
        g.s.cr_events(CR)
            .await?
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("Drain"))
            .filter_map(|e| e.note)
            .collect();
    anyhow::ensure!(
        drain_events.iter().any(|n| n.contains("ceph osd purge")),
        "{drain_events:?}"
    );

    Ok(drain_events)
}

/// A template change on the hosts left (`want`): rolled one host down at a time besides the
/// drained OSD's (down and out: it holds no PG), no PG unavailable, no `noout` left. Returns
/// how long it took.
async fn roll_the_rest(g: &Gated, want: &BTreeSet<OsdKey>) -> anyhow::Result<Duration> {
    let from_roll = g.ceph.elapsed();
    let t_roll = Instant::now();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    g.s.wait_converged(CR, want, &hash, ROLLOUT).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let rolled = t_roll.elapsed();
    // One host down at a time besides the drained OSD's (down and out: it holds no PG).
    let recording = g.ceph.recording();
    let roll_fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{}", g.report(from_roll));
    recording
        .check_in_hosts_down_at_most(1, from_roll)
        .map_err(roll_fail)?;
    recording
        .check_pgs_never_unavailable(from_roll)
        .map_err(roll_fail)?;
    recording.check_no_noout_at_end().map_err(roll_fail)?;
    Ok(rolled)
}

/// 3 hosts × 1 OSD, pool size 3: the last host removed from the spec is marked out, but Ceph
/// cannot place a third copy elsewhere: its pod keeps running, its OSD up, `CephGate` False
/// `CephDrainBlocked` with Ceph's numbers; put back in the spec, it is marked in again and the
/// gate goes idle.
#[tokio::test]
async fn a_host_removed_on_three_hosts_waits_and_says_why() -> anyhow::Result<()> {
    let mut g = Gated::up("cephrm-three").await?;
    let (kept, key, id) = without_last(&g);
    let pod = g.converged.pods[&key].name_any();
    let from = g.ceph.elapsed();
    g.s.patch_spec(CR, json!({"storage": storage(&kept, &["/dev/sdb"])}))
        .await?;
    let osd = format!("osd.{id}");
    g.wait_gate(
        "CephGate False CephDrainBlocked",
        Duration::from_mins(1),
        |status| {
            status.conditions.iter().any(|c| {
                c.type_ == "CephGate"
                    && c.status == "False"
                    && c.reason == "CephDrainBlocked"
                    && c.message.contains(&osd)
            })
        },
    )
    .await?;
    let (_, _, message) = g.gate_condition().await?.expect("CephGate");
    anyhow::ensure!(
        message.contains("PGs still map to") && message.contains("cannot place"),
        "{message}"
    );
    // Nothing stops: the pod stays, its OSD up (and out) in Ceph.
    hold(Duration::from_secs(5), || async {
        let pods = g.s.owned_pods(CR).await?;
        anyhow::ensure!(
            pods.iter()
                .any(|p| p.name_any() == pod && p.metadata.deletion_timestamp.is_none()),
            "pod {pod} went\n{}",
            g.gate.render()
        );
        Ok(())
    })
    .await?;
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    let step = status.ceph_step.clone().expect("the drain stays open");
    anyhow::ensure!(step.drain.is_some() && step.noout.is_empty(), "{step:?}");
    let recording = g.ceph.recording();
    let report = g.report(from);
    let maps = osdmaps(&recording, from);
    let (_, last) = maps.last().expect("an osdmap");
    let seen = last.osd(id).expect("the OSD");
    anyhow::ensure!(seen.up && !seen.in_, "{seen:?}\n{report}");
    anyhow::ensure!(maps.iter().all(|(_, m)| m.noout().is_empty()), "{report}");
    recording.check_pgs_never_unavailable(from)?;

    // A new leader finishes the drain from the status: it looks at the drain again
    // (`safe-to-destroy` in its log), nothing stops, the step stays as recorded.
    new_leader_keeps_the_drain(&mut g, &pod, &step).await?;

    // Back in the spec before its pod stopped: marked in (by the new leader, from the ids
    // the status says it marked out), the drain given up.
    let all: Vec<String> = g.want.iter().map(|k| k.host.clone()).collect();
    g.s.patch_spec(CR, json!({"storage": storage(&all, &["/dev/sdb"])}))
        .await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let latest = g.ceph.latest();
    let (_, map) = latest.osdmap.as_ref().expect("an osdmap");
    let back = map.osd(id).expect("the OSD");
    anyhow::ensure!(back.up && back.in_, "{back:?}\n{}", g.report(from));
    g.cluster.wait_clean(Duration::from_mins(1)).await?;
    g.s.assert_one_pod_per_key().await?;
    println!(
        "==== host {} removed on 3 hosts, size 3: CephGate False CephDrainBlocked: {message}\n\
         put back: osd.{id} in again, gate idle\n{}",
        key.host,
        g.report(from)
    );
    g.down().await
}

/// The operator restarted (as `Gated` starts it) while a drain is open: the new leader looks at
/// the drain again (`safe-to-destroy` in its log), `pod` stays, the step stays as recorded.
async fn new_leader_keeps_the_drain(
    g: &mut Gated,
    pod: &str,
    step: &CephStep,
) -> anyhow::Result<()> {
    let looks = |log: &str| log.matches("osd safe-to-destroy").count();
    let before = looks(&g.s.operator_log());
    g.restart_operator()?;
    g.s.wait_until(
        "the new leader looks at the drain",
        Duration::from_mins(1),
        || async { Ok((looks(&g.s.operator_log()) > before).then_some(())) },
    )
    .await?;
    hold(Duration::from_secs(3), || async {
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        anyhow::ensure!(status.ceph_step.as_ref() == Some(step), "{status:?}");
        let pods = g.s.owned_pods(CR).await?;
        anyhow::ensure!(
            pods.iter()
                .any(|p| p.name_any() == pod && p.metadata.deletion_timestamp.is_none()),
            "pod {pod} went after the restart"
        );
        Ok(())
    })
    .await?;
    Ok(())
}
