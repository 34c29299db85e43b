//! Pods Ceph cannot tie to an OSD (never booted, a daemon naming no pod): not stopped
//! until an admin states the id.

use std::time::{Duration, Instant};

use ceph_osd_operator::{labels, OsdKey};
use k8s_openapi::api::core::v1::Pod;
use kube::api::DeleteParams;
use kube::ResourceExt;
use molecule_like_tests::journeys::bridge::OSD_UP_ANNOTATION;
use molecule_like_tests::journeys::gated::{GateSample, Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::{hold, CONVERGE, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::pods::{is_ready, pod_key};
use serde_json::json;

use crate::common::{at, ceph_calls, check_pod_watch, report, wait_condition, Gate, HALT_HOLD};

/// Long enough for the steps of three hosts before the key under test (~20 s a host).
const UNTIL_ITS_TURN: Duration = Duration::from_mins(4);

/// The live (not terminating) pod of `key`, if one.
async fn pod_of(g: &Gated, key: &OsdKey) -> anyhow::Result<Option<Pod>> {
    Ok(g.s
        .owned_pods(CR)
        .await?
        .into_iter()
        .find(|p| p.metadata.deletion_timestamp.is_none() && pod_key(p).as_ref() == Some(key)))
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("-")
}

/// The OSD ids an `osd ok-to-stop` call asked about (a line of [`ceph_calls`]).
fn ok_to_stop_ids(line: &str) -> Vec<u32> {
    line.split("osd ok-to-stop")
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .map_while(|w| w.parse().ok())
        .collect()
}

/// The first gate sample from `from` on whose open step has `key`.
fn step_with(samples: &[GateSample], key: &OsdKey, from: Duration) -> Option<GateSample> {
    let key = key.to_string();
    samples
        .iter()
        .find(|s| s.at >= from && s.step.as_ref().is_some_and(|(keys, _)| keys.contains(&key)))
        .cloned()
}

/// takes `key`, `CephGate` stays False with `reason`. Fails at the first breach.
async fn check_halted_before(
    g: &Gated,
    key: &OsdKey,
    pod: &Pod,
    reason: &str,
    duration: Duration,
) -> anyhow::Result<()> {
    let key_text = key.to_string();
    hold(duration, || async {
        let now = g.s.pods.get_opt(&pod.name_any()).await?;
        anyhow::ensure!(
            now.as_ref()
                .is_some_and(|p| p.uid() == pod.uid() && p.metadata.deletion_timestamp.is_none()),
            "pod {} of {key} went down during the halt\ngate status:\n{}",
            pod.name_any(),
            g.gate.render()
        );
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        anyhow::ensure!(
            !status
                .ceph_step
                .as_ref()
                .is_some_and(|s| s.keys.contains(&key_text)),
            "a step took {key} during the halt: {:?}",
            status.ceph_step
        );
        let c = g.gate_condition().await?;
        anyhow::ensure!(
            c.as_ref()
                .is_some_and(|(s, r, _)| s == "False" && r == reason),
            "CephGate is {c:?} during the halt, expected False {reason}\ngate status:\n{}",
            g.gate.render()
        );
        Ok(())
    })
    .await
}

/// A disk whose OSD never booted in its pod (the pod restarted while the disk's daemon could
/// not start; an admin marked the OSD out; the pod is Ready all the same, as with a readiness
/// probe that does not ask Ceph): no `osd metadata` names the pod, `status.osdIds` has no id
/// for it. A rollout by host halts at its turn, `CephGate` False `CephOsdIdUnknown` naming the
/// pod, and asks `ok-to-stop` about no id of it; once an admin states the id by annotation the
/// step runs (every id known and down: nothing to ask), the disk's next daemon boots and the
/// rollout completes, no PG unavailable.
#[tokio::test]
async fn a_ready_pod_whose_osd_never_booted_is_not_stopped_until_an_admin_states_its_id(
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up_with(
        "ids-never-booted",
        &GatedOptions {
            hosts: &["ceph-a", "ceph-b", "ceph-c", "ceph-d"],
            ..GatedOptions::default()
        },
    )
    .await?;
    let setup = t0.elapsed();
    // The last host in the rollout's order: three steps come first.
    let (key, id) = g.last_in_rollout_order();
    let mut m = Milestones::on_clock("a Ready pod whose OSD never booted", g.ceph.clock());
    m.span("set up", setup);
    let first = g.converged.pods[&key].clone();
    let pod = pod_that_never_booted(&g, &key, id, &first).await?;
    let name = pod.name_any();

    // The rollout: three hosts, then the halt at this one.
    let from = g.ceph.elapsed();
    let watch_from = g.s.pod_watch_mark().await?;
    let (hash, log_at_annotation) = halt_at_unknown_id(&g, &key, id, &pod, from, &mut m).await?;

    // The admin states the id.
    let annotated = m.mark("annotated");
    g.annotate_pod(&pod, labels::OSD_IDS, &id.to_string())
        .await?;
    let step =
        g.s.wait_until("a step on the disk", Duration::from_mins(1), || async {
            Ok(g.s
                .cr_status(CR)
                .await?
                .and_then(|s| s.ceph_step.filter(|st| st.keys.contains(&key.to_string()))))
        })
        .await?;
    m.mark_since(
        format!("step on osd.{id} opened"),
        g.ceph.elapsed(),
        "annotated",
    );
    anyhow::ensure!(
        step.osds.iter().map(|o| o.id).collect::<Vec<_>>() == [id] && step.noout == [id],
        "the step on {key} is {step:?}, expected osd.{id}"
    );
    // Its pod goes (no daemon to stop), then the disk's daemon may start again.
    g.s.wait_until(
        "the never-booted pod gone",
        Duration::from_mins(1),
        || async {
            Ok(g.s
                .pods
                .get_opt(&name)
                .await?
                .is_none_or(|p| p.uid() != pod.uid())
                .then_some(()))
        },
    )
    .await?;
    m.mark("pod gone");
    g.bridge.release(&key);
    let rolled = g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    m.mark_since("rollout done and gate idle", g.ceph.elapsed(), "annotated");

    let report = report(&g, from).await;
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    let recording = g.ceph.recording();
    recording
        .check_in_hosts_down_at_most(1, from)
        .map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    recording.check_no_noout_at_end().map_err(fail)?;
    check_pod_watch(&g, watch_from).await?;
    g.bridge.check().map_err(fail)?;
    // No daemon ever ran in the never-booted pod; its successor's did.
    let successor = rolled[&key].name_any();
    g.bridge
        .daemons_of(id, &[&first.name_any(), &successor])
        .map_err(fail)?;
    // No step on the disk before the admin's annotation.
    let samples = g.gate.samples();
    if let Some(s) = step_with(&samples, &key, from).filter(|s| s.at < annotated) {
        anyhow::bail!(
            "a step on {key} at {} before the annotation\n{report}",
            at(s.at)
        );
    }
    let mut asked_after = ceph_calls(&g, "osd ok-to-stop", log_at_annotation);
    if asked_after.is_empty() {
        asked_after.push(format!("  (none: osd.{id} was down, nothing to ask)"));
    }
    m.section(
        format!("ok-to-stop after the annotation (none about osd.{id} before it)"),
        asked_after.join("\n"),
    )
    .section("records", &report)
    .print();
    g.down().await
}

/// `key`'s disk gets a pod whose OSD never booted: its daemon withheld, its pod (`first`)
/// deleted and recreated by the operator, the OSD down and marked out (every PG clean on the
/// other hosts), then the new pod made Ready by hand (a probe that does not ask Ceph).
/// Returns that pod.
async fn pod_that_never_booted(
    g: &Gated,
    key: &OsdKey,
    id: u32,
    first: &Pod,
) -> anyhow::Result<Pod> {
    // The disk's daemon cannot start any more; its pod restarts: the operator recreates it.
    g.bridge.withhold(key);
    g.s.pods
        .delete(&first.name_any(), &DeleteParams::default())
        .await?;
    let pod =
        g.s.wait_until("the disk's pod recreated and Running", CONVERGE, || async {
            Ok(pod_of(g, key)
                .await?
                .filter(|p| p.uid() != first.uid() && phase(p) == "Running"))
        })
        .await?;
    let name = pod.name_any();
    g.wait_osd("the OSD down", id, Duration::from_mins(1), |o| !o.up)
        .await?;
    // The admin marks it out: its PGs re-replicate on the other hosts.
    g.cluster.cli(&["osd", "out", &id.to_string()]).await?;
    let out = g
        .wait_osd("the OSD out", id, Duration::from_mins(1), |o| !o.in_)
        .await?;
    let out_seen = out.osdmap.map(|(t, _)| t).unwrap_or_default();
    g.ceph
        .wait_until(
            "every PG active+clean after the out",
            Duration::from_mins(2),
            |v| {
                v.pgs
                    .as_ref()
                    .is_some_and(|(t, p)| *t > out_seen + Duration::from_secs(2) && p.all_clean())
            },
        )
        .await?;
    // Ready as far as Kubernetes knows (a probe that does not ask Ceph).
    g.annotate_pod(&pod, OSD_UP_ANNOTATION, "true").await?;
    g.s.wait_until("the pod Ready", CONVERGE, || async {
        Ok(g.s
            .pods
            .get_opt(&name)
            .await?
            .filter(|p| p.uid() == pod.uid() && is_ready(p)))
    })
    .await?;
    let metadata = g.cluster.osd_metadata(id).await?;
    println!(
        "osd.{id} of {key}: down and out, never booted in pod {name} (Ready); its metadata names \
         pod {:?}",
        metadata["pod_name"]
    );
    Ok(pod)
}

/// A template change: the three other hosts roll, then the rollout halts at `key`
/// (`CephGate` False `CephOsdIdUnknown` naming its pod, no id in `status.osdIds`), holds
/// (`HALT_HOLD`), and `ok-to-stop` was never asked about `id`. Returns the new template's
/// hash and where the operator's log stood.
async fn halt_at_unknown_id(
    g: &Gated,
    key: &OsdKey,
    id: u32,
    pod: &Pod,
    from: Duration,
    m: &mut Milestones,
) -> anyhow::Result<(String, usize)> {
    let name = pod.name_any();
    let t_roll = Instant::now();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let (gate_status, reason, message) = wait_condition(
        g,
        "CephGate False CephOsdIdUnknown naming the pod",
        UNTIL_ITS_TURN,
        |(s, r, m)| s == "False" && r == "CephOsdIdUnknown" && m.contains(&name),
    )
    .await?;
    let halted = g.ceph.elapsed();
    let halted_after = t_roll.elapsed();
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(
        !status.osd_ids.contains_key(&key.to_string()),
        "status.osdIds has an id for {key}: {:?}",
        status.osd_ids
    );
    // The other hosts rolled already.
    for other in g.want.iter().filter(|k| *k != key) {
        let p = pod_of(g, other).await?;
        anyhow::ensure!(
            p.as_ref()
                .is_some_and(|p| p.annotations().get(labels::TEMPLATE_HASH) == Some(&hash)),
            "{other} not rolled when the rollout halted at {key}\n{}",
            report(g, from).await
        );
    }
    check_halted_before(g, key, pod, "CephOsdIdUnknown", HALT_HOLD).await?;
    let log_at_annotation = g.s.operator_log().len();
    let asked_before = ceph_calls(g, "osd ok-to-stop", 0);
    anyhow::ensure!(
        asked_before
            .iter()
            .all(|l| !ok_to_stop_ids(l).contains(&id)),
        "ok-to-stop was asked about osd.{id} before its id was known:\n{}",
        asked_before.join("\n")
    );

    m.mark_at("halted", halted)
        .span(
            "halted after the template change (3 hosts rolled)",
            halted_after,
        )
        .figure(
            format!("CephGate {gate_status} {reason}"),
            message.replace('\n', " "),
        )
        .figure("status.osdIds", format!("{:?}", status.osd_ids))
        .figure("held", format!("{}s", HALT_HOLD.as_secs()))
        .figure("ok-to-stop calls before the annotation", asked_before.len());
    Ok((hash, log_at_annotation))
}

/// A disk whose daemon runs but names no pod (started without `POD_NAME`, as by an older
/// image): its pod is Ready, no `osd metadata` names it, `status.osdIds` has no id for it. A
/// rollout by host halts at its turn (`CephOsdIdUnknown` naming the pod); an admin's wrong
/// statements are not trusted (an id not in the osdmap: `CephOsdMissing`, though `ok-to-stop`
/// would say yes for it; another pod's id: unknown); the right one lets the rollout ask
/// `ok-to-stop` about exactly that id and complete, no PG unavailable.
#[tokio::test]
async fn a_ready_pod_whose_daemon_names_no_pod_is_not_stopped_until_an_admin_states_its_id(
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up_with(
        "ids-anonymous",
        &GatedOptions {
            anonymous: &["ceph-c"],
            ..GatedOptions::default()
        },
    )
    .await?;
    let mut m = Milestones::on_clock("a Ready pod whose daemon names no pod", g.ceph.clock());
    m.span("set up", t0.elapsed());
    let (key, id) = g.last_in_rollout_order();
    let pod = g.converged.pods[&key].clone();
    let name = pod.name_any();
    let metadata = g.cluster.osd_metadata(id).await?;
    anyhow::ensure!(
        metadata["pod_name"].as_str().is_none_or(str::is_empty),
        "osd.{id} reports pod {:?}",
        metadata["pod_name"]
    );

    let from = g.ceph.elapsed();
    let t_roll = Instant::now();
    let watch_from = g.s.pod_watch_mark().await?;
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let unknown = wait_condition(
        &g,
        "CephGate False CephOsdIdUnknown naming the pod",
        UNTIL_ITS_TURN,
        |(s, r, m)| s == "False" && r == "CephOsdIdUnknown" && m.contains(&name),
    )
    .await?;
    let halted_after = t_roll.elapsed();
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(
        !status.osd_ids.contains_key(&key.to_string()),
        "status.osdIds has an id for {key}: {:?}",
        status.osd_ids
    );
    check_halted_before(&g, &key, &pod, "CephOsdIdUnknown", HALT_HOLD).await?;
    m.span("halted after the template change", halted_after)
        .figure("status.osdIds", format!("{:?}", status.osd_ids))
        .figure("no statement: CephGate", shown(&unknown));

    let (log_at_annotation, asked_before) =
        wrong_statements_not_trusted(&g, &key, &pod, id, &mut m).await?;

    // The right id.
    let annotated = m.mark(format!("osd.{id} stated"));
    g.annotate_pod(&pod, labels::OSD_IDS, &id.to_string())
        .await?;
    let rolled = g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    m.mark_since(
        "rollout done and gate idle",
        g.ceph.elapsed(),
        &format!("osd.{id} stated"),
    );

    let report = report(&g, from).await;
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    let recording = g.ceph.recording();
    recording.check_one_host_at_a_time(from).map_err(fail)?;
    check_pod_watch(&g, watch_from).await?;
    g.bridge.check().map_err(fail)?;
    let samples = g.gate.samples();
    let step = step_with(&samples, &key, from)
        .ok_or_else(|| anyhow::anyhow!("no step on {key}\n{report}"))?;
    anyhow::ensure!(
        step.at > annotated && step.step.as_ref().is_some_and(|(_, ids)| *ids == [id]),
        "the step on {key}: {step:?} (annotated at {})\n{report}",
        at(annotated)
    );
    let asked_after = ceph_calls(&g, "osd ok-to-stop", log_at_annotation);
    anyhow::ensure!(
        asked_after.iter().any(|l| ok_to_stop_ids(l) == [id]),
        "ok-to-stop never asked about exactly osd.{id} after the annotation:\n{}\n{report}",
        asked_after.join("\n")
    );
    let successor = rolled[&key].name_any();
    g.bridge
        .daemons_of(id, &[&name, &successor])
        .map_err(fail)?;
    m.mark_at("step opened", step.at)
        .figure(
            "ok-to-stop before the right statement",
            format!(
                "{} calls, none about osd.{id} or osd.99",
                asked_before.len()
            ),
        )
        .section("ok-to-stop after it", asked_after.join("\n"))
        .section("records", &report)
        .print();
    g.down().await
}

/// An admin's wrong statements about `key`'s pod are not trusted: an id Ceph does not have
/// (`ok-to-stop` would say yes for it) gives `CephOsdMissing`, another pod's up id
/// `CephOsdIdUnknown` naming that pod; the rollout stays halted, and `ok-to-stop` was never
/// asked about `id` or the missing id. Returns where the operator's log stood and the
/// `ok-to-stop` calls so far.
async fn wrong_statements_not_trusted(
    g: &Gated,
    key: &OsdKey,
    pod: &Pod,
    id: u32,
    m: &mut Milestones,
) -> anyhow::Result<(usize, Vec<String>)> {
    let (other_key, other_id) = g.first_in_rollout_order();
    // A statement of an id Ceph does not have: ok-to-stop would say yes; the gate does not ask.
    let missing = 99;
    g.annotate_pod(pod, labels::OSD_IDS, &missing.to_string())
        .await?;
    let not_in_map = wait_condition(
        g,
        "CephGate False CephOsdMissing naming osd.99",
        Duration::from_mins(1),
        |(s, r, m)| s == "False" && r == "CephOsdMissing" && m.contains(&format!("osd.{missing}")),
    )
    .await?;
    check_halted_before(g, key, pod, "CephOsdMissing", HALT_HOLD / 2).await?;
    m.figure(
        format!("osd.{missing} stated: CephGate"),
        shown(&not_in_map),
    );

    // Another pod's OSD: up in that pod, so not this one's.
    let other_pod = pod_of(g, &other_key).await?.unwrap().name_any();
    g.annotate_pod(pod, labels::OSD_IDS, &other_id.to_string())
        .await?;
    let in_other = wait_condition(
        g,
        "CephGate False CephOsdIdUnknown naming the other pod",
        Duration::from_mins(1),
        |(s, r, m)| {
            s == "False"
                && r == "CephOsdIdUnknown"
                && m.contains(&format!("osd.{other_id}"))
                && m.contains(&other_pod)
        },
    )
    .await?;
    check_halted_before(g, key, pod, "CephOsdIdUnknown", HALT_HOLD / 2).await?;
    m.figure(
        format!("osd.{other_id} (up in {other_pod}) stated: CephGate"),
        shown(&in_other),
    );
    let log_at_annotation = g.s.operator_log().len();
    let asked_before = ceph_calls(g, "osd ok-to-stop", 0);
    anyhow::ensure!(
        asked_before
            .iter()
            .all(|l| !ok_to_stop_ids(l).iter().any(|i| *i == id || *i == missing)),
        "ok-to-stop was asked about osd.{id} or osd.{missing} before the right statement:\n{}",
        asked_before.join("\n")
    );

    Ok((log_at_annotation, asked_before))
}

/// A `CephGate` condition in one line.
fn shown((status, reason, message): &Gate) -> String {
    format!("{status} {reason}: {message}")
}
