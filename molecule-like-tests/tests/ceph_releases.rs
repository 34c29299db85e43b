//! Ceph releases in the harness, end to end on one real Ceph (mon + mgr, 3 BlueStore OSDs)
//! beside the real Kubernetes: each OSD pod's daemon runs its image's release (`v18…` Reef,
//! else the machine's Pacific), the mon and the mgr are upgraded as an admin does, an OSD first
//! run by Pacific boots under Reef on the same data, a `-broken` image's daemon never starts,
//! and a pre-pull pod's `ceph-release` container ends with the real `ceph-osd --version` of its
//! image's release as its message.
//!
//! Needs the local control plane (its KWOK with the `pre-pull-ceph-release` stage), Ceph's
//! daemons (`molecule-like-tests/ceph install`) and Reef's root
//! (`molecule-like-tests/ceph-release-root install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ceph_osd_operator::{labels, OsdKey};
use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod};
use kube::api::{DeleteParams, PostParams};
use molecule_like_tests::ceph::{CephCluster, Release};
use molecule_like_tests::journeys::bridge::{
    BridgeEvent, BridgeEventKind, CephBridge, CEPH_RELEASE_CONTAINER, READY_WHEN_OSD_UP,
};
use molecule_like_tests::journeys::scenario::{hold, Scenario};
use molecule_like_tests::kubernetes::manifests::READY_ANNOTATION;
use molecule_like_tests::kubernetes::nodes::ensure_nodes;
use molecule_like_tests::kubernetes::pods::is_ready;
use molecule_like_tests::recording::ceph::CephRecorder;
use serde_json::json;

const DATA: &str = "/dev/sdb";
const GRACE_SECONDS: i64 = 30;
const PACIFIC_IMAGE: &str = "quay.io/ceph/ceph:v16.2.15";
const REEF_IMAGE: &str = "quay.io/ceph/ceph:v18.2.7";
const BROKEN_REEF_IMAGE: &str = "quay.io/ceph/ceph:v18.2.7-broken";

/// An OSD pod on `node` running the OSD on [`DATA`] from `image`, Ready once its OSD is up.
fn osd_pod(name: &str, node: &str, image: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": {READY_ANNOTATION: READY_WHEN_OSD_UP}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": GRACE_SECONDS,
            "containers": [{"name": "osd", "image": image,
                            "env": [{"name": "OSD_DEVICE", "value": DATA}]}],
        },
    }))?)
}

/// A pre-pull pod on `node` for `image` as the operator makes it: a pull container and the
/// `ceph-release` container, with the annotations of a template whose pods the bridge runs.
fn pre_pull_pod(name: &str, node: &str, image: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {labels::PRE_PULL: "true"},
                     "annotations": {READY_ANNOTATION: READY_WHEN_OSD_UP}},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "pull-0", "image": image, "command": ["true"]},
                {"name": CEPH_RELEASE_CONTAINER, "image": image,
                 "command": ["sh", "-c", "ceph-osd --version > /dev/termination-log"]},
            ],
        },
    }))?)
}

fn started_as(pod: &'static str, release: Release) -> impl Fn(&BridgeEvent) -> bool {
    move |e| {
        e.pod == pod
            && matches!(e.kind, BridgeEventKind::Started { release: r, .. } if r == release)
    }
}

fn gone(pod: &'static str) -> impl Fn(&BridgeEvent) -> bool {
    move |e| e.pod == pod && e.kind == BridgeEventKind::Gone
}

fn booted(pod: &'static str) -> impl Fn(&BridgeEvent) -> bool {
    move |e| e.pod == pod && matches!(e.kind, BridgeEventKind::Booted { .. })
}

/// `ceph osd metadata <id>`'s `ceph_version`.
async fn osd_version(cluster: &CephCluster, id: u32) -> anyhow::Result<String> {
    let meta = cluster.osd_metadata(id).await?;
    Ok(meta["ceph_version"].as_str().unwrap_or_default().to_owned())
}

/// The `ceph-release` container's end, once it has one.
async fn release_end(s: &Scenario, pod: &str) -> anyhow::Result<Option<ContainerStateTerminated>> {
    let pod = s.pods.get(pod).await?;
    let statuses = pod.status.and_then(|s| s.container_statuses);
    Ok((statuses.into_iter().flatten())
        .find(|c| c.name == CEPH_RELEASE_CONTAINER)
        .and_then(|c| c.state?.terminated))
}

async fn wait_release_end(s: &Scenario, pod: &str) -> anyhow::Result<ContainerStateTerminated> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(end) = release_end(s, pod).await? {
            return Ok(end);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{pod}'s ceph-release container never ended (is KWOK's pre-pull-ceph-release stage \
             there? restart the control plane)"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One Ceph (mon + mgr, one OSD per node, not started) and the bridge of a namespace.
struct Bench {
    s: Scenario,
    nodes: [String; 3],
    /// Each node's OSD id.
    ids: Vec<u32>,
    cluster: Arc<CephCluster>,
    ceph: CephRecorder,
    bridge: CephBridge,
    pacific: String,
    reef: String,
}

impl Bench {
    async fn new() -> anyhow::Result<Self> {
        // The real binaries, once per process.
        let pacific = Release::Pacific.osd_version().await?;
        let reef = Release::Reef.osd_version().await?;
        anyhow::ensure!(
            pacific.starts_with("ceph version 16.2.") && pacific.contains(" pacific (")
        );
        anyhow::ensure!(reef.starts_with("ceph version 18.2.") && reef.contains(" reef ("));
        let s = Scenario::create("cephrelease").await?;
        let nodes = s.hosts(["rel-a", "rel-b", "rel-c"]);
        ensure_nodes(&s.client, &nodes.iter().cloned().collect::<BTreeSet<_>>()).await?;
        let cluster = Arc::new(CephCluster::for_scenario(&s, 0).await?);
        let ids =
            futures::future::try_join_all(nodes.iter().map(|n| cluster.osd_create(n))).await?;
        let table: BTreeMap<OsdKey, u32> = (nodes.iter())
            .map(|n| OsdKey::new(n, DATA))
            .zip(ids.iter().copied())
            .collect();
        let ceph = CephRecorder::start(&cluster, Instant::now()).await?;
        let bridge = CephBridge::start(s.pods.clone(), Arc::clone(&cluster), &table, &ceph).await?;
        Ok(Self {
            s,
            nodes,
            ids,
            cluster,
            ceph,
            bridge,
            pacific,
            reef,
        })
    }

    async fn create(&self, pod: Pod) -> anyhow::Result<()> {
        self.s.pods.create(&PostParams::default(), &pod).await?;
        Ok(())
    }

    /// Deletes `pod`; returns once it is gone (its daemon stopped first).
    async fn delete(&self, pod: &'static str) -> anyhow::Result<()> {
        self.s.pods.delete(pod, &DeleteParams::default()).await?;
        self.bridge.wait_for_event(pod, gone(pod)).await.map(drop)
    }

    /// `ceph versions`: how many daemons of `kind` run `version`.
    async fn count(&self, kind: &str, version: &str) -> anyhow::Result<u64> {
        let versions = self.cluster.cli_json(&["versions"]).await?;
        Ok(versions[kind][version.trim()].as_u64().unwrap_or(0))
    }
}

/// Every OSD first runs Pacific (from a v16 image); then the pool.
async fn all_pacific(b: &Bench) -> anyhow::Result<()> {
    for (pod, node) in ["osd-a", "osd-b", "osd-c"].into_iter().zip(&b.nodes) {
        b.create(osd_pod(pod, node, PACIFIC_IMAGE)?).await?;
    }
    for pod in ["osd-a", "osd-b", "osd-c"] {
        let bridge = &b.bridge;
        bridge
            .wait_for_event(pod, started_as(pod, Release::Pacific))
            .await?;
        bridge.wait_for_event(pod, booted(pod)).await?;
    }
    b.cluster.pool_create().await?;
    anyhow::ensure!(b.count("osd", &b.pacific).await? == 3);
    Ok(())
}

/// An admin upgrades the mon and the mgr; then osd-a's disk, first run by Pacific, boots
/// under Reef from a v18 image. Returns when, on the recorder's clock, the PGs were clean
/// under the upgraded mgr (the OSD stops are checked in Ceph's view from then on).
async fn upgrade_to_reef(b: &Bench) -> anyhow::Result<Duration> {
    b.cluster.restart_mon(Release::Reef).await?;
    b.cluster.restart_mgr(Release::Reef).await?;
    anyhow::ensure!(b.count("mon", &b.reef).await? == 1 && b.count("mgr", &b.reef).await? == 1);
    b.cluster.wait_clean(Duration::from_mins(1)).await?;
    let from = b.ceph.elapsed();
    b.delete("osd-a").await?;
    b.create(osd_pod("osd-a2", &b.nodes[0], REEF_IMAGE)?)
        .await?;
    let bridge = &b.bridge;
    bridge
        .wait_for_event("osd-a2 on Reef", started_as("osd-a2", Release::Reef))
        .await?;
    bridge.wait_for_event("osd-a2", booted("osd-a2")).await?;
    b.cluster.wait_clean(Duration::from_mins(2)).await?;
    let version = osd_version(&b.cluster, b.ids[0]).await?;
    anyhow::ensure!(version == b.reef.trim(), "osd.{}: {version}", b.ids[0]);
    anyhow::ensure!(b.count("osd", &b.reef).await? == 1 && b.count("osd", &b.pacific).await? == 2);
    Ok(from)
}

/// A broken image: no daemon, the OSD stays down, the pod never Ready; deleted at once.
async fn broken_image(b: &Bench) -> anyhow::Result<()> {
    let id = b.ids[1];
    b.delete("osd-b").await?;
    b.create(osd_pod("osd-b2", &b.nodes[1], BROKEN_REEF_IMAGE)?)
        .await?;
    b.bridge
        .wait_for_event("osd-b2 broken", |e| {
            e.pod == "osd-b2" && matches!(e.kind, BridgeEventKind::Broken { .. })
        })
        .await?;
    hold(Duration::from_secs(3), || async {
        let map = b.cluster.osd_dump().await?;
        anyhow::ensure!(map.osd(id).is_some_and(|o| !o.up), "osd.{id} up");
        anyhow::ensure!(!is_ready(&b.s.pods.get("osd-b2").await?), "osd-b2 Ready");
        Ok(())
    })
    .await?;
    b.s.pods.delete("osd-b2", &DeleteParams::default()).await?;
    b.bridge
        .wait_for_event("osd-b2 removed", |e| {
            e.pod == "osd-b2" && e.kind == BridgeEventKind::Removed
        })
        .await?;
    anyhow::ensure!(
        !b.bridge.daemons()[&id].iter().any(|d| d.pod == "osd-b2"),
        "a daemon for the broken image\n{}",
        b.bridge.render()
    );
    Ok(())
}

/// The pre-pull pods' reports: the real versions (a broken image's too), their pull
/// containers still running, kept (KWOK does not overwrite them).
async fn pre_pull_reports(b: &Bench) -> anyhow::Result<()> {
    for (pod, want) in [("pull-reef", &b.reef), ("pull-pacific", &b.pacific)] {
        let end = wait_release_end(&b.s, pod).await?;
        anyhow::ensure!(
            end.exit_code == 0 && end.message.as_ref() == Some(want),
            "{pod}: {end:?}"
        );
        let pull = b.s.pods.get(pod).await?;
        let pull0 = (pull
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten()))
        .find(|c| c.name == "pull-0")
        .and_then(|c| c.state.clone());
        anyhow::ensure!(
            pull0.is_some_and(|s| s.running.is_some()),
            "{pod}: {pull:?}"
        );
    }
    hold(Duration::from_secs(2), || async {
        let end = release_end(&b.s, "pull-reef").await?;
        anyhow::ensure!(end.and_then(|e| e.message).as_ref() == Some(&b.reef));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn releases_run_as_their_images_say() -> anyhow::Result<()> {
    let t0 = Instant::now();
    let b = Bench::new().await?;
    b.create(pre_pull_pod("pull-reef", &b.nodes[0], BROKEN_REEF_IMAGE)?)
        .await?;
    b.create(pre_pull_pod("pull-pacific", &b.nodes[1], PACIFIC_IMAGE)?)
        .await?;
    all_pacific(&b).await?;
    let from = upgrade_to_reef(&b).await?;
    broken_image(&b).await?;
    pre_pull_reports(&b).await?;

    // Ceph's view of the OSDs stopped: one host down at a time, no PG below min_size, no
    // noout left.
    b.ceph.recording().check_one_host_at_a_time(from)?;
    b.bridge.check()?;
    println!("==== releases:\n{}", b.bridge.render());
    b.bridge.stop().await?;
    drop(b.ceph);
    b.s.destroy().await?;
    b.cluster.down()?;
    println!("==== releases: test {:.1}s", t0.elapsed().as_secs_f64());
    Ok(())
}
