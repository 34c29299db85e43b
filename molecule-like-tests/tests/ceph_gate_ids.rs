//! The Ceph gate's OSD ids and its limits, end to end over real OSD daemons (the fixture of
//! `tests/ceph_gate.rs`): a pod whose OSD id the operator cannot tell is never stopped (Ceph's
//! `ok-to-stop` says yes for an id that does not exist), until an admin states its id by
//! annotation; a Ceph key without the caps the gate needs stops nothing and says Ceph refused;
//! `noout` held past `--ceph-max-noout-seconds` is cleared while the rollout stays halted.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios.rs`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`; the cluster installs them when missing).
//! Conditions are matched on `status`/`reason`, OSD names (`osd.3`) and pod names, not on
//! their sentences.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::{labels, OsdKey};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::DeleteParams;
use kube::ResourceExt;
use molecule_like_tests::journeys::bridge::OSD_UP_ANNOTATION;
use molecule_like_tests::journeys::gated::{GateSample, Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::{describe_events, hold, CONVERGE, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::pods::{is_ready, pod_key};
use serde_json::json;

/// How long a halt is watched for pods going down.
const HALT_HOLD: Duration = Duration::from_secs(8);
/// The operator's `--ceph-max-noout-seconds` in the noout scenario.
const MAX_NOOUT: u64 = 10;
/// Long enough for the steps of three hosts before the key under test (~20 s a host).
const UNTIL_ITS_TURN: Duration = Duration::from_mins(4);

/// The `CephGate` condition: (status, reason, message).
type Gate = (String, String, String);

/// Seconds on the recorders' clock.
fn at(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

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

/// Waits until `CephGate` satisfies `done`; the error shows the gate's record.
async fn wait_condition(
    g: &Gated,
    what: &str,
    timeout: Duration,
    done: impl Fn(&Gate) -> bool,
) -> anyhow::Result<Gate> {
    let r =
        g.s.wait_until(what, timeout, || async {
            Ok(g.gate_condition().await?.filter(|c| done(c)))
        })
        .await;
    r.map_err(|e| anyhow::anyhow!("{e:#}\ngate status:\n{}", g.gate.render()))
}

/// The command of an operator's `ceph call` log line (`osd ok-to-stop 2`).
fn call_command(line: &str) -> Option<&str> {
    let rest = line.split_once("ceph call command=")?.1;
    Some(rest.split_once(" elapsed=").map_or(rest, |(c, _)| c))
}

/// The operator's `ceph` calls (its debug log: time, command, exit code) whose command
/// contains `verb`, from byte `from` of its log on.
fn ceph_calls(g: &Gated, verb: &str, from: usize) -> Vec<String> {
    let log = g.s.operator_log();
    log.get(from..)
        .unwrap_or_default()
        .lines()
        .filter(|l| call_command(l).is_some_and(|c| c.contains(verb)))
        .map(|l| {
            let time = l.split_whitespace().next().unwrap_or_default();
            let exit = l.split_once("exit_code=").map_or("-", |(_, e)| e);
            format!(
                "  {time} ceph {} → exit {exit}",
                call_command(l).unwrap_or_default()
            )
        })
        .collect()
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

/// The CephOSD's events, one line each, with their series (how often the recorder published
/// one of that reason and type: a series keeps its first note).
async fn events_with_series(g: &Gated) -> String {
    let events = g.s.cr_events(CR).await.unwrap_or_default();
    let mut out = String::new();
    for (line, e) in describe_events(&events).lines().zip(&events) {
        out.push_str(line);
        if let Some(series) = &e.series {
            out.push_str(&format!(
                " series: count {}, last {}",
                series.count, series.last_observed_time.0
            ));
        }
        out.push('\n');
    }
    out
}

/// Everything recorded since `from`: Ceph's view, the bridge, the gate, the CephOSD's events.
async fn report(g: &Gated, from: Duration) -> String {
    format!(
        "{}CephOSD events:\n{}",
        g.report(from),
        events_with_series(g).await
    )
}

/// The first gate sample from `from` on whose open step has `key`.
fn step_with(samples: &[GateSample], key: &OsdKey, from: Duration) -> Option<GateSample> {
    let key = key.to_string();
    samples
        .iter()
        .find(|s| s.at >= from && s.step.as_ref().is_some_and(|(keys, _)| keys.contains(&key)))
        .cloned()
}

/// While a rollout halts before `key`: `key`'s pod stays (same uid, not terminating), no step
/// The pod watch since the template change (`from`: its event count then): never two pods
/// for one disk, never more than one host without a Ready pod of each of its OSDs.
async fn check_pod_watch(g: &Gated, from: usize) -> anyhow::Result<()> {
    g.s.assert_one_pod_per_key().await?;
    g.s.recorder()?
        .assert_unavailable_domains_at_most(&g.want, UpdateDomain::Host, 1, from)
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

/// The operator's key with `mon 'allow r'` only (`client.nocaps`): a template change takes no
/// pod down (held), `CephGate` False quoting Ceph's refusal (EACCES), a Warning event on the
/// CephOSD says so; the operator keeps running.
#[tokio::test]
async fn an_operator_key_without_the_needed_caps_stops_nothing_and_says_ceph_refused(
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up_with(
        "ids-nocaps",
        &GatedOptions {
            ceph_user: "client.nocaps",
            expect_idle: false,
            ..GatedOptions::default()
        },
    )
    .await?;
    let setup = t0.elapsed();
    let before = g.gate_condition().await?;
    let from = g.ceph.elapsed();
    let t_roll = Instant::now();
    let watch_from = g.s.pod_watch_mark().await?;
    g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let (status, reason, message) = wait_condition(
        &g,
        "CephGate False quoting Ceph's refusal",
        Duration::from_mins(1),
        |(s, _, m)| s == "False" && refused(m),
    )
    .await?;
    let said_after = t_roll.elapsed();
    hold_while_ceph_refuses(&g).await?;
    g.s.check_operator_alive()?;
    check_pod_watch(&g, watch_from).await?;
    let log = g.s.operator_log();
    anyhow::ensure!(!log.contains("panicked"), "the operator panicked:\n{log}");
    let events = g.s.cr_events(CR).await?;
    let warning = events
        .iter()
        .find(|e| e.type_.as_deref() == Some("Warning") && e.note.as_deref().is_some_and(refused));
    let report = report(&g, from).await;
    let warning = warning.ok_or_else(|| {
        anyhow::anyhow!("no Warning event quoting Ceph's refusal on the CephOSD\n{report}")
    })?;
    let recording = g.ceph.recording();
    recording
        .check_no_noout_at_end()
        .map_err(|e| anyhow::anyhow!("{e:#}\n{report}"))?;
    let calls = ceph_calls(&g, "", 0);
    let denied: Vec<&String> = calls
        .iter()
        .filter(|l| l.ends_with("Some(13)"))
        .take(3)
        .collect();
    let ok_to_stop = ceph_calls(&g, "ok-to-stop", 0);
    anyhow::ensure!(
        ok_to_stop.is_empty(),
        "ok-to-stop asked without Ceph's other answers:\n{}",
        ok_to_stop.join("\n")
    );
    Milestones::new("the operator's key without caps")
        .span("set up", setup)
        .figure("CephGate before the change", format!("{before:?}"))
        .span(
            format!("CephGate {status} {reason} after the template change"),
            said_after,
        )
        .figure("its message", message)
        .figure(
            format!("Warning event {}", warning.reason.as_deref().unwrap_or("-")),
            warning.note.as_deref().unwrap_or("-"),
        )
        .figure(
            format!("held {}s", HALT_HOLD.as_secs()),
            "no pod down, no step; operator alive",
        )
        .section(
            "its calls refused (first 3)",
            denied
                .iter()
                .map(|l| l.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )
        .section("records", &report)
        .print();
    g.down().await
}

/// Whether a message quotes Ceph's refusal of the key (EACCES).
fn refused(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("eacces") || m.contains("access denied") || m.contains("permission")
}

/// While Ceph refuses the operator's key ([`HALT_HOLD`]): no pod changes, no step opens,
/// `CephGate` stays False quoting the refusal.
async fn hold_while_ceph_refuses(g: &Gated) -> anyhow::Result<()> {
    let old: BTreeMap<String, Option<String>> = g
        .converged
        .pods
        .values()
        .map(|p| (p.name_any(), p.uid()))
        .collect();
    hold(HALT_HOLD, || async {
        for p in g.s.owned_pods(CR).await? {
            anyhow::ensure!(
                old.get(&p.name_any()) == Some(&p.uid()) && p.metadata.deletion_timestamp.is_none(),
                "pod {} changed without Ceph's answer\ngate status:\n{}",
                p.name_any(),
                g.gate.render()
            );
        }
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        anyhow::ensure!(status.ceph_step.is_none(), "a step opened: {status:?}");
        let c = g.gate_condition().await?;
        anyhow::ensure!(
            c.as_ref()
                .is_some_and(|(s, _, m)| s == "False" && refused(m)),
            "CephGate is {c:?} while Ceph refuses\ngate status:\n{}",
            g.gate.render()
        );
        Ok(())
    })
    .await?;
    Ok(())
}

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
