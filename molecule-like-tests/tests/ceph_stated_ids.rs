//! An admin's wrong `osd-ids` statement on an adopted pod, end to end over real OSD daemons
//! (the adopted fixture of `tests/ceph_adoption.rs`: daemons started as the reference
//! operator's pods start them, no `POD_NAME`, the node as `hostname`): Ceph's word beats the
//! annotation. The first host's pod states the id of the last host's daemon; a template
//! change halts before any stop, `CephGate` False `CephOsdIdsRefuted` naming the pod, the
//! stated id and the node Ceph reports it on, the daemon Ceph reports on the pod's node and
//! the command that fixes it; Ceph's view shows no OSD down, no `noout`, no `ok-to-stop`
//! asked. The fix (the pod's own id) lets the rollout complete, one host at a time.
//!
//! Needs the local control plane, a built operator and Ceph's daemons (as
//! `tests/ceph_gate_ids/`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::labels;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::scenario::ROLLOUT;
use molecule_like_tests::kubernetes::manifests::CR;
use serde_json::json;

/// How long the refusal is watched for pods or OSDs going down.
const HALT_HOLD: Duration = Duration::from_secs(8);
/// The first host's turn comes at once; room for a slow shared machine.
const ITS_TURN: Duration = Duration::from_mins(1);

/// The `ok-to-stop` calls the operator logged from byte `from` of its log on.
fn ok_to_stop_calls(g: &Gated, from: usize) -> Vec<String> {
    let log = g.s.operator_log();
    (log.get(from..).unwrap_or_default().lines())
        .filter(|l| l.contains("ceph call command=osd ok-to-stop"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_wrong_statement_on_an_adopted_pod_is_refused_before_any_stop() -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up_with(
        "stated-wrong",
        &GatedOptions {
            adopt: true,
            ..GatedOptions::default()
        },
    )
    .await?;
    let setup = t0.elapsed();
    let (key, id) = g.first_in_rollout_order();
    let (other_key, other_id) = g.last_in_rollout_order();
    for (k, i) in [(&key, id), (&other_key, other_id)] {
        let m = g.cluster.osd_metadata(i).await?;
        anyhow::ensure!(
            m["pod_name"].as_str().is_none_or(str::is_empty)
                && m["hostname"].as_str() == Some(k.host.as_str()),
            "osd.{i} ({k}) reports {m}"
        );
    }
    let pod = g.converged.pods[&key].clone();
    let name = pod.metadata.name.clone().unwrap_or_default();

    // The admin's typo: the last host's OSD stated on the first host's pod.
    let from = g.ceph.elapsed();
    let watch_from = g.s.pod_watch_mark().await?;
    let log_from = g.s.operator_log().len();
    g.annotate_pod(&pod, labels::OSD_IDS, &other_id.to_string())
        .await?;
    let t_roll = Instant::now();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let wanted = [
        name.clone(),
        format!("osd.{other_id} up on node {}", other_key.host),
        format!("osd.{id} up on node {}", key.host),
        format!(
            "--overwrite -n {} {name} {}={id}",
            g.s.namespace,
            labels::OSD_IDS
        ),
    ];
    let refused =
        g.s.wait_until(
            "CephGate False CephOsdIdsRefuted naming both",
            ITS_TURN,
            || async {
                let c = g.gate_condition().await?;
                Ok(c.filter(|(s, r, m)| {
                    s == "False" && r == "CephOsdIdsRefuted" && wanted.iter().all(|w| m.contains(w))
                }))
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    let refused_after = t_roll.elapsed();
    g.converged_pods_stand(HALT_HOLD, "the statement is refused")
        .await?;
    let c = g.gate_condition().await?;
    anyhow::ensure!(
        c.as_ref()
            .is_some_and(|(s, r, _)| s == "False" && r == "CephOsdIdsRefuted"),
        "CephGate after the hold: {c:?}\n{}",
        g.report(from)
    );
    // Ceph's view: no OSD went down, no noout; Ceph was not even asked.
    let recording = g.ceph.recording();
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{}", g.report(from));
    recording.check_hosts_down_at_most(0, from).map_err(fail)?;
    recording.check_no_noout_at_end().map_err(fail)?;
    let asked = ok_to_stop_calls(&g, log_from);
    anyhow::ensure!(
        asked.is_empty(),
        "ok-to-stop asked while the statement was refused:\n{}",
        asked.join("\n")
    );

    // The fix the condition names: the pod's own id.
    let rolled = roll_after_the_fix(&g, &pod, (&key, id), &hash, (from, watch_from)).await?;
    let asked = ok_to_stop_calls(&g, log_from);
    println!(
        "==== a wrong osd-ids on an adopted pod: set up {:.1}s (3 hosts, reference pods \
         adopted); refused {:.1}s after the template change, held {}s with no OSD down, no \
         noout, no ok-to-stop; rolled {:.1}s after the fix ({} ok-to-stop calls)\n  CephGate: {} \
         {}: {}\n{}",
        setup.as_secs_f64(),
        refused_after.as_secs_f64(),
        HALT_HOLD.as_secs(),
        rolled.as_secs_f64(),
        asked.len(),
        refused.0,
        refused.1,
        refused.2,
        g.report(from)
    );
    g.down().await
}

/// The fix the refusal names (the pod's own id, `key`'s `id`): the rollout completes, one
/// host at a time, the first host's step on exactly that id. Its time from the fix.
async fn roll_after_the_fix(
    g: &Gated,
    pod: &k8s_openapi::api::core::v1::Pod,
    (key, id): (&ceph_osd_operator::OsdKey, u32),
    hash: &str,
    (from, watch_from): (Duration, usize),
) -> anyhow::Result<Duration> {
    let t_fix = Instant::now();
    g.annotate_pod(pod, labels::OSD_IDS, &id.to_string())
        .await?;
    g.s.wait_converged(CR, &g.want, hash, ROLLOUT)
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let rolled = t_fix.elapsed();
    let recording = g.ceph.recording();
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{}", g.report(from));
    recording.check_one_host_at_a_time(from).map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    recording.check_no_noout_at_end().map_err(fail)?;
    g.s.assert_one_pod_per_key().await.map_err(fail)?;
    (g.s.recorder()?)
        .assert_unavailable_domains_at_most(&g.want, UpdateDomain::Host, 1, watch_from)
        .map_err(fail)?;
    g.bridge.check().map_err(fail)?;
    // The step on the first host opened on exactly its own OSD.
    let key_text = key.to_string();
    let step = (g.gate.samples().into_iter())
        .filter(|s| s.at >= from)
        .find_map(|s| s.step.filter(|(keys, _)| keys.contains(&key_text)));
    anyhow::ensure!(
        step.as_ref().is_some_and(|(_, ids)| *ids == [id]),
        "the step on {key}: {step:?}\n{}",
        g.report(from)
    );
    Ok(rolled)
}
