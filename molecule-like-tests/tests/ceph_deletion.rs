//! Deletion is a rollout too, end to end against a real Ceph (the operator's minimal-caps
//! key, its OSD daemons run by the bridge for KWOK's pods). A CephOSD deleted mid-step with
//! kubectl's default cascade: its pods go one host at a time, each drained first (marked
//! out, its data moved), never two hosts down and in, no PG unavailable, no `noout` left,
//! the CephOSD gone at the end; another CephOSD on the same Ceph keeps running. Its
//! namespace deleted mid-step: Kubernetes deletes every pod at once, the operator clears
//! its own `noout` and says so.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::Context;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::kubernetes::manifests::{cephosd, storage, CR};
use molecule_like_tests::recording::ceph::Observed;
use serde_json::json;

const LONG: Duration = Duration::from_mins(4);

/// Starts a template change of `CR` and waits until its first step is open with the
/// operator's `noout` set: the moment of the deletion.
async fn mid_step(g: &Gated) -> anyhow::Result<(Duration, Vec<u32>)> {
    let from = g.ceph.elapsed();
    g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    g.wait_gate("a step open with noout", Duration::from_mins(1), |st| {
        st.ceph_step
            .as_ref()
            .is_some_and(|s| s.drain.is_none() && !s.noout.is_empty())
    })
    .await?;
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    let noout = status.ceph_step.map(|s| s.noout).unwrap_or_default();
    Ok((from, noout))
}

/// Waits until a converged pod of the open step's disks is terminating or gone: the step's
/// own deletion (the operator records the step and sets `noout` before its pods go).
async fn step_pods_going(g: &Gated) -> anyhow::Result<()> {
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    let keys: BTreeSet<String> = status
        .ceph_step
        .map(|s| s.keys)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let step_pods: BTreeSet<String> = (g.converged.pods.iter())
        .filter(|(key, _)| keys.contains(&key.to_string()))
        .map(|(_, pod)| pod.name_any())
        .collect();
    anyhow::ensure!(
        !step_pods.is_empty(),
        "no converged pod for the step's keys {keys:?}"
    );
    g.s.wait_until("the step's pods going", Duration::from_secs(30), || async {
        let live: BTreeSet<String> = (g.s.list_pods().await?.iter())
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(ResourceExt::name_any)
            .collect();
        Ok(step_pods.iter().any(|p| !live.contains(p)).then_some(()))
    })
    .await
}

/// Waits until Ceph's osdmap, sampled after `after`, shows no `noout` at all.
async fn no_noout_after(g: &Gated, after: Duration, timeout: Duration) -> anyhow::Result<()> {
    g.ceph
        .wait_until("no noout in an osdmap sampled since", timeout, |s| {
            s.osdmap
                .as_ref()
                .is_some_and(|(at, m)| *at > after && m.noout().is_empty())
        })
        .await
        .map(drop)
}

/// When Ceph's view first showed no `noout` after `after`.
fn first_without_noout(g: &Gated, after: Duration) -> Option<Duration> {
    g.ceph
        .recording()
        .events
        .iter()
        .find_map(|e| match &e.observed {
            Observed::OsdMap(m) if e.at > after && m.noout().is_empty() => Some(e.at),
            _ => None,
        })
}

/// 5 hosts, pool size 3: `keep` on three, `CR` on two. `CR` deleted while its first rollout
/// step is open: the step becomes the drain of its OSD, its `noout` cleared; then the other
/// host is drained and stopped; `CR` is gone, `keep`'s pods untouched, no `noout` left.
#[tokio::test]
async fn a_cephosd_deleted_mid_step_goes_one_host_at_a_time() -> anyhow::Result<()> {
    let g = Gated::up_with(
        "cephdel-five",
        &GatedOptions {
            hosts: &["ceph-a", "ceph-b", "ceph-c", "ceph-d", "ceph-e"],
            cr_hosts: Some(&["ceph-d", "ceph-e"]),
            expect_idle: false,
            ..GatedOptions::default()
        },
    )
    .await?;
    let keep_hosts = g.s.hosts(["ceph-a", "ceph-b", "ceph-c"]);
    let keep_want: BTreeSet<OsdKey> = (g.table.keys())
        .filter(|k| keep_hosts.contains(&k.host))
        .cloned()
        .collect();
    let template = serde_json::to_value(&g.converged.cr.spec.pod_template)?;
    let keep =
        g.s.create_converged(
            &cephosd(
                "keep",
                storage(&keep_hosts, &["/dev/sdb"]),
                "Host",
                template,
            ),
            keep_want.clone(),
        )
        .await?;
    g.cluster.pool_create().await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let keep_uids: BTreeSet<String> = keep.pods.values().filter_map(ResourceExt::uid).collect();

    let (from, noout) = mid_step(&g).await?;
    let t_delete = Instant::now();
    let deleted_at = g.ceph.elapsed();
    g.s.crs.delete(CR, &DeleteParams::default()).await?;
    g.s.wait_until("the CephOSD is gone", LONG, || async {
        Ok(g.s.crs.get_opt(CR).await?.is_none().then_some(()))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    let gone = t_delete.elapsed();
    no_noout_after(&g, g.ceph.elapsed(), Duration::from_secs(30)).await?;

    let recording = g.ceph.recording();
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    // Ceph's view: never two hosts down while in, no PG unavailable, no noout at the end.
    recording
        .check_in_hosts_down_at_most(1, from)
        .map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    recording.check_no_noout_at_end().map_err(fail)?;
    g.bridge.check().map_err(fail)?;

    // The pod watch: one pod per key throughout; the CephOSD's pods went host by host, each
    // host's deletions only once the other host's pods were gone.
    g.s.assert_one_pod_per_key().await.map_err(fail)?;
    let (first, second) = deleted_host_by_host(&g).map_err(fail)?;
    // `keep` untouched: the same pods, Ready.
    let keep_now =
        g.s.wait_converged("keep", &keep_want, &keep.hash, LONG)
            .await?;
    let now: BTreeSet<String> = keep_now.values().filter_map(ResourceExt::uid).collect();
    anyhow::ensure!(now == keep_uids, "keep's pods changed");

    // The operator's record: the open step became a drain (no noout), then the other host's.
    let samples = g.gate.samples();
    let drains = samples
        .iter()
        .filter(|s| s.at >= deleted_at && s.step.is_some() && s.noout.is_empty())
        .count();
    anyhow::ensure!(drains > 0, "no drain after the deletion\n{report}");
    let log = g.s.operator_log();
    anyhow::ensure!(
        log.contains("removed the finalizer"),
        "no finalizer removal in the log"
    );
    println!(
        "==== CephOSD on 2 of 5 hosts deleted mid-step (noout on {noout:?}): gone {:.1}s \
         after the delete, host by host (pod events {first:?} then {second:?}), no noout \
         left; keep's 3 pods untouched\n{report}",
        gone.as_secs_f64()
    );
    g.down().await
}

/// The CephOSD's pods went host by host: each host's deletions only once the other host's pods
/// were gone. Returns each host's span of pod events (first deletion, last gone), in order.
fn deleted_host_by_host(g: &Gated) -> anyhow::Result<((usize, usize), (usize, usize))> {
    let timeline = g.s.recorder()?.timeline();
    let mut by_host: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for pod in timeline.pods.values() {
        let Some(key) = pod.key.as_ref().filter(|k| g.want.contains(k)) else {
            continue;
        };
        let Some(started) = pod.deletion_started else {
            continue;
        };
        let gone = pod.gone.unwrap_or(usize::MAX);
        let span = by_host.entry(key.host.clone()).or_insert((started, gone));
        span.0 = span.0.min(started);
        span.1 = span.1.max(gone);
    }
    anyhow::ensure!(by_host.len() == 2, "deletions by host: {by_host:?}");
    let spans: Vec<(usize, usize)> = by_host.values().copied().collect();
    let (first, second) = if spans[0].0 <= spans[1].0 {
        (spans[0], spans[1])
    } else {
        (spans[1], spans[0])
    };
    anyhow::ensure!(
        second.0 > first.1,
        "a host's pods were deleted before the other's were gone (events {first:?} then \
         {second:?})\n{}",
        g.s.recorder()?.render()
    );
    Ok((first, second))
}

/// 3 hosts, size 3: the namespace deleted while a step is open with the operator's
/// `noout`: every pod goes at once (Kubernetes does it), the operator clears its `noout`
/// and says so in its log (the namespace takes no Event), and the namespace goes.
#[tokio::test]
async fn its_namespace_deleted_mid_step_leaves_no_noout() -> anyhow::Result<()> {
    let g = Gated::up("cephdel-ns").await?;
    let (from, noout) = mid_step(&g).await?;
    let deleted_at = g.ceph.elapsed();
    let namespaces: Api<Namespace> = Api::all(g.s.client.clone());
    namespaces
        .delete(&g.s.namespace, &DeleteParams::default())
        .await?;
    no_noout_after(&g, deleted_at, Duration::from_mins(1))
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    let cleared = first_without_noout(&g, deleted_at)
        .ok_or_else(|| anyhow::anyhow!("no osdmap without noout\n{}", g.report(from)))?;
    g.s.wait_until("the namespace is gone", LONG, || async {
        Ok(namespaces
            .get_opt(&g.s.namespace)
            .await?
            .is_none()
            .then_some(()))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.s.operator_log()))?;
    let log = g.s.operator_log();
    anyhow::ensure!(
        log.contains("its namespace is being deleted"),
        "the log does not say the pods went at once"
    );
    println!(
        "==== namespace deleted mid-step at {:.2}s (noout on {noout:?}): no noout in Ceph's \
         view from {:.2}s, the namespace gone\n{}",
        deleted_at.as_secs_f64(),
        cleared.as_secs_f64(),
        g.report(from)
    );
    g.down().await
}

/// 3 hosts, size 3: deleted with `--cascade=foreground` while a step is open: Kubernetes
/// deletes every pod; the operator clears its `noout`, says which OSDs went down together (a
/// Warning event), and the CephOSD goes.
#[tokio::test]
async fn deleted_with_cascade_foreground_the_step_ends_and_it_is_said() -> anyhow::Result<()> {
    let g = Gated::up("cephdel-fg").await?;
    let (from, noout) = mid_step(&g).await?;
    let deleted_at = g.ceph.elapsed();
    g.s.crs.delete(CR, &DeleteParams::foreground()).await?;
    g.s.wait_until("the CephOSD is gone", LONG, || async {
        Ok(g.s.crs.get_opt(CR).await?.is_none().then_some(()))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    no_noout_after(&g, g.ceph.elapsed(), Duration::from_secs(30)).await?;
    let cleared = first_without_noout(&g, deleted_at).unwrap_or_default();
    let said: Vec<String> =
        g.s.cr_events(CR)
            .await?
            .into_iter()
            .filter(|e| {
                e.reason.as_deref() == Some("Deleting") && e.type_.as_deref() == Some("Warning")
            })
            .filter_map(|e| e.note)
            .collect();
    anyhow::ensure!(
        said.iter()
            .any(|n| n.contains("foreground") && n.contains("went down at once")),
        "no Warning says the OSDs went at once: {said:?}"
    );
    println!(
        "==== deleted with --cascade=foreground at {:.2}s mid-step (noout on {noout:?}): no \
         noout from {:.2}s; said: {said:?}",
        deleted_at.as_secs_f64(),
        cleared.as_secs_f64()
    );
    g.down().await
}

/// 3 hosts, size 3: deleted with `--cascade=orphan` while a step is open: no pod is taken
/// down after the deletion (the OSDs keep running without the operator), the step's `noout`
/// is cleared, and the CephOSD goes. A pod the garbage collector missed (one made while it
/// worked; here one given the CephOSD's ownerReference back while the operator is frozen) is
/// let go of by the operator: it outlives the CephOSD.
#[tokio::test]
async fn deleted_with_cascade_orphan_the_osds_keep_running() -> anyhow::Result<()> {
    let g = Gated::up("cephdel-orphan").await?;
    let (from, noout) = mid_step(&g).await?;
    // The status names the step before its pods go: wait for the step's own deletion, then
    // start counting once the recorder has it (it came before the orphaning delete).
    step_pods_going(&g).await?;
    let seq = g.s.pod_watch_mark().await?;
    let uid = g.s.crs.get(CR).await?.uid().unwrap_or_default();
    g.s.signal_operator("STOP")?;
    let missed = orphaned_but_one(&g, &uid).await;
    g.s.signal_operator("CONT")?;
    let missed = missed.map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    g.s.wait_until("the CephOSD is gone", LONG, || async {
        Ok(g.s.crs.get_opt(CR).await?.is_none().then_some(()))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    no_noout_after(&g, g.ceph.elapsed(), Duration::from_secs(30)).await?;
    // A few seconds more: still nothing taken down.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let recorder = g.s.recorder()?;
    recorder.catch_up(&g.s.pods).await?;
    let deleted_after: Vec<String> = (recorder.timeline().deletions.iter())
        .filter(|(at, _)| *at >= seq)
        .map(|(_, name)| name.clone())
        .collect();
    anyhow::ensure!(
        deleted_after.is_empty(),
        "pods deleted after an orphaning delete: {deleted_after:?}\n{}",
        recorder.render()
    );
    let missed_now = g.s.pods.get_opt(&missed).await?;
    anyhow::ensure!(
        missed_now
            .as_ref()
            .is_some_and(|p| p.metadata.deletion_timestamp.is_none()
                && p.owner_references().iter().all(|o| o.uid != uid)),
        "the pod the garbage collector missed, {missed}, did not outlive the CephOSD on its \
         own: {missed_now:?}"
    );
    let running =
        g.s.list_pods()
            .await?
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .count();
    println!(
        "==== deleted with --cascade=orphan mid-step (noout on {noout:?}): {running} OSD pods \
         keep running ({missed} let go of by the operator), none deleted after the delete, no \
         noout left\n{}",
        g.report(from)
    );
    g.down().await
}

/// With the operator frozen: `CR` deleted with `--cascade=orphan`, the garbage collector
/// through (its finalizer off, no live pod naming the CephOSD `uid`), then one live pod given
/// the CephOSD's controller reference back, as a pod made while the collector worked keeps
/// it. That pod's name.
async fn orphaned_but_one(g: &Gated, uid: &str) -> anyhow::Result<String> {
    g.s.crs.delete(CR, &DeleteParams::orphan()).await?;
    let names_it = |p: &Pod| p.owner_references().iter().any(|o| o.uid == uid);
    let live =
        g.s.wait_until(
            "the garbage collector through",
            Duration::from_secs(30),
            || async {
                let cr = g.s.crs.get(CR).await?;
                let orphaning = cr.finalizers().iter().any(|f| f == "orphan");
                let live: Vec<Pod> = (g.s.list_pods().await?.into_iter())
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .collect();
                Ok((!orphaning && !live.iter().any(names_it)).then_some(live))
            },
        )
        .await?;
    let missed = live
        .first()
        .map(ResourceExt::name_any)
        .context("no live pod")?;
    let reference = json!([{
        "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD", "name": CR,
        "uid": uid, "controller": true, "blockOwnerDeletion": true,
    }]);
    g.s.pods
        .patch(
            &missed,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"ownerReferences": reference}})),
        )
        .await?;
    Ok(missed)
}
