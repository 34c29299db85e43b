//! Disk replacement keeping the OSD id, end to end against a real Ceph (the operator's
//! minimal-caps key, its OSD daemons run by the bridge for KWOK's pods), 4 hosts × 1 OSD, a
//! pool of size 3 / min_size 2 with objects, a writer running:
//!
//! - a disk that fails (daemon killed, data wiped): `kubectl ceph-osd replace` drains what
//!   Ceph can still recover, destroys the id (same host, same CRUSH weight), keeps the pod
//!   away until the new disk is confirmed; a prepare that fails leaves the id destroyed until a
//!   second confirmation; the new disk comes up with the same id; every PG maps exactly where
//!   it did before the failure;
//! - a planned swap (the disk still readable), asked by annotation, the operator killed in
//!   Draining and in AwaitingDisk: nothing stops before Ceph says no PG needs the OSD, nothing
//!   repeated, and no PG that never lived on the OSD moves at any time.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::replacement::ReplacementPhase;
use ceph_osd_operator::crd::CephOsdStatus;
use ceph_osd_operator::{labels, OsdKey};
use kube::api::{Patch, PatchParams};
use kube::ResourceExt;
use molecule_like_tests::ceph::CephCluster;
use molecule_like_tests::journeys::bridge::BridgeEventKind;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::plugin::kubectl_ceph_osd;
use molecule_like_tests::journeys::scenario::hold;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::recording::ceph::{CephRecording, Observed};
use serde_json::{json, Value};

const HOSTS: [&str; 4] = ["ceph-a", "ceph-b", "ceph-c", "ceph-d"];

/// Each PG's up set, from `pg dump pgs_brief`.
async fn up_sets(cluster: &CephCluster) -> anyhow::Result<BTreeMap<String, Vec<u64>>> {
    let dump = cluster.cli_json(&["pg", "dump", "pgs_brief"]).await?;
    let pgs = match &dump {
        Value::Array(pgs) => pgs.clone(),
        other => other["pg_stats"].as_array().cloned().unwrap_or_default(),
    };
    anyhow::ensure!(!pgs.is_empty(), "no PG in `pg dump pgs_brief`: {dump}");
    Ok(pgs
        .iter()
        .filter_map(|pg| {
            let up = pg["up"]
                .as_array()?
                .iter()
                .filter_map(Value::as_u64)
                .collect();
            Some((pg["pgid"].as_str()?.to_owned(), up))
        })
        .collect())
}

/// 4 hosts × 1 OSD converged, the gate idle, the mgr's balancer off (only the replacement
/// moves data: the balancer may remap PGs of its own whenever the distribution changes): the
/// last disk in rollout order, its OSD id, and each PG's up set.
async fn four_hosts(
    name: &str,
) -> anyhow::Result<(Gated, OsdKey, u32, BTreeMap<String, Vec<u64>>)> {
    let options = GatedOptions {
        hosts: &HOSTS,
        expect_idle: true,
        ..GatedOptions::default()
    };
    let g = Gated::up_with(name, &options).await?;
    let (key, id) = g.last_in_rollout_order();
    g.cluster.cli(&["balancer", "off"]).await?;
    let before = up_sets(&g.cluster).await?;
    Ok((g, key, id, before))
}

/// OSD `id` in `ceph osd tree`: its host and CRUSH weight, and whether it is destroyed.
async fn in_tree(cluster: &CephCluster, id: u32) -> anyhow::Result<(String, f64, bool)> {
    let tree = cluster.cli_json(&["osd", "tree"]).await?;
    let nodes = tree["nodes"].as_array().cloned().unwrap_or_default();
    let osd = (nodes.iter())
        .find(|n| n["id"].as_i64() == Some(i64::from(id)))
        .ok_or_else(|| anyhow::anyhow!("osd.{id} is not in the tree: {tree}"))?;
    let host = (nodes.iter())
        .find(|n| {
            n["type"] == "host"
                && (n["children"].as_array())
                    .is_some_and(|c| c.iter().any(|c| c.as_i64() == Some(i64::from(id))))
        })
        .and_then(|h| h["name"].as_str())
        .unwrap_or("none")
        .to_owned();
    let weight = osd["crush_weight"].as_f64().unwrap_or(-1.0);
    Ok((host, weight, osd["status"] == "destroyed"))
}

/// Objects written one after another into the test pool while the replacement runs.
struct Writer {
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Writer {
    fn start(cluster: &CephCluster) -> Self {
        let (stop, written) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let (conf, keyring) = (cluster.conf(), cluster.keyring("client.admin"));
        let (stopping, counting) = (Arc::clone(&stop), Arc::clone(&written));
        let task = tokio::spawn(async move {
            let payload = std::env::temp_dir().join("ceph-replacement-object");
            std::fs::write(&payload, vec![7_u8; 64 * 1024])?;
            while !stopping.load(Ordering::Relaxed) {
                let n = counting.load(Ordering::Relaxed);
                let out = tokio::process::Command::new("rados")
                    .arg("-c")
                    .arg(&conf)
                    .arg("-k")
                    .arg(&keyring)
                    .args(["--id", "admin", "-p", "test", "put", &format!("w-{n}")])
                    .arg(&payload)
                    .output()
                    .await?;
                anyhow::ensure!(
                    out.status.success(),
                    "write w-{n} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                counting.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Ok(())
        });
        Self {
            stop,
            written,
            task,
        }
    }

    /// Stops it; the objects written (every write succeeded).
    async fn stop(self) -> anyhow::Result<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await??;
        Ok(self.written.load(Ordering::Relaxed))
    }
}

/// The replacement of `key` in the status.
fn replacement_of<'a>(
    status: &'a CephOsdStatus,
    key: &OsdKey,
) -> Option<&'a ceph_osd_operator::crd::replacement::Replacement> {
    let key = key.to_string();
    status.replacements.iter().find(|r| r.key == key)
}

/// The phases of one replacement as the status showed them, each with when it was first seen.
#[derive(Default)]
struct PhaseTimes {
    seen: Vec<(ReplacementPhase, Duration)>,
}

impl PhaseTimes {
    /// Waits until `key`'s replacement is in `phase`, noting each phase on the way.
    async fn wait(
        &mut self,
        g: &Gated,
        key: &OsdKey,
        phase: ReplacementPhase,
        timeout: Duration,
    ) -> anyhow::Result<CephOsdStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            g.s.check_operator_alive()?;
            let status = g.s.cr_status(CR).await?.unwrap_or_default();
            if let Some(r) = replacement_of(&status, key) {
                if self.seen.last().is_none_or(|(p, _)| *p != r.phase) {
                    self.seen.push((r.phase, g.ceph.elapsed()));
                }
                if r.phase == phase {
                    return Ok(status);
                }
                anyhow::ensure!(
                    r.phase != ReplacementPhase::Refused,
                    "refused: {}",
                    r.message
                );
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{key} not {phase} after {timeout:?}: {:?}\n{}",
                replacement_of(&status, key),
                g.gate.render()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Seconds from each phase to the next.
    fn spans(&self, end: Duration) -> Vec<(String, Duration)> {
        let ends = self.seen.iter().skip(1).map(|(_, at)| *at).chain([end]);
        (self.seen.iter().zip(ends))
            .map(|((phase, at), next)| (phase.to_string(), next.saturating_sub(*at)))
            .collect()
    }
}

fn milestones(title: String, phases: &PhaseTimes, end: Duration) -> Milestones {
    let mut milestones = Milestones::new(title);
    for (phase, took) in phases.spans(end) {
        milestones.span(phase, took);
    }
    milestones
}

/// `kubectl ceph-osd replace CR KEY ARGS…`: its exit code and output.
async fn replace(g: &Gated, key: &OsdKey, args: &[&str]) -> anyhow::Result<(i32, String)> {
    let key = key.to_string();
    let mut all = vec!["replace", CR, key.as_str()];
    all.extend_from_slice(args);
    let (code, out, err) = kubectl_ceph_osd(&g.s, &all).await?;
    Ok((code, format!("{out}{err}")))
}

/// No pod of `key` for `duration`.
async fn no_pod_of(g: &Gated, key: &OsdKey, duration: Duration) -> anyhow::Result<()> {
    let data = key.data.clone();
    hold(duration, || async {
        for p in g.s.owned_pods(CR).await? {
            let on = p.annotations().get(labels::HOST) == Some(&key.host)
                && p.annotations().get(labels::DATA) == Some(&data);
            anyhow::ensure!(!on, "pod {} runs on {key}'s old disk", p.name_any());
        }
        Ok(())
    })
    .await
}

/// The preview: the OSD, its host and device, what moves; nothing written.
async fn dry_run(g: &Gated, key: &OsdKey, id: u32) -> anyhow::Result<()> {
    let conf = g.cluster.conf();
    let keyring = g.cluster.keyring("client.admin");
    let args = [
        "--dry-run",
        "--ceph-conf",
        conf.to_str().unwrap(),
        "--ceph-id",
        "admin",
        "--ceph-keyring",
        keyring.to_str().unwrap(),
    ];
    let (code, out) = replace(g, key, &args).await?;
    anyhow::ensure!(code == 0, "dry run: exit {code}: {out}");
    for words in [
        format!("osd.{id}"),
        key.host.clone(),
        " PGs, out and back".into(),
    ] {
        anyhow::ensure!(out.contains(&words), "dry run lacks {words:?}: {out}");
    }
    let status = g.s.cr_status(CR).await?;
    anyhow::ensure!(
        status.is_some_and(|s| s.replacements.is_empty()),
        "a dry run wrote nothing"
    );
    Ok(())
}

/// The first prepare fails: the id stays destroyed, no pod comes back on its own.
async fn prepare_fails_once(
    g: &Gated,
    key: &OsdKey,
    id: u32,
    phases: &mut PhaseTimes,
) -> anyhow::Result<()> {
    g.bridge.fail_prepare(key);
    let (code, out) = replace(g, key, &["--disk-swapped"]).await?;
    anyhow::ensure!(code == 0, "--disk-swapped: exit {code}: {out}");
    let status = phases
        .wait(
            g,
            key,
            ReplacementPhase::PrepareFailed,
            Duration::from_mins(2),
        )
        .await?;
    let message = &replacement_of(&status, key).unwrap().message;
    anyhow::ensure!(
        message.contains("the prepare failed") && message.contains("the prepare step failed"),
        "{message}"
    );
    anyhow::ensure!(
        in_tree(&g.cluster, id).await?.2,
        "osd.{id} not destroyed any more"
    );
    no_pod_of(g, key, Duration::from_secs(3)).await
}

/// The bridge prepared the new disk once, after one prepare that failed.
fn one_failed_prepare_then_one_done(g: &Gated) -> anyhow::Result<()> {
    let events = g.bridge.events();
    let count =
        |kind: fn(&BridgeEventKind) -> bool| events.iter().filter(|e| kind(&e.kind)).count();
    let prepared = count(|k| matches!(k, BridgeEventKind::Prepared));
    let refused = count(|k| matches!(k, BridgeEventKind::PrepareFailed { .. }));
    anyhow::ensure!(
        (prepared, refused) == (1, 1),
        "prepares: {prepared} done, {refused} failed"
    );
    Ok(())
}

/// The disk of the last host fails; `replace` drains what Ceph can recover, destroys the id
/// keeping its place and weight, waits for the new disk (a failed prepare retried on a second
/// confirmation) and brings it up with the same id: every PG maps where it did before.
#[tokio::test]
async fn a_failed_disk_is_replaced_with_its_id_and_every_pg_maps_back() -> anyhow::Result<()> {
    let (g, key, id, before) = four_hosts("cephrepl-failed").await?;
    let (host, weight, _) = in_tree(&g.cluster, id).await?;
    let writer = Writer::start(&g.cluster);
    let from = g.ceph.elapsed();

    g.bridge.fail_disk(&key);
    g.ceph
        .wait_until("the failed OSD down", Duration::from_mins(1), |v| {
            v.osdmap
                .as_ref()
                .is_some_and(|(_, m)| m.osd(id).is_some_and(|o| !o.up))
        })
        .await?;
    let failed_at = g.ceph.elapsed();

    dry_run(&g, &key, id).await?;

    let (code, out) = replace(&g, &key, &[]).await?;
    anyhow::ensure!(code == 0, "replace: exit {code}: {out}");
    // Too early to confirm a disk: refused with exit 2.
    let (code, out) = replace(&g, &key, &["--disk-swapped"]).await?;
    anyhow::ensure!(code == 2, "an early --disk-swapped: exit {code}: {out}");

    let mut phases = PhaseTimes::default();
    phases
        .wait(
            &g,
            &key,
            ReplacementPhase::AwaitingDisk,
            Duration::from_mins(4),
        )
        .await?;
    let (host_now, weight_now, destroyed) = in_tree(&g.cluster, id).await?;
    anyhow::ensure!(
        destroyed && host_now == host && (weight_now - weight).abs() < 1e-9,
        "osd.{id} after the destroy: host {host_now} (was {host}), weight {weight_now} (was \
         {weight}), destroyed {destroyed}"
    );
    no_pod_of(&g, &key, Duration::from_secs(3)).await?;

    prepare_fails_once(&g, &key, id, &mut phases).await?;

    // Confirmed again: prepared with the same id, up, data back, done.
    let (code, out) = replace(&g, &key, &["--disk-swapped"]).await?;
    anyhow::ensure!(code == 0, "second --disk-swapped: exit {code}: {out}");
    phases
        .wait(&g, &key, ReplacementPhase::Done, Duration::from_mins(4))
        .await?;
    let done_at = g.ceph.elapsed();
    let written = writer.stop().await?;

    let after = up_sets(&g.cluster).await?;
    let moved: Vec<&String> = (before.iter())
        .filter(|(pg, up)| after.get(*pg) != Some(up))
        .map(|(pg, _)| pg)
        .collect();
    let (host_after, weight_after, destroyed_after) = in_tree(&g.cluster, id).await?;
    let recording = g.ceph.recording();
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    let changes: Vec<String> = (moved.iter().take(5))
        .map(|pg| format!("{pg}: {:?} → {:?}", before[*pg], after.get(*pg)))
        .collect();
    anyhow::ensure!(
        moved.is_empty() && before.len() == after.len(),
        "{} of {} PGs map elsewhere after the replacement ({changes:?}; osd.{id} on {host_after} \
         weight {weight_after}, was {host} {weight})\n{report}",
        moved.len(),
        before.len()
    );
    anyhow::ensure!(
        host_after == host && (weight_after - weight).abs() < 1e-9 && !destroyed_after,
        "osd.{id} at the end: host {host_after}, weight {weight_after}, destroyed \
         {destroyed_after}"
    );
    // Beyond the failure itself, no host down and no PG below min_size.
    recording.check_hosts_down_at_most(1, from).map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    one_failed_prepare_then_one_done(&g)?;
    g.s.assert_one_pod_per_key().await?;
    milestones(
        format!("failed disk of osd.{id} replaced (4 hosts, size 3)"),
        &phases,
        done_at,
    )
    .span("failure to Done", done_at.saturating_sub(failed_at))
    .figure(
        "PGs mapped elsewhere after",
        format!("{} of {}", moved.len(), before.len()),
    )
    .figure("objects written meanwhile", written)
    .section("records", &report)
    .print();
    g.down().await
}

/// In Ceph's recorded view from `from`: OSD `id` down only after it was out and after a PG
/// sample all clean with none on it; and the PGs that never lived on it (all but `had_it`)
/// kept the acting sets they had `before` at every sample. Returns those that did not.
fn stopped_once_drained_and_moved_only_its_pgs(
    recording: &CephRecording,
    from: Duration,
    id: u32,
    before: &BTreeMap<String, Vec<u64>>,
    had_it: &[String],
) -> anyhow::Result<Vec<String>> {
    let (mut out_at, mut clean_at, mut down_at) = (None, None, None);
    let mut others_moved: Vec<String> = Vec::new();
    for event in recording.events.iter().filter(|e| e.at >= from) {
        match &event.observed {
            Observed::OsdMap(m) => {
                let osd = m.osd(id);
                if out_at.is_none() && osd.is_some_and(|o| !o.in_) {
                    out_at = Some(event.at);
                }
                if down_at.is_none() && osd.is_some_and(|o| !o.up) {
                    down_at = Some(event.at);
                }
            }
            Observed::Pgs(p) => {
                let without = p.pgs.iter().all(|pg| !pg.acting.contains(&id));
                if out_at.is_some() && clean_at.is_none() && p.all_clean() && without {
                    clean_at = Some(event.at);
                }
                for pg in p.pgs.iter().filter(|pg| !had_it.contains(&pg.pgid)) {
                    let kept = before.get(&pg.pgid).is_some_and(|up| {
                        up.iter()
                            .copied()
                            .eq(pg.acting.iter().map(|a| u64::from(*a)))
                    });
                    if !kept && !others_moved.contains(&pg.pgid) {
                        others_moved.push(pg.pgid.clone());
                    }
                }
            }
            Observed::Error(_) => {}
        }
    }
    let (Some(out_at), Some(clean_at), Some(down_at)) = (out_at, clean_at, down_at) else {
        anyhow::bail!("out {out_at:?}, clean without it {clean_at:?}, down {down_at:?}");
    };
    anyhow::ensure!(
        out_at < clean_at && clean_at < down_at,
        "osd.{id} out at {out_at:?}, PGs clean without it at {clean_at:?}, down at {down_at:?}"
    );
    Ok(others_moved)
}

/// A planned swap, asked by annotation: the OSD's daemon stops only once Ceph says no PG needs
/// it; the operator killed in Draining and in AwaitingDisk resumes without repeating a destroy
/// or bringing a pod back; no PG that never lived on the OSD moves at any time.
#[tokio::test]
async fn a_planned_swap_moves_only_its_pgs_and_survives_restarts() -> anyhow::Result<()> {
    let (mut g, key, id, before) = four_hosts("cephrepl-planned").await?;
    let from = g.ceph.elapsed();
    let crs = g.s.crs.clone();
    let annotate = |value: String| {
        let crs = crs.clone();
        async move {
            let patch = json!({"metadata": {"annotations": {labels::REPLACE: value}}});
            crs.patch(CR, &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    annotate(key.to_string()).await?;
    let mut phases = PhaseTimes::default();
    phases
        .wait(&g, &key, ReplacementPhase::Draining, Duration::from_mins(1))
        .await?;
    g.restart_operator()?;
    phases
        .wait(
            &g,
            &key,
            ReplacementPhase::AwaitingDisk,
            Duration::from_mins(4),
        )
        .await?;
    let destroys = |log: &str| log.matches("destroyed for a disk replacement").count();
    anyhow::ensure!(destroys(&g.s.operator_log()) == 1, "one destroy");
    g.restart_operator()?;
    no_pod_of(&g, &key, Duration::from_secs(5)).await?;
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(
        replacement_of(&status, &key).is_some_and(|r| r.phase == ReplacementPhase::AwaitingDisk),
        "after the restart: {:?}",
        replacement_of(&status, &key)
    );
    anyhow::ensure!(destroys(&g.s.operator_log()) == 1, "no second destroy");

    // The old disk out, a blank one in; confirmed in the annotation.
    g.bridge.fail_disk(&key);
    annotate(format!("{key}=swapped")).await?;
    phases
        .wait(&g, &key, ReplacementPhase::Done, Duration::from_mins(4))
        .await?;
    let done_at = g.ceph.elapsed();

    let recording = g.ceph.recording();
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    recording.check_hosts_down_at_most(1, from).map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    let had_it: Vec<String> = (before.iter())
        .filter(|(_, up)| up.contains(&u64::from(id)))
        .map(|(pg, _)| pg.clone())
        .collect();
    let others_moved =
        stopped_once_drained_and_moved_only_its_pgs(&recording, from, id, &before, &had_it)
            .map_err(fail)?;
    let after = up_sets(&g.cluster).await?;
    anyhow::ensure!(
        after == before,
        "PGs map elsewhere after the swap\n{report}"
    );
    g.s.assert_one_pod_per_key().await?;
    milestones(
        format!("planned swap of osd.{id} (4 hosts, size 3)"),
        &phases,
        done_at,
    )
    .figure(
        "PGs that lived on it / moved otherwise",
        format!("{} / {}", had_it.len(), others_moved.len()),
    )
    .section("records", &report)
    .print();
    g.down().await
}
