//! Adoption without annotations, end to end over real OSD daemons: a cluster whose daemons were
//! started the way the reference operator's pods start them (`NODE_NAME` the node, in a
//! container, no `POD_NAME`; CRUSH host the node), its pods laid before the operator runs and
//! adopted, then rolled with the gate on: first the first host alone (`updateDomain: Host`,
//! `partition` holding the others), then the rest one OSD at a time.
//!
//! - BlueStore on loop devices (the CephOSD lists `/dev/loopN`, Ceph's metadata names each
//!   loop device): every step's ids come from Ceph's own words (node and data device), no
//!   annotation, no `CephOsdIdUnknown`, the ids learnt in `status.osdIds`.
//! - BlueStore on files (no device of its own in the metadata): the first host's two OSDs are
//!   its set of free daemons, exact for a step of the whole host; one OSD at a time on a host
//!   of two halts with both candidates and the exact `kubectl annotate` that resolves it; the
//!   other OSD of that host is then the one left, the single OSD of the last host its own.
//!
//! Each rollout is checked in Ceph's view (one host down at a most, no PG unavailable, no
//! `noout` left) and in the pod watch (one pod per disk, one host without its Ready pods at a
//! time), and each step opened on exactly the ids of its keys. Needs the local control plane,
//! a built operator, Ceph's daemons and root (loop devices).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::{labels, OsdKey};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use molecule_like_tests::journeys::gated::{GateSample, Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::hold;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::pods::{is_ready, pod_key};
use serde_json::json;

/// How long a halt is watched for pods going down.
const HALT_HOLD: Duration = Duration::from_secs(8);
/// One host's step and its end (~20 s), with room for a slow shared machine.
const ONE_HOST: Duration = Duration::from_mins(2);
/// The steps one OSD at a time after the first host (~20 s each).
const THE_REST: Duration = Duration::from_mins(6);

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// A step as the gate's samples first show it open.
#[derive(Clone, Debug)]
struct Step {
    at: Duration,
    keys: Vec<String>,
    ids: Vec<u32>,
}

/// Each step opened since `from` (in order), from the gate's samples.
fn steps_since(samples: &[GateSample], from: Duration) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for s in samples.iter().filter(|s| s.at >= from) {
        if let Some((keys, ids)) = &s.step {
            if steps
                .last()
                .is_none_or(|l| l.keys != *keys || l.ids != *ids)
            {
                steps.push(Step {
                    at: s.at,
                    keys: keys.clone(),
                    ids: ids.clone(),
                });
            }
        }
    }
    steps
}

/// Every step since `from` opened on exactly the ids of its keys (the daemons that run them).
fn check_steps_exact(g: &Gated, from: Duration) -> anyhow::Result<Vec<Step>> {
    let steps = steps_since(&g.gate.samples(), from);
    for Step { at, keys, ids } in &steps {
        let mut want: Vec<u32> = keys
            .iter()
            .map(|k| {
                g.table
                    .iter()
                    .find(|(key, _)| key.to_string() == *k)
                    .map(|(_, id)| *id)
                    .ok_or_else(|| anyhow::anyhow!("a step on unknown key {k}"))
            })
            .collect::<anyhow::Result<_>>()?;
        want.sort_unstable();
        anyhow::ensure!(
            *ids == want,
            "the step at {} on {keys:?} opened on osd ids {ids:?}, but those disks run {want:?}\n\
             gate status:\n{}",
            secs(*at),
            g.gate.render()
        );
    }
    Ok(steps)
}

/// No `CephOsdIdUnknown` in the gate's samples since `from` (before `until`).
fn check_never_unknown(g: &Gated, from: Duration, until: Duration) -> anyhow::Result<()> {
    let samples = g.gate.samples();
    if let Some(s) = samples.iter().find(|s| {
        s.at >= from
            && s.at < until
            && s.condition
                .as_ref()
                .is_some_and(|(_, r, _)| r == "CephOsdIdUnknown")
    }) {
        anyhow::bail!(
            "CephOsdIdUnknown at {}: {:?}\ngate status:\n{}",
            secs(s.at),
            s.condition,
            g.gate.render()
        );
    }
    Ok(())
}

/// Ceph's view and the pod watch since `from` / `watch_from`, and the bridge's rules.
async fn check_rollout(g: &Gated, from: Duration, watch_from: usize) -> anyhow::Result<()> {
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    let recording = g.ceph.recording();
    recording.check_hosts_down_at_most(1, from).map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    recording.check_no_noout_at_end().map_err(fail)?;
    g.s.assert_one_pod_per_key().await.map_err(fail)?;
    g.s.recorder()?
        .assert_unavailable_domains_at_most(&g.want, UpdateDomain::Host, 1, watch_from)
        .map_err(fail)?;
    g.bridge.check().map_err(fail)
}

/// What Ceph's metadata says of each OSD: no pod, the node as `hostname`.
async fn check_reported_as_reference(g: &Gated) -> anyhow::Result<()> {
    for (key, id) in &g.table {
        let m = g.cluster.osd_metadata(*id).await?;
        anyhow::ensure!(
            m["pod_name"].as_str().is_none_or(str::is_empty)
                && m["hostname"].as_str() == Some(key.host.as_str()),
            "osd.{id} ({key}) reports {m}"
        );
    }
    Ok(())
}

/// The first host in rollout order rolled alone (a template change with `partition` holding
/// the others): waits until its pods run the new template and the gate is idle. Returns the
/// template hash and when the change was made.
async fn roll_first_host(g: &Gated) -> anyhow::Result<(String, Duration)> {
    let hosts: BTreeSet<&str> = g.want.iter().map(|k| k.host.as_str()).collect();
    g.s.patch_spec(CR, json!({"partition": hosts.len() - 1}))
        .await?;
    let changed = g.ceph.elapsed();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let first = *hosts.first().unwrap();
    // The first host's pods on the new template and Ready, the others Ready on the old.
    g.s.wait_until(
        "the first host's pods updated and Ready, the others held",
        ONE_HOST,
        || async {
            let pods = g.s.owned_pods(CR).await?;
            let live: Vec<&Pod> = pods
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .collect();
            let settled = live.len() == g.want.len()
                && live.iter().all(|p| {
                    let first_host = pod_key(p).is_some_and(|k| k.host == first);
                    let updated = p.annotations().get(labels::TEMPLATE_HASH) == Some(&hash);
                    is_ready(p) && updated == first_host
                });
            Ok(settled.then_some(()))
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(changed)))?;
    g.wait_gate_idle(ONE_HOST).await?;
    Ok((hash, changed))
}

/// The rest one OSD at a time (`updateDomain: OSD`, no partition).
async fn release_by_osd(g: &Gated) -> anyhow::Result<Duration> {
    g.s.patch_spec(CR, json!({"updateDomain": "OSD", "partition": null}))
        .await?;
    Ok(g.ceph.elapsed())
}

/// The ids of every `osd ok-to-stop` the operator asked (its debug log of `ceph` calls), from
/// byte `from` of its log to byte `to`.
fn ok_to_stop_asked(g: &Gated, from: usize, to: usize) -> Vec<Vec<u32>> {
    let log = g.s.operator_log();
    log.get(from..to.min(log.len()))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once("ceph call command=osd ok-to-stop"))
        .map(|(_, rest)| {
            rest.split_whitespace()
                .map_while(|w| w.parse().ok())
                .collect()
        })
        .collect()
}

/// The first host rolled (see [`roll_first_host`]) in one step of its two OSDs, each step
/// exact. Returns the new template's hash, where the rollout began, how long it took, and
/// its steps.
async fn first_host_in_one_step(
    g: &Gated,
) -> anyhow::Result<(String, Duration, Duration, Vec<Step>)> {
    let t_roll = Instant::now();
    let (hash, from) = roll_first_host(g).await?;
    let by_host = t_roll.elapsed();
    let host_steps = check_steps_exact(g, from)?;
    anyhow::ensure!(
        host_steps.len() == 1 && host_steps[0].keys.len() == 2,
        "one step of the first host's two OSDs expected:\n{}",
        render_steps(&host_steps)
    );
    Ok((hash, from, by_host, host_steps))
}

fn render_steps(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("  {} step {:?} on osd {:?}\n", secs(s.at), s.keys, s.ids))
        .collect()
}

#[tokio::test]
async fn adopted_osds_on_loop_devices_roll_by_host_and_by_osd_from_cephs_own_words(
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up_with(
        "adopt-loop",
        &GatedOptions {
            data: &["first", "second"],
            loop_devices: true,
            adopt: true,
            ..GatedOptions::default()
        },
    )
    .await?;
    let setup = t0.elapsed();
    check_reported_as_reference(&g).await?;
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(
        status.osd_ids.is_empty(),
        "ids recorded before any step: {:?}",
        status.osd_ids
    );
    let watch_from = g.s.pod_watch_mark().await?;

    let (hash, from, by_host, host_steps) = first_host_in_one_step(&g).await?;
    // Every key the operator runs was mapped at the first question, and recorded.
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    let want_ids: BTreeMap<String, Vec<u32>> = g
        .table
        .iter()
        .map(|(k, id)| (k.to_string(), vec![*id]))
        .collect();
    anyhow::ensure!(
        status.osd_ids == want_ids,
        "status.osdIds {:?}, expected {want_ids:?}",
        status.osd_ids
    );

    let t_osd = Instant::now();
    let released = release_by_osd(&g).await?;
    g.s.wait_converged(CR, &g.want, &hash, THE_REST)
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    g.wait_gate_idle(ONE_HOST).await?;
    let by_osd = t_osd.elapsed();
    let osd_steps = check_steps_exact(&g, released)?;
    anyhow::ensure!(
        osd_steps.len() == 4 && osd_steps.iter().all(|s| s.keys.len() == 1),
        "four steps of one OSD each expected:\n{}",
        render_steps(&osd_steps)
    );
    check_never_unknown(&g, from, g.ceph.elapsed())?;
    check_rollout(&g, from, watch_from).await?;
    println!(
        "==== adopted, loop devices: set up {} (3 hosts × 2 BlueStore OSDs on loop devices, \
         reference pods adopted); the first host by host {}, the other 4 OSDs one by one {}; \
         no annotation, never CephOsdIdUnknown\n{}{}",
        secs(setup),
        secs(by_host),
        secs(by_osd),
        render_steps(&host_steps),
        render_steps(&osd_steps),
    );
    println!("{}", g.report(from));
    g.down().await
}

/// The pod of `key` that is not terminating.
async fn live_pod(g: &Gated, key: &OsdKey) -> anyhow::Result<Pod> {
    g.s.owned_pods(CR)
        .await?
        .into_iter()
        .find(|p| p.metadata.deletion_timestamp.is_none() && pod_key(p).as_ref() == Some(key))
        .ok_or_else(|| anyhow::anyhow!("no live pod of {key}"))
}

#[tokio::test]
async fn adopted_file_backed_osds_roll_by_host_as_a_set_and_by_osd_once_an_annotation_tells(
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up_with(
        "adopt-file",
        &GatedOptions {
            // Two OSDs on each of the first two hosts, one on the last.
            data_per_host: Some(&[
                &["/dev/sdb", "/dev/sdc"],
                &["/dev/sdb", "/dev/sdc"],
                &["/dev/sdb"],
            ]),
            adopt: true,
            ..GatedOptions::default()
        },
    )
    .await?;
    let setup = t0.elapsed();
    check_reported_as_reference(&g).await?;
    let watch_from = g.s.pod_watch_mark().await?;

    // The first host as one step: its two file-backed OSDs are the node's free set.
    let (hash, from, by_host, host_steps) = first_host_in_one_step(&g).await?;
    check_never_unknown(&g, from, g.ceph.elapsed())?;

    // One OSD at a time: the second host's two daemons cannot be told apart.
    let released = release_by_osd(&g).await?;
    let Halt {
        status,
        reason,
        message,
        halted,
        key,
        id,
        pod,
        log_at_annotation,
    } = halt_at_the_second_host(&g, &hash).await?;

    // The admin runs the command the condition gives, with the id the disk runs.
    let annotated = g.ceph.elapsed();
    g.annotate_pod(&pod, labels::OSD_IDS, &id.to_string())
        .await?;
    g.s.wait_converged(CR, &g.want, &hash, THE_REST)
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from)))?;
    g.wait_gate_idle(ONE_HOST).await?;
    let done = g.ceph.elapsed();
    let osd_steps = check_steps_exact(&g, released)?;
    anyhow::ensure!(
        osd_steps.len() == 3 && osd_steps.iter().all(|s| s.keys.len() == 1),
        "three steps of one OSD each expected:\n{}",
        render_steps(&osd_steps)
    );
    anyhow::ensure!(
        osd_steps[0].at > annotated && osd_steps[0].keys == [key.to_string()],
        "the first step by OSD ({:?}) before the annotation at {}",
        osd_steps[0],
        secs(annotated)
    );
    // After the annotation nothing else needed one; ok-to-stop asked about exactly each id.
    check_never_unknown(&g, annotated + Duration::from_secs(3), done)?;
    let asked = ok_to_stop_asked(&g, log_at_annotation, usize::MAX);
    for step in &osd_steps {
        anyhow::ensure!(
            asked.contains(&step.ids),
            "ok-to-stop never asked about exactly {:?}: {asked:?}",
            step.ids
        );
    }
    check_rollout(&g, from, watch_from).await?;
    Milestones::on_clock("adopted, file-backed", g.ceph.clock())
        .figure(
            "set up",
            format!(
                "{} (2 + 2 + 1 BlueStore files, reference pods adopted)",
                secs(setup)
            ),
        )
        .figure(
            "the first host by host",
            format!("{} (one step, its set)", secs(by_host)),
        )
        .mark_at(format!("by OSD: CephGate {status} {reason}"), halted)
        .figure("its message", &message)
        .figure("held", format!("{}s", HALT_HOLD.as_secs()))
        .mark_at("annotated", annotated)
        .mark_since("the rest done", done, "annotated")
        .section(
            "steps",
            format!("{}{}", render_steps(&host_steps), render_steps(&osd_steps)),
        )
        .section("records", g.report(from))
        .print();
    g.down().await
}

/// Where the rollout by OSD halted: `CephGate`'s words, when, the key it named, its OSD id
/// and live pod, and where the operator's log stood.
struct Halt {
    status: String,
    reason: String,
    message: String,
    halted: Duration,
    key: OsdKey,
    id: u32,
    pod: Pod,
    log_at_annotation: usize,
}

/// By OSD, the second host's two daemons cannot be told apart: `CephGate` False
/// `CephOsdIdUnknown` lists both and gives the `kubectl annotate` command for the key it
/// names; nothing of that host goes down meanwhile (the template `hash` not reached), and
/// `ok-to-stop` was never asked about either.
async fn halt_at_the_second_host(g: &Gated, hash: &str) -> anyhow::Result<Halt> {
    let hosts: Vec<&str> = g
        .want
        .iter()
        .map(|k| k.host.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let second: Vec<(&OsdKey, u32)> = g
        .table
        .iter()
        .filter(|(k, _)| k.host == hosts[1])
        .map(|(k, id)| (k, *id))
        .collect();
    let (status, reason, message) =
        g.s.wait_until(
            "CephGate False CephOsdIdUnknown listing the second host's two OSDs",
            ONE_HOST,
            || async {
                Ok(g.gate_condition().await?.filter(|(s, r, m)| {
                    s == "False"
                        && r == "CephOsdIdUnknown"
                        && second
                            .iter()
                            .all(|(_, id)| m.contains(&format!("osd.{id}")))
                }))
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\ngate status:\n{}", g.gate.render()))?;
    let halted = g.ceph.elapsed();
    // The key it names, and its pod.
    let (key, id) = second
        .iter()
        .copied()
        .find(|(k, _)| message.contains(&format!("the OSD id of {k}")))
        .ok_or_else(|| anyhow::anyhow!("the condition names no key of {}: {message}", hosts[1]))?;
    let pod = live_pod(g, key).await?;
    let command = format!(
        "kubectl annotate pod --overwrite -n {} {} {}=N",
        g.s.namespace,
        pod.name_any(),
        labels::OSD_IDS
    );
    anyhow::ensure!(
        message.contains(&command),
        "the condition does not give `{command}`: {message}"
    );
    // Nothing of that host goes down meanwhile.
    hold(HALT_HOLD, || async {
        for (k, _) in &second {
            let p = live_pod(g, k).await?;
            anyhow::ensure!(
                p.annotations()
                    .get(labels::TEMPLATE_HASH)
                    .map(String::as_str)
                    != Some(hash),
                "{k} rolled during the halt"
            );
        }
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        anyhow::ensure!(
            status.ceph_step.is_none(),
            "a step opened during the halt: {:?}",
            status.ceph_step
        );
        Ok(())
    })
    .await?;

    // Ceph was never asked about either of them.
    let log_at_annotation = g.s.operator_log().len();
    let asked = ok_to_stop_asked(g, 0, log_at_annotation);
    anyhow::ensure!(
        !asked.is_empty()
            && asked
                .iter()
                .all(|ids| second.iter().all(|(_, id)| !ids.contains(id))),
        "ok-to-stop asked about {asked:?} before the annotation (the second host runs {second:?})"
    );

    Ok(Halt {
        status,
        reason,
        message,
        halted,
        key: key.clone(),
        id,
        pod,
        log_at_annotation,
    })
}
