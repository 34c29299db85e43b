//! A Ceph release upgrade, Pacific → Reef, on real daemons: 3 hosts × 1 OSD run Pacific, the
//! CephOSD (with `spec.prePull`) is given the Reef image while the monitor and the manager run
//! Pacific. Ceph's release rules refuse the step before anything stops: `CephGate` False
//! `MonitorsOlder`, a Warning event, no pod deleted, no daemon restarted. Once the monitor and
//! the manager are upgraded as an admin upgrades them (restarted from the Reef root), the same
//! CephOSD rolls on its own, host by host: each OSD boots 18.2.7 on the data Pacific made,
//! every step on clean PGs, one host down at most.
//!
//! Needs the local control plane, a built operator, Ceph's daemons and Reef's root
//! (`molecule-like-tests/ceph-release-root install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use molecule_like_tests::ceph::Release;
use molecule_like_tests::journeys::bridge::BridgeEventKind;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::scenario::ROLLOUT;
use molecule_like_tests::kubernetes::manifests::{hash_of, CR};
use serde_json::json;

const REEF_IMAGE: &str = "quay.io/ceph/ceph:v18.2.7";
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

    // The template to Reef: the monitor and the manager still run Pacific.
    let cr = g.s.crs.get(CR).await?;
    let mut template = cr.spec.pod_template.clone();
    template["spec"]["containers"][0]["image"] = json!(REEF_IMAGE);
    let cr = g.s.patch_spec(CR, json!({"podTemplate": template})).await?;
    let hash = hash_of(&cr);
    let (status, reason, message) =
        g.s.wait_until(
            "CephGate False MonitorsOlder",
            Duration::from_mins(2),
            || async {
                Ok(g.gate_condition()
                    .await?
                    .filter(|(_, r, _)| r == "MonitorsOlder"))
            },
        )
        .await?;
    ensure!(status == "False", "{reason}: {message}");
    ensure!(
        message.contains("upgrade the monitors first") && message.contains("pacific"),
        "{message}"
    );
    tokio::time::sleep(REFUSED_FOR).await;
    let restarted = g
        .bridge
        .events()
        .into_iter()
        .filter(|e| e.at > from && matches!(e.kind, BridgeEventKind::Started { .. }))
        .count();
    ensure!(restarted == 0, "a daemon was restarted while refused");
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

    // The admin upgrades the monitor, then the manager: the rollout starts by itself.
    let t_upgrade = Instant::now();
    g.cluster.restart_mon(Release::Reef).await?;
    g.cluster.restart_mgr(Release::Reef).await?;
    g.s.wait_converged(CR, &g.want, &hash, ROLLOUT * 2).await?;
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
    eprintln!(
        "==== refused with {message:?}; after the monitor and manager upgrade the {} OSDs \
         rolled to Reef in {:.1}s",
        g.want.len(),
        rolled.as_secs_f64()
    );
    g.s.assert_one_pod_per_key().await?;
    Ok(())
}
