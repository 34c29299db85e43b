//! The Ceph bridge end to end: KWOK's OSD pods get real `ceph-osd` daemons (one per OSD id,
//! started when the pod runs, stopped before the pod is gone), on a real Ceph (mon, mgr,
//! BlueStore OSDs) of the scenario's own, beside the real Kubernetes.
//!
//! The operator has no Ceph gate yet: these tests assert the bridge's rules only (one daemon
//! per OSD id, each stopped before its pod is gone), and print what an ungated rollout did in
//! Ceph's view (hosts down, PGs not active or unavailable).
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`; the cluster installs them when missing).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::ceph::CephCluster;
use molecule_like_tests::journeys::bridge::{
    ready_when_osd_up, BridgeEvent, BridgeEventKind, CephBridge,
};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::{hold, Converged, Scenario, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, with_kubelet_knobs, Knobs, CR,
    READY_AFTER_ANNOTATION,
};
use molecule_like_tests::kubernetes::nodes::ensure_nodes;
use molecule_like_tests::kubernetes::pods::names_by_key;
use molecule_like_tests::recording::ceph::CephRecorder;
use serde_json::json;

const DATA: &str = "/dev/sdb";
/// Longer than any daemon stop: the bridge removes a pod once its daemon has exited.
const GRACE_SECONDS: i64 = 30;

/// A scenario's pods bridged to a real Ceph: 3 hosts × 1 OSD, converged, the pool clean.
struct Bridged {
    s: Scenario,
    cluster: Arc<CephCluster>,
    ceph: CephRecorder,
    bridge: CephBridge,
    table: BTreeMap<OsdKey, u32>,
    want: BTreeSet<OsdKey>,
    converged: Converged,
}

/// Creates 3 hosts × 1 OSD (`updateDomain: Host`) with real daemons, waits for every PG
/// active+clean, rolls a template change host by host, and checks the bridge's rules.
/// `ready_by_ceph`: pods Ready once their OSD is up in Ceph, else KWOK's 1 s timing.
async fn roll_real_osds(name: &str, ready_by_ceph: bool) -> anyhow::Result<()> {
    let test_start = Instant::now();
    let ready = if ready_by_ceph {
        "when their OSD is up in Ceph"
    } else {
        "by KWOK's 1 s timing"
    };
    let mut m = Milestones::new(format!("{name} (pods Ready {ready})"));
    let b = bridged(name, ready_by_ceph, &mut m).await?;
    let before = check_daemons_in_their_pods(&b).await?;

    // A template change rolls host by host; every daemon restarts.
    let from = b.ceph.elapsed();
    let rolled = roll(&b, &before, &mut m).await?;

    // The pods: one per disk at any time, host by host.
    b.s.assert_one_pod_per_key().await?;
    b.s.recorder()?
        .timeline()
        .check_rollout(&names_by_key(&b.converged.pods), UpdateDomain::Host)?;
    let restarts = check_restarts(&b, &rolled, &before).await?;

    // What the ungated rollout did in Ceph's view (reported, not asserted: no gate yet).
    let recording = b.ceph.recording();
    m.section(
        "restarts (times from the stop request)",
        restarts.join("\n"),
    )
    .section(
        "ceph",
        format!("{}{}", recording.summary(from), recording.render(from)),
    )
    .section("bridge", b.bridge.render())
    .print();

    let events = b.bridge.stop().await?;
    anyhow::ensure!(
        events
            .iter()
            .all(|e| !matches!(e.kind, BridgeEventKind::Error(_))),
        "bridge errors while stopping"
    );
    drop(b.ceph);
    b.s.destroy().await?;
    b.cluster.down()?;
    println!(
        "==== {name}: test {:.1}s",
        test_start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Ceph (mon + mgr, one OSD per disk, its CRUSH host the disk's node), the bridge, the
/// CephOSD converged with every OSD up, then the pool active+clean.
async fn bridged(name: &str, ready_by_ceph: bool, m: &mut Milestones) -> anyhow::Result<Bridged> {
    let s = Scenario::converge(name).await?;
    let hosts = s.hosts(["ceph-a", "ceph-b", "ceph-c"]);
    let want = keys(&hosts, &[DATA]);
    let t = Instant::now();
    let cluster = Arc::new(CephCluster::for_scenario(&s, 0).await?);
    m.span("ceph up: mon+mgr", t.elapsed());
    let ids =
        futures::future::try_join_all(want.iter().map(|k| cluster.osd_create(&k.host))).await?;
    let table: BTreeMap<OsdKey, u32> = want.iter().cloned().zip(ids).collect();
    m.span("ceph up: 3 OSDs created", t.elapsed());

    // The pod recorder's clock: both recordings on one time line.
    let clock = Instant::now()
        .checked_sub(s.recorder()?.elapsed())
        .ok_or_else(|| anyhow::anyhow!("no clock"))?;
    let ceph = CephRecorder::start(&cluster, clock).await?;
    let bridge = CephBridge::start(s.pods.clone(), Arc::clone(&cluster), &table, &ceph).await?;

    let mut template = with_kubelet_knobs(
        fast_sample_template()?,
        Knobs {
            ready_after: 1,
            never_ready: false,
            grace: GRACE_SECONDS,
        },
    );
    if ready_by_ceph {
        template = ready_when_osd_up(template);
    }
    let manifest = cephosd(CR, storage(&hosts, &[DATA]), "Host", template);
    let converged = s.create_converged(&manifest, want.clone()).await?;
    ceph.wait_until("every OSD up", Duration::from_mins(1), |v| {
        v.osdmap
            .as_ref()
            .is_some_and(|(_, m)| table.values().all(|id| m.osd(*id).is_some_and(|o| o.up)))
    })
    .await?;
    let t_pool = Instant::now();
    cluster.pool_create().await?;
    m.span(
        "ceph up: pool active+clean after the OSDs were up",
        t_pool.elapsed(),
    )
    .span("ceph up: in all", t.elapsed());
    Ok(Bridged {
        s,
        cluster,
        ceph,
        bridge,
        table,
        want,
        converged,
    })
}

/// Each OSD runs in its pod on its node: Ceph's metadata and CRUSH say so. Returns each OSD's
/// `up_from`.
async fn check_daemons_in_their_pods(b: &Bridged) -> anyhow::Result<BTreeMap<u32, u64>> {
    let map = b.cluster.osd_dump().await?;
    for (key, id) in &b.table {
        let pod = &b.converged.pods[key];
        let meta = b.cluster.osd_metadata(*id).await?;
        anyhow::ensure!(
            meta["pod_name"] == json!(pod.name_any())
                && meta["pod_namespace"] == json!(b.s.namespace)
                && meta["hostname"] == json!(key.host),
            "osd.{id} ({key}): metadata {meta}, expected pod {} on {}",
            pod.name_any(),
            key.host
        );
        anyhow::ensure!(
            map.host_of(*id) == Some(key.host.as_str()),
            "osd.{id}: CRUSH host {:?}, expected {}",
            map.host_of(*id),
            key.host
        );
    }
    Ok((b.table.values())
        .map(|id| (*id, map.osd(*id).map_or(0, |o| o.up_from)))
        .collect())
}

/// A template change, rolled: the pods converged, every OSD up again with a newer `up_from`
/// (than `before`), every PG active+clean. Returns the new pods.
async fn roll(
    b: &Bridged,
    before: &BTreeMap<u32, u64>,
    m: &mut Milestones,
) -> anyhow::Result<BTreeMap<OsdKey, Pod>> {
    let t_roll = Instant::now();
    let (_, hash) =
        b.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let rolled = b.s.wait_converged(CR, &b.want, &hash, ROLLOUT).await?;
    m.span("rollout: pods converged", t_roll.elapsed());
    b.ceph
        .wait_until(
            "every OSD up again with a newer up_from",
            Duration::from_mins(1),
            |v| {
                v.osdmap.as_ref().is_some_and(|(_, m)| {
                    before
                        .iter()
                        .all(|(id, old)| m.osd(*id).is_some_and(|o| o.up && o.up_from > *old))
                })
            },
        )
        .await?;
    b.cluster.wait_clean(Duration::from_mins(1)).await?;
    m.span(
        "rollout: every PG active+clean after the template change",
        t_roll.elapsed(),
    );
    Ok(rolled)
}

/// The bridge: one daemon per OSD id, each old pod's stopped before it was gone, each new
/// pod's booted with a newer up_from; Ceph's metadata names the new pods. Returns a line per
/// restart (times from its stop request).
async fn check_restarts(
    b: &Bridged,
    rolled: &BTreeMap<OsdKey, Pod>,
    before: &BTreeMap<u32, u64>,
) -> anyhow::Result<Vec<String>> {
    b.bridge.check()?;
    let mut restarts = Vec::new();
    for (key, id) in &b.table {
        let (old_pod, new_pod) = (b.converged.pods[key].name_any(), rolled[key].name_any());
        let list = (b.bridge)
            .daemons_of(*id, &[&old_pod, &new_pod])
            .map_err(|e| anyhow::anyhow!("{e:#}\n{}", b.bridge.render()))?;
        let (first, second) = (&list[0], &list[1]);
        anyhow::ensure!(
            first.stopped.is_some() && first.gone.is_some() && first.stopped <= first.gone,
            "osd.{id}: old daemon {first:?}"
        );
        let (booted_at, up_from) = second
            .booted
            .ok_or_else(|| anyhow::anyhow!("osd.{id}: new daemon never booted: {second:?}"))?;
        anyhow::ensure!(up_from > before[id], "osd.{id}: up_from {up_from}");
        let meta = b.cluster.osd_metadata(*id).await?;
        anyhow::ensure!(
            meta["pod_name"] == json!(new_pod),
            "osd.{id}: metadata {meta}"
        );
        let stopping = first.stopping.unwrap_or_default();
        restarts.push(format!(
            "  osd.{id} on {}: stop requested {:.2}s, stopped +{:.2}s, pod gone +{:.2}s, new daemon \
             started +{:.2}s, booted (up_from {} → {up_from}) +{:.2}s",
            key.host,
            stopping.as_secs_f64(),
            since(first.stopped, stopping),
            since(first.gone, stopping),
            since(second.started, stopping),
            before[id],
            since(Some(booted_at), stopping),
        ));
    }
    Ok(restarts)
}

/// Seconds from `from` to `at`.
fn since(at: Option<Duration>, from: Duration) -> f64 {
    at.unwrap_or_default().saturating_sub(from).as_secs_f64()
}

#[tokio::test]
async fn bridged_osds_roll_host_by_host_ready_when_up_in_ceph() -> anyhow::Result<()> {
    roll_real_osds("cephbridge", true).await
}

#[tokio::test]
async fn bridged_osds_roll_host_by_host_ready_by_kwok_timing() -> anyhow::Result<()> {
    roll_real_osds("cephbridge-kwok", false).await
}

/// A plain pod on `node` whose container runs the OSD on `data` (as the operator's would).
fn osd_pod(name: &str, node: &str, data: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": {READY_AFTER_ANNOTATION: "1"}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": GRACE_SECONDS,
            "containers": [{"name": "osd", "image": "busybox",
                            "env": [{"name": "OSD_DEVICE", "value": data}]}],
        },
    }))?)
}

/// Two pods on one disk: the second is a violation and gets no daemon while the first's runs;
/// once the first pod is deleted (its daemon stopped first) the second gets the daemon.
#[tokio::test]
async fn a_second_pod_on_a_disk_gets_no_second_daemon() -> anyhow::Result<()> {
    let s = Scenario::create("cephbridge-claim").await?;
    let node = s.host("ceph-a");
    ensure_nodes(&s.client, &BTreeSet::from([node.clone()])).await?;
    let cluster = Arc::new(CephCluster::for_scenario(&s, 0).await?);
    let id = cluster.osd_create(&node).await?;
    let ceph = CephRecorder::start(&cluster, Instant::now()).await?;
    let table = BTreeMap::from([(OsdKey::new(&node, DATA), id)]);
    let bridge = CephBridge::start(s.pods.clone(), Arc::clone(&cluster), &table, &ceph).await?;
    let is = |pod: &'static str, kind: fn(&BridgeEventKind) -> bool| {
        move |e: &BridgeEvent| e.pod == pod && kind(&e.kind)
    };

    s.pods
        .create(&PostParams::default(), &osd_pod("first", &node, DATA)?)
        .await?;
    bridge
        .wait_for_event(
            "first's daemon booted",
            is("first", |k| matches!(k, BridgeEventKind::Booted { .. })),
        )
        .await?;

    // Another spelling of the same disk.
    s.pods
        .create(
            &PostParams::default(),
            &osd_pod("second", &node, "/dev//sdb")?,
        )
        .await?;
    bridge
        .wait_for_event(
            "second's claim recorded as a violation",
            is("second", |k| matches!(k, BridgeEventKind::Violation(_))),
        )
        .await?;
    hold(Duration::from_secs(2), || async {
        anyhow::ensure!(
            !bridge
                .events()
                .iter()
                .any(|e| e.pod == "second" && matches!(e.kind, BridgeEventKind::Started { .. })),
            "a second daemon on osd.{id}\n{}",
            bridge.render()
        );
        Ok(())
    })
    .await?;
    let meta = cluster.osd_metadata(id).await?;
    anyhow::ensure!(meta["pod_name"] == "first", "osd.{id}: {meta}");

    // The first pod goes: its daemon stops first, then the second pod's starts.
    s.pods.delete("first", &DeleteParams::default()).await?;
    let events = bridge
        .wait_for_event(
            "second's daemon booted",
            is("second", |k| matches!(k, BridgeEventKind::Booted { .. })),
        )
        .await?;
    let meta = cluster.osd_metadata(id).await?;
    anyhow::ensure!(meta["pod_name"] == "second", "osd.{id}: {meta}");
    let daemons = bridge.daemons();
    let list = &daemons[&id];
    let names: Vec<&str> = list.iter().map(|d| d.pod.as_str()).collect();
    anyhow::ensure!(names == ["first", "second"], "{names:?}");
    anyhow::ensure!(
        list[0].stopped.is_some()
            && list[0].stopped <= list[0].gone
            && list[0].stopped <= list[1].started,
        "the first daemon stopped before its pod was gone and before the second started: {list:?}"
    );
    let err = bridge.check().expect_err("the claim is a violation");
    anyhow::ensure!(
        err.to_string().contains("claims osd."),
        "unexpected check failure: {err:#}"
    );
    println!("==== two pods on one disk:\n{}", render(&events));

    bridge.stop().await?;
    drop(ceph);
    s.destroy().await?;
    cluster.down()?;
    Ok(())
}

fn render(events: &[BridgeEvent]) -> String {
    events
        .iter()
        .map(|e| format!("  {:>6.2}s {} {:?}\n", e.at.as_secs_f64(), e.pod, e.kind))
        .collect()
}
