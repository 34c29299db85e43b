//! A Ceph release upgrade, Pacific → Reef, on real daemons: 3 hosts × 1 OSD run Pacific, the
//! CephOSD (with `spec.prePull`) is given the Reef image while the monitor and the manager run
//! Pacific, and `kubectl ceph-osd finalize --release reef` is asked at once. Ceph's release
//! rules refuse the step before anything stops: `CephGate` False `MonitorsOlder`, a Warning
//! event, no pod deleted, no daemon restarted; finalize waits (`Finalized` False
//! `MonitorsOlder`). Once the monitor and the manager are upgraded as an admin upgrades them
//! (restarted from the Reef root), the same CephOSD rolls on its own, host by host: each OSD
//! boots 18.2.7 on the data Pacific made, every step on clean PGs, one host down at most; then
//! `require_osd_release` becomes reef, and the template back to the Pacific image is refused
//! (`Downgrade`) with nothing stopped. `status.releases` follows: the target reef with
//! rollback possible before anything restarts; every OSD on reef, required, no rollback
//! after finalize.
//!
//! Beside it, an image whose OSD cannot start: the first host's OSD never comes back, no
//! second host is touched, `noout` stays on exactly that OSD; the image fixed, the rollout
//! goes on from there. And a new daemon that crashes and comes back: Ceph's crash report
//! halts the rollout, with every PG clean, until the report is archived.
//!
//! Needs the local control plane, a built operator, Ceph's daemons and Reef's root
//! (`molecule-like-tests/ceph-release-root install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use ceph_osd_operator::crd::{CephOsd, ReleasesStatus};
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use molecule_like_tests::ceph::{OsdStart, Release};
use molecule_like_tests::journeys::bridge::BridgeEventKind;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::plugin::kubectl_ceph_osd;
use molecule_like_tests::journeys::scenario::ROLLOUT;
use molecule_like_tests::kubernetes::manifests::{hash_of, CR};
use serde_json::json;

const REEF_IMAGE: &str = "quay.io/ceph/ceph:v18.2.7";
const PACIFIC_IMAGE: &str = "quay.io/ceph/ceph:v16.2.15";
/// Its daemon never starts (the harness's bridge).
const BROKEN_IMAGE: &str = "quay.io/ceph/ceph:v16.2.15-broken";
/// How long a halted rollout is watched for a second host.
const HALTED_FOR: Duration = Duration::from_secs(40);
/// How long the refusal is watched for anything stopping.
const REFUSED_FOR: Duration = Duration::from_secs(8);

#[tokio::test]
async fn reef_is_refused_while_the_monitors_run_pacific_then_rolls_once_they_run_reef(
) -> anyhow::Result<()> {
    let options = GatedOptions {
        spec_patch: Some(json!({"prePull": {}})),
        ..GatedOptions::default()
    };
    let g = Gated::up_with("cephupgrade", &options).await?;
    let from = g.ceph.elapsed();
    preview_names_the_releases(&g).await?;
    let (hash, message) = refused_while_the_monitors_run_pacific(&g, from).await?;
    let rolled = rolled_once_the_monitors_run_reef(&g, from, &hash).await?;
    let (finalize_took, back) = finalized_and_the_way_back_refused(&g).await?;
    g.s.assert_one_pod_per_key().await?;
    eprintln!(
        "==== refused with {message:?}; after the monitor and manager upgrade the {} OSDs \
         rolled to Reef in {:.1}s; finalized {:.1}s after; back to Pacific: {back:?}",
        g.want.len(),
        rolled.as_secs_f64(),
        finalize_took.as_secs_f64()
    );
    Ok(())
}

/// `kubectl ceph-osd plan -f` of the Reef template says what is checked before the first stop.
async fn preview_names_the_releases(g: &Gated) -> anyhow::Result<()> {
    let mut next = g.s.crs.get(CR).await?;
    next.spec.pod_template["spec"]["containers"][0]["image"] = json!(REEF_IMAGE);
    let manifest = g.s.log_path.with_file_name("reef.json");
    std::fs::write(
        &manifest,
        serde_json::to_vec(&json!({
            "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
            "metadata": {"name": CR}, "spec": next.spec,
        }))?,
    )?;
    let manifest = manifest.to_string_lossy().into_owned();
    let (code, preview, said) = kubectl_ceph_osd(&g.s, &["plan", "-f", &manifest]).await?;
    ensure!(
        code == 0
            && preview.contains("→ quay.io/ceph/ceph:v18.2.7 (reef (18))")
            && preview.contains("pre-pull pods report"),
        "{code}: {preview}{said}"
    );
    Ok(())
}

/// The template to Reef while the monitor and the manager still run Pacific, finalize asked
/// at once: refused before anything stops, said; returns the template hash and the refusal.
async fn refused_while_the_monitors_run_pacific(
    g: &Gated,
    from: Duration,
) -> anyhow::Result<(String, String)> {
    let cr = set_image(g, REEF_IMAGE).await?;
    let hash = hash_of(&cr);
    let (code, said, _) = kubectl_ceph_osd(&g.s, &["finalize", CR, "--release", "reef"]).await?;
    ensure!(
        code == 0 && said.contains("once every OSD and monitor"),
        "{code}: {said}"
    );
    let (code, _, said) = kubectl_ceph_osd(&g.s, &["finalize", CR, "--release", "reeef"]).await?;
    ensure!(
        code == 2 && said.contains("not the name of a Ceph release"),
        "{code}: {said}"
    );
    let message = wait_gate_reason(g, "MonitorsOlder").await?;
    ensure!(
        message.contains("upgrade the monitors first") && message.contains("pacific"),
        "{message}"
    );
    tokio::time::sleep(REFUSED_FOR).await;
    ensure!(
        started_since(g, from) == 0,
        "a daemon was restarted while refused"
    );
    let pods = g.s.owned_pods(CR).await?;
    ensure!(
        pods.iter().all(|p| p.metadata.deletion_timestamp.is_none()),
        "a pod was deleted while refused"
    );
    let events = g.s.cr_events(CR).await?;
    ensure!(
        events.iter().any(|e| e.type_.as_deref() == Some("Warning")
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains("upgrade the monitors first"))),
        "no Warning says why"
    );
    let finalized = condition(g, "Finalized").await?;
    ensure!(
        finalized
            .as_ref()
            .is_some_and(|(s, r, _)| s == "False" && r == "MonitorsOlder"),
        "Finalized: {finalized:?}"
    );
    // Nothing restarted yet: the template can still go back.
    let pacific = BTreeMap::from([("pacific".to_owned(), osds(g))]);
    wait_releases(g, "the upgrade under way, rollback possible", |r| {
        r.target.as_deref() == Some("reef")
            && r.require_osd_release.as_deref() == Some("pacific")
            && r.running == pacific
            && r.rollback_possible == Some(true)
    })
    .await?;
    Ok((hash, message))
}

/// The admin upgrades the monitor, then the manager: the rollout starts by itself, host by
/// host, every OSD on Reef; returns how long it took.
async fn rolled_once_the_monitors_run_reef(
    g: &Gated,
    from: Duration,
    hash: &str,
) -> anyhow::Result<Duration> {
    let t_upgrade = Instant::now();
    g.cluster.restart_mon(Release::Reef).await?;
    g.cluster.restart_mgr(Release::Reef).await?;
    g.s.wait_converged(CR, &g.want, hash, ROLLOUT * 2).await?;
    let rolled = t_upgrade.elapsed();
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    g.cluster.wait_clean(Duration::from_mins(1)).await?;
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    g.ceph
        .recording()
        .check_one_host_at_a_time(from)
        .map_err(fail)?;
    g.check_pods_rolled_by_host().await.map_err(fail)?;
    g.bridge.check().map_err(fail)?;
    let started: Vec<Release> = (g.bridge.events().into_iter())
        .filter(|e| e.at > from)
        .filter_map(|e| match e.kind {
            BridgeEventKind::Started { release, .. } => Some(release),
            _ => None,
        })
        .collect();
    ensure!(
        started.len() == g.want.len() && started.iter().all(|r| *r == Release::Reef),
        "daemons started since the template changed: {started:?}"
    );
    let versions = g.cluster.cli_json(&["versions"]).await?;
    let osds = versions["osd"].as_object().context("versions.osd")?;
    ensure!(
        osds.len() == 1 && osds.keys().all(|v| v.contains("18.2.7")),
        "ceph versions: {versions}"
    );
    Ok(rolled)
}

/// Finalized once every OSD runs Reef: the flag raised, the way back refused with nothing
/// restarted; returns how long finalize took after the rollout and the refusal.
async fn finalized_and_the_way_back_refused(g: &Gated) -> anyhow::Result<(Duration, String)> {
    let t_finalize = Instant::now();
    g.s.wait_until("Finalized True", Duration::from_mins(1), || async {
        Ok(condition(g, "Finalized")
            .await?
            .filter(|(s, r, _)| s == "True" && r == "ReleaseRequired"))
    })
    .await?;
    let finalize_took = t_finalize.elapsed();
    let reef = BTreeMap::from([("reef".to_owned(), osds(g))]);
    wait_releases(g, "finalized, no rollback", |r| {
        r.require_osd_release.as_deref() == Some("reef")
            && r.running == reef
            && r.rollback_possible == Some(false)
    })
    .await?;
    let dump = g.cluster.cli_json(&["osd", "dump"]).await?;
    ensure!(
        dump["require_osd_release"] == "reef",
        "{}",
        dump["require_osd_release"]
    );
    let t_back = g.ceph.elapsed();
    set_image(g, PACIFIC_IMAGE).await?;
    let back = wait_gate_reason(g, "Downgrade").await?;
    ensure!(back.contains("require_osd_release reef"), "{back}");
    tokio::time::sleep(REFUSED_FOR).await;
    ensure!(
        started_since(g, t_back) == 0,
        "a daemon was restarted on the way back"
    );
    Ok((finalize_took, back))
}

#[tokio::test]
async fn an_image_whose_osd_cannot_start_halts_at_the_first_host() -> anyhow::Result<()> {
    let g = Gated::up("cephbroken").await?;
    let from = g.ceph.elapsed();
    let cr = set_image(&g, BROKEN_IMAGE).await?;
    let broken_hash = hash_of(&cr);
    let message =
        g.s.wait_until(
            "a step open on one host",
            Duration::from_mins(1),
            || async {
                Ok(g.gate_condition()
                    .await?
                    .filter(|(_, r, m)| r == "StepInProgress" && m.contains("is not up yet"))
                    .map(|(_, _, m)| m))
            },
        )
        .await?;
    tokio::time::sleep(HALTED_FOR).await;
    let map = g.cluster.osd_dump().await?;
    let down: Vec<u32> = map.osds.iter().filter(|o| !o.up).map(|o| o.id).collect();
    ensure!(down.len() == 1, "down: {down:?} ({message})");
    ensure!(
        map.noout() == [format!("osd.{}", down[0])],
        "noout on {:?}, the step's OSD is osd.{}",
        map.noout(),
        down[0]
    );
    let started = started_since(&g, from);
    ensure!(
        started == 0,
        "{started} daemon(s) started for a broken image"
    );
    let pods = g.s.owned_pods(CR).await?;
    let on_broken = (pods.iter())
        .filter(|p| p.annotations().get(labels::TEMPLATE_HASH) == Some(&broken_hash))
        .count();
    ensure!(on_broken == 1, "{on_broken} pods on the broken template");
    // The image fixed: the rollout goes on from there.
    let t_fix = Instant::now();
    let fixed = set_image(&g, PACIFIC_IMAGE).await?;
    converged_one_host_at_a_time(&g, &hash_of(&fixed), from).await?;
    let fixed_in = t_fix.elapsed();
    eprintln!(
        "==== a broken image: osd.{} stays down {}s, noout only on it, no second host \
         touched; the gate says {message:?}; the image fixed, every host rolled in {:.1}s",
        down[0],
        HALTED_FOR.as_secs(),
        fixed_in.as_secs_f64()
    );
    Ok(())
}

/// A new daemon that crashes halts the rollout at once, whatever the template change: the
/// first host's new OSD aborts (Ceph's handler writes its crash report, posted as the host's
/// `ceph-crash` posts it) and comes back; with every OSD up and every PG clean the rollout
/// still goes no further (`Stalled`, `CephGate` `OsdCrashed`, naming the OSD and the report)
/// until the report is archived; then it finishes, one host at a time.
#[tokio::test]
async fn a_new_daemon_that_crashed_halts_the_rollout_until_its_report_is_archived(
) -> anyhow::Result<()> {
    let g = Gated::up("cephcrash").await?;
    let from = g.ceph.elapsed();
    // The first host rolls alone: the partition holds the other two.
    g.s.patch_spec(CR, json!({"partition": 2})).await?;
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "crash"}}))
            .await?;
    let new_pod =
        g.s.wait_until(
            "the first host on the new template, held by the partition",
            Duration::from_mins(2),
            || async {
                let status = g.s.cr_status(CR).await?.unwrap_or_default();
                let held = (status.conditions.iter())
                    .any(|c| c.type_ == "Progressing" && c.reason == "Partitioned");
                let pods = g.s.owned_pods(CR).await?;
                let new: Vec<Pod> = (pods.into_iter())
                    .filter(|p| p.annotations().get(labels::TEMPLATE_HASH) == Some(&hash))
                    .collect();
                Ok((held && new.len() == 1).then(|| new[0].clone()))
            },
        )
        .await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let annotation = |name: &str| new_pod.annotations().get(name).cloned().unwrap_or_default();
    let key = OsdKey::new(annotation(labels::HOST), annotation(labels::DATA));
    let osd = *g.table.get(&key).context("the new pod's OSD")?;

    // Its daemon crashes, and comes back as its container would.
    let crash_ids = g.cluster.osd_crash(osd).await?;
    ensure!(crash_ids.len() == 1, "crash reports posted: {crash_ids:?}");
    let crash_id = &crash_ids[0];
    let node = new_pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    let (name, namespace) = (new_pod.name_any(), new_pod.namespace().unwrap_or_default());
    let start = OsdStart {
        host: &node,
        pod_name: Some(&name),
        pod_namespace: Some(&namespace),
        node_name: Some(&node),
        container_image: None,
        release: Release::Pacific,
    };
    g.cluster.osd_start(osd, &start).await?;
    g.cluster.wait_clean(Duration::from_mins(2)).await?;

    // The partition lifted: nothing more stops while the report is new.
    let halted_at = g.ceph.elapsed();
    g.s.patch_spec(CR, json!({"partition": null})).await?;
    let stalled =
        g.s.wait_until("Stalled OsdCrashed", Duration::from_mins(1), || async {
            let status = g.s.cr_status(CR).await?.unwrap_or_default();
            Ok((status.conditions.iter())
                .find(|c| c.type_ == "Stalled" && c.status == "True" && c.reason == "OsdCrashed")
                .map(|c| c.message.clone()))
        })
        .await?;
    let osd_name = format!("osd.{osd}");
    ensure!(
        stalled.contains(&format!("{osd_name} crashed")) && stalled.contains(crash_id.as_str()),
        "{stalled}"
    );
    let gate = wait_gate_reason(&g, "OsdCrashed").await?;
    ensure!(gate.contains(crash_id.as_str()), "{gate}");
    tokio::time::sleep(REFUSED_FOR).await;
    let stopped = stopped_since(&g, halted_at);
    ensure!(
        stopped == 0,
        "{stopped} daemon(s) stopped while {osd_name}'s crash is new: {stalled}"
    );

    // Archived: the rollout finishes.
    let t_archive = Instant::now();
    g.cluster.cli(&["crash", "archive", crash_id]).await?;
    converged_one_host_at_a_time(&g, &hash, from).await?;
    let finished_in = t_archive.elapsed();
    eprintln!(
        "==== a crashed new daemon: {osd_name} halted the rollout ({stalled:?}), nothing \
         stopped for {}s with every PG clean; archived, the other hosts rolled in {:.1}s",
        REFUSED_FOR.as_secs(),
        finished_in.as_secs_f64()
    );
    Ok(())
}

/// Waits until every pod runs the template `hash` and the gate is idle; Ceph's view since
/// `from` had one host down at a time.
async fn converged_one_host_at_a_time(g: &Gated, hash: &str, from: Duration) -> anyhow::Result<()> {
    g.s.wait_converged(CR, &g.want, hash, ROLLOUT).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    g.ceph
        .recording()
        .check_one_host_at_a_time(from)
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))
}

/// Sets the image of the template's first container; returns the CephOSD as stored.
async fn set_image(g: &Gated, image: &str) -> anyhow::Result<CephOsd> {
    let mut template = g.s.crs.get(CR).await?.spec.pod_template;
    template["spec"]["containers"][0]["image"] = json!(image);
    g.s.patch_spec(CR, json!({"podTemplate": template})).await
}

/// Waits until `CephGate` is False for `reason`; returns its message.
async fn wait_gate_reason(g: &Gated, reason: &str) -> anyhow::Result<String> {
    g.s.wait_until(
        &format!("CephGate False {reason}"),
        Duration::from_mins(2),
        || async {
            Ok(g.gate_condition()
                .await?
                .filter(|(s, r, _)| s == "False" && r == reason)
                .map(|(_, _, m)| m))
        },
    )
    .await
}

/// How many daemons the bridge stopped since `from`.
fn stopped_since(g: &Gated, from: Duration) -> usize {
    (g.bridge.events().into_iter())
        .filter(|e| e.at > from && matches!(e.kind, BridgeEventKind::Stopping { .. }))
        .count()
}

/// How many daemons the bridge started since `from`.
fn started_since(g: &Gated, from: Duration) -> usize {
    (g.bridge.events().into_iter())
        .filter(|e| e.at > from && matches!(e.kind, BridgeEventKind::Started { .. }))
        .count()
}

/// How many OSDs the CephOSD runs.
fn osds(g: &Gated) -> i64 {
    i64::try_from(g.want.len()).unwrap_or(i64::MAX)
}

/// Waits until the CephOSD's `status.releases` is `what` says (`holds`).
async fn wait_releases(
    g: &Gated,
    what: &str,
    holds: impl Fn(&ReleasesStatus) -> bool,
) -> anyhow::Result<()> {
    let holds = &holds;
    let waited =
        g.s.wait_until(what, Duration::from_secs(30), || async move {
            let releases = g.s.cr_status(CR).await?.and_then(|s| s.releases);
            Ok(releases.filter(|r| holds(r)).map(drop))
        })
        .await;
    if waited.is_err() {
        let now = g.s.cr_status(CR).await?.and_then(|s| s.releases);
        anyhow::bail!("status.releases is not {what}: {now:?}");
    }
    Ok(())
}

/// The condition `type_` of the CephOSD: (status, reason, message).
async fn condition(g: &Gated, type_: &str) -> anyhow::Result<Option<(String, String, String)>> {
    Ok(g.s.cr_status(CR).await?.and_then(|s| {
        (s.conditions.into_iter())
            .find(|c| c.type_ == type_)
            .map(|c| (c.status, c.reason, c.message))
    }))
}
