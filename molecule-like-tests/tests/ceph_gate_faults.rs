//! The Ceph gate under faults, end to end (the fixture of `tests/ceph_gate.rs`: a real Ceph
//! whose OSD daemons the bridge runs for KWOK's pods, the operator asking it before each step):
//!
//! - the mgr, then the mon, stopped while a step is under way: nothing more goes down, the
//!   `CephGate` condition says why, the rollout completes once they are back;
//! - the operator SIGKILLed between `noout` and clean: a new process finishes the step from
//!   the status, clears exactly its own `noout` (an admin's stays), completes the rollout;
//! - an OSD outside the step killed mid-rollout: the next step waits until it is back.
//!
//! Needs the local control plane, a built operator and Ceph's daemons (as `tests/ceph_gate.rs`).
//! The machine is shared: run one at a time (`--test-threads=1`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use ceph_osd_operator::crd::CephStep;
use ceph_osd_operator::OsdKey;
use kube::ResourceExt;
use molecule_like_tests::ceph::{OsdMap, OsdStart};
use molecule_like_tests::journeys::gated::{GateSample, Gated};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::hold;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::kubernetes::pods::pod_key;
use molecule_like_tests::recording::ceph::{hosts_down, CephRecording, Observed};
use molecule_like_tests::recording::pods::EventKind;
use serde_json::json;

/// Long waits: the machine is shared, a step takes ~20 s, a mgr back ~10 s more.
const LONG: Duration = Duration::from_mins(5);
/// How long a fault is held while checking that nothing more goes down.
const HELD: Duration = Duration::from_secs(12);

/// The `CephGate` condition's changes from `from` on: (when, status, reason, message).
fn condition_sequence(
    samples: &[GateSample],
    from: Duration,
) -> Vec<(Duration, String, String, String)> {
    let mut out: Vec<(Duration, String, String, String)> = Vec::new();
    for s in samples.iter().filter(|s| s.at >= from) {
        let Some((status, reason, message)) = &s.condition else {
            continue;
        };
        if out
            .last()
            .is_none_or(|(_, st, r, m)| st != status || r != reason || m != message)
        {
            out.push((s.at, status.clone(), reason.clone(), message.clone()));
        }
    }
    out
}

fn render_sequence(seq: &[(Duration, String, String, String)]) -> String {
    seq.iter()
        .map(|(at, status, reason, message)| {
            format!(
                "  {:>8.2}s {status} {reason}: {message}\n",
                at.as_secs_f64()
            )
        })
        .collect()
}

/// Waits until `status.cephStep` is present and `done` holds for it; returns it.
async fn wait_step(
    g: &Gated,
    what: &str,
    timeout: Duration,
    done: impl Fn(&CephStep) -> bool,
) -> anyhow::Result<CephStep> {
    g.s.wait_until(what, timeout, || async {
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        Ok(status.ceph_step.filter(|s| done(s)))
    })
    .await
    .map_err(|e| anyhow!("{e:#}\ngate status:\n{}", g.gate.render()))
}

/// A rollout started by a template change, its first step open with `noout`.
struct Started {
    /// When the template changed, on the Ceph recorder's clock.
    from: Duration,
    at: Instant,
    hash: String,
    step: CephStep,
}

async fn start_rollout(g: &Gated) -> anyhow::Result<Started> {
    let from = g.ceph.elapsed();
    let at = Instant::now();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let step = wait_step(g, "the first step open with noout", LONG, |s| {
        !s.noout.is_empty()
    })
    .await?;
    Ok(Started {
        from,
        at,
        hash,
        step,
    })
}

/// Waits until the `CephGate` condition satisfies `done(status, reason, message)`; returns it.
async fn wait_condition(
    g: &Gated,
    what: &str,
    timeout: Duration,
    done: impl Fn(&str, &str, &str) -> bool,
) -> anyhow::Result<(String, String, String)> {
    g.s.wait_until(what, timeout, || async {
        Ok(g.gate_condition()
            .await?
            .filter(|(status, reason, message)| done(status, reason, message)))
    })
    .await
    .map_err(|e| anyhow!("{e:#}\ngate status:\n{}", g.gate.render()))
}

/// Nothing went down beyond `step` (keys as `host:data`): each other key still has exactly its
/// converged pod, not terminating, and no step on another key is open.
async fn nothing_more_down(g: &Gated, step: &BTreeSet<String>, when: &str) -> anyhow::Result<()> {
    let pods = g.s.owned_pods(CR).await?;
    for (key, old) in &g.converged.pods {
        if step.contains(&key.to_string()) {
            continue;
        }
        let of_key: Vec<String> = pods
            .iter()
            .filter(|p| pod_key(p).as_ref() == Some(key))
            .map(|p| {
                let terminating = if p.metadata.deletion_timestamp.is_some() {
                    " (terminating)"
                } else {
                    ""
                };
                format!("{}{terminating}", p.name_any())
            })
            .collect();
        anyhow::ensure!(
            of_key == [old.name_any()],
            "{when}: the pods of {key} are {of_key:?}, expected its pod {} alone\ngate \
             status:\n{}{}",
            old.name_any(),
            g.gate.render(),
            g.bridge.render()
        );
    }
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    if let Some(open) = &status.ceph_step {
        anyhow::ensure!(
            open.keys.iter().all(|k| step.contains(k)),
            "{when}: a step on {:?} is open, only {step:?} may be\ngate status:\n{}",
            open.keys,
            g.gate.render()
        );
    }
    Ok(())
}

/// Never more than `max` CRUSH hosts down at once from `from` on, besides `except`.
fn check_hosts_down_besides(
    recording: &CephRecording,
    from: Duration,
    except: &str,
    max: usize,
) -> anyhow::Result<()> {
    for e in recording.events.iter().filter(|e| e.at >= from) {
        if let Observed::OsdMap(map) = &e.observed {
            let mut down = hosts_down(map);
            down.remove(except);
            anyhow::ensure!(
                down.len() <= max,
                "{} CRUSH hosts down at {:.2}s besides {except} (at most {max}): {down:?}",
                down.len(),
                e.at.as_secs_f64()
            );
        }
    }
    Ok(())
}

/// When the first osdmap sample from `from` on satisfied `done`.
fn first_map(
    recording: &CephRecording,
    from: Duration,
    done: impl Fn(&OsdMap) -> bool,
) -> Option<Duration> {
    recording.events.iter().find_map(|e| match &e.observed {
        Observed::OsdMap(map) if e.at >= from && done(map) => Some(e.at),
        _ => None,
    })
}

/// The operator log's lines about its start, the gate's answers, the steps, `noout`, pods
/// deleted and created, Ceph calls timed out (each reconcile's summary left out).
fn gate_log(g: &Gated) -> String {
    let words = [
        "press ctrl+c",
        "asked Ceph",
        "Ceph step",
        "noout",
        "deleted pod",
        "created pod",
        "timed out",
    ];
    g.s.operator_log()
        .lines()
        .filter(|l| !l.contains("reconciled cephosd") && words.iter().any(|w| l.contains(w)))
        .map(|l| format!("  {l}\n"))
        .collect()
}

/// When each OSD's first (converged) daemon was asked to stop, by the bridge's record.
fn old_daemon_stops(g: &Gated) -> BTreeMap<u32, Option<Duration>> {
    let daemons = g.bridge.daemons();
    g.table
        .values()
        .map(|id| {
            (
                *id,
                daemons
                    .get(id)
                    .and_then(|list| list.first())
                    .and_then(|d| d.stopping),
            )
        })
        .collect()
}

/// The mgr stopped once a step is under way, then the mon too: nothing more goes down while
/// they are away, `CephGate` says why, and the step's replacement (never gated) is not held
/// back: its pod is created within [`REPLACED_WITHIN`] of its old pod being gone, and its
/// daemon boots without the mgr (started 1.4-2.8 s after the old pod was gone, with a mgr and
/// an idle machine). Once the mon and then the mgr are back the rollout completes with one host
/// down at most, no PG unavailable, no `noout` left.
#[tokio::test]
async fn the_mgr_then_the_mon_away_mid_step_take_nothing_more_down_until_they_are_back(
) -> anyhow::Result<()> {
    Box::pin(mgr_then_mon_away("gatefault-mgr")).await
}

/// How long after its old pod is gone the operator may create the step's new pod: less than
/// the scenarios' `--ceph-timeout` (10 s), so no Ceph call that hangs without a mgr came first.
const REPLACED_WITHIN: Duration = Duration::from_secs(8);

/// The journey of the test above.
async fn mgr_then_mon_away(name: &str) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up(name).await?;
    let Started {
        from,
        at: t_roll,
        hash,
        step,
    } = start_rollout(&g).await?;
    let step_keys: BTreeSet<String> = step.keys.iter().cloned().collect();
    let mut m = Milestones::on_clock("mgr, then mon away mid-step", g.ceph.clock());
    m.figure(
        "step",
        format!(
            "on {step_keys:?} (osds {:?})",
            step.osds.iter().map(|o| o.id).collect::<Vec<_>>()
        ),
    );
    m.mark("step open");

    let (mgr_condition, mon_condition) =
        mgr_then_mon_away_mid_step(&g, &step, &step_keys, &mut m).await?;
    let mgr_started = m.moment("mgr back").unwrap_or_default();
    g.s.wait_converged(CR, &g.want, &hash, LONG).await?;
    g.wait_gate_idle(LONG).await?;
    let done = t_roll.elapsed();
    g.cluster.wait_clean(LONG).await?;

    let recording = g.ceph.recording();
    let sequence = condition_sequence(&g.gate.samples(), from);
    let report = format!(
        "{}CephGate sequence:\n{}",
        g.report(from),
        render_sequence(&sequence)
    );
    let fail = |e: anyhow::Error| anyhow!("{e:#}\n{report}");
    recording.check_one_host_at_a_time(from).map_err(fail)?;
    g.bridge.check().map_err(fail)?;
    g.check_pods_rolled_by_host().await.map_err(fail)?;
    check_others_stopped_after(&g, &step_keys, mgr_started, &report)?;
    let replaced = replacement_gaps(&g, &step);
    let recreated = recreation_gaps(&g, &step, from)?;
    m.figure(
        "the step's new daemons started after their old pods were gone",
        format!("{replaced:?}"),
    )
    .figure(
        "the step's new pods created after their old pods were gone",
        format!("{recreated:?}"),
    )
    .span("rollout done and gate idle after the template change", done)
    .section("CephGate sequence", render_sequence(&sequence))
    .section("records", &report)
    .print();
    // Last: what the condition said while they were away.
    mgr_condition.map_err(fail)?;
    mon_condition.map_err(fail)?;
    for (id, gap) in &replaced {
        anyhow::ensure!(
            gap.is_some(),
            "osd.{id}: no new daemon started after its old pod was gone, without a mgr\n{report}"
        );
    }
    for (key, gap) in &recreated {
        anyhow::ensure!(
            gap.is_some_and(|gap| gap <= REPLACED_WITHIN),
            "{key}: its new pod was created {gap:?} after its old pod was gone, without a mgr \
             (at most {REPLACED_WITHIN:?})\n{report}\noperator log:\n{}",
            gate_log(&g)
        );
    }
    println!("==== the scenario took {:.1}s", t0.elapsed().as_secs_f64());
    g.down().await
}

/// What `CephGate` said (status, reason, message), or that it never said it.
type Said = anyhow::Result<(String, String, String)>;

/// The faults of [`mgr_then_mon_away`] while `step` is open: the mgr stopped (the step's new
/// daemons boot without it), nothing more down for [`HELD`]; the mon stopped too, nothing more
/// down; then the mon and the mgr back (marked `mgr back`). Returns what `CephGate` said with
/// the mgr away, then with both away.
async fn mgr_then_mon_away_mid_step(
    g: &Gated,
    step: &CephStep,
    step_keys: &BTreeSet<String>,
    m: &mut Milestones,
) -> anyhow::Result<(Said, Said)> {
    // The mgr away (the mon told at once).
    g.cluster.mgr_stop(false).await?;
    m.mark("mgr stopped");
    // The step's own daemons come back without a mgr (a boot needs the mon only); the step
    // cannot end (PG states come from the mgr).
    let booted: Vec<(u32, u64)> = step.osds.iter().map(|o| (o.id, o.up_from)).collect();
    g.ceph
        .wait_until("the step's new daemons up", LONG, |v| {
            v.osdmap.as_ref().is_some_and(|(_, m)| {
                booted
                    .iter()
                    .all(|(id, before)| m.osd(*id).is_some_and(|o| o.up && o.up_from > *before))
            })
        })
        .await?;
    let mgr_condition =
        unavailable_and_held(g, step_keys, "the mgr is away", "mgr", "mgr away", m).await?;

    // The mon away too: nothing answers.
    g.cluster.mon_stop().await?;
    m.mark("mon stopped");
    let mon_condition = unavailable_and_held(
        g,
        step_keys,
        "Ceph does not answer",
        "answer",
        "mon and mgr away",
        m,
    )
    .await?;

    // Back: the mon, then the mgr.
    g.cluster.mon_start().await?;
    m.mark("mon back");
    g.cluster.mgr_start().await?;
    m.mark("mgr back");
    Ok((mgr_condition, mon_condition))
}

/// With part of Ceph away (`away`): `CephGate` says so (False `CephUnavailable`, `word` in its
/// message; `saying` in the error), and nothing more goes down for [`HELD`]. Returns what it
/// said; both in the milestones.
async fn unavailable_and_held(
    g: &Gated,
    step_keys: &BTreeSet<String>,
    saying: &str,
    word: &str,
    away: &str,
    m: &mut Milestones,
) -> anyhow::Result<Said> {
    let said = wait_condition(
        g,
        &format!("CephGate saying {saying}"),
        Duration::from_mins(1),
        |status, reason, message| {
            status == "False" && reason == "CephUnavailable" && message.contains(word)
        },
    )
    .await;
    hold(HELD, || nothing_more_down(g, step_keys, away)).await?;
    let held = g.gate_condition().await?;
    m.figure(
        format!("CephGate, {away}"),
        format!("{:?}", said.as_ref().map_err(|_| "never said")),
    )
    .figure(
        format!("still, after {}s ({away})", HELD.as_secs()),
        format!("{held:?}"),
    );
    Ok(said)
}

/// No OSD outside the step was asked to stop before `after` (the mgr back).
fn check_others_stopped_after(
    g: &Gated,
    step_keys: &BTreeSet<String>,
    after: Duration,
    report: &str,
) -> anyhow::Result<()> {
    for (key, id) in &g.table {
        if step_keys.contains(&key.to_string()) {
            continue;
        }
        let stop = old_daemon_stops(g)[id];
        anyhow::ensure!(
            stop.is_some_and(|s| s > after),
            "osd.{id} ({key}) was stopped at {stop:?}, the mgr back only at {:.2}s\n{report}",
            after.as_secs_f64()
        );
    }
    Ok(())
}

/// The step's replacements: per OSD, from its old pod gone to its new daemon started.
fn replacement_gaps(g: &Gated, step: &CephStep) -> Vec<(u32, Option<Duration>)> {
    let daemons = g.bridge.daemons();
    step.osds
        .iter()
        .map(|o| {
            let list = daemons.get(&o.id).cloned().unwrap_or_default();
            let gap = list
                .first()
                .and_then(|old| old.gone)
                .zip(list.get(1).and_then(|new| new.started))
                .map(|(gone, started)| started.saturating_sub(gone));
            (o.id, gap)
        })
        .collect()
}

/// For each key of `step`: how long after its old pod was gone (deleted, in the pod watch,
/// from `from` on) its new pod was created.
fn recreation_gaps(
    g: &Gated,
    step: &CephStep,
    from: Duration,
) -> anyhow::Result<Vec<(String, Option<Duration>)>> {
    let events = g.s.recorder()?.events();
    let first = |key: &str, kind: EventKind, after: usize| {
        (events.iter()).find(|e| {
            e.seq >= after
                && e.at >= from
                && e.kind == kind
                && pod_key(&e.pod).is_some_and(|k| k.to_string() == key)
        })
    };
    Ok((step.keys.iter())
        .map(|key| {
            let gone = first(key, EventKind::Deleted, 0);
            let created = gone.and_then(|gone| first(key, EventKind::Added, gone.seq));
            let gap = gone
                .zip(created)
                .map(|(gone, created)| created.at.saturating_sub(gone.at));
            (key.clone(), gap)
        })
        .collect())
}

/// The operator SIGKILLed while its step's OSD is down with `noout`: a new process finishes
/// that step from `status.cephStep` (the new daemon booted, the step's `noout` cleared),
/// completes the rollout with one host down at most and no PG unavailable, and leaves the
/// `noout` an admin set on an OSD of no step untouched.
#[tokio::test]
async fn an_operator_killed_between_noout_and_clean_is_finished_by_the_next_one(
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let mut g = Gated::up("gatefault-kill").await?;
    // An OSD no pod runs, on a CRUSH host of its own, holding no PG, with the admin's noout.
    let (admin_osd, admin_noout) = admin_noout_osd(&g).await?;
    g.wait_gate_idle(LONG).await?;

    let Started {
        from,
        at: t_roll,
        hash,
        step,
    } = start_rollout(&g).await?;
    let step_ids: Vec<u32> = step.osds.iter().map(|o| o.id).collect();
    // Its pods deleted: Ceph shows its OSDs down, with noout.
    g.ceph
        .wait_until("the step's OSDs down with noout", LONG, |v| {
            v.osdmap.as_ref().is_some_and(|(_, m)| {
                step_ids
                    .iter()
                    .all(|id| m.osd(*id).is_some_and(|o| !o.up && o.noout))
            })
        })
        .await?;
    g.s.stop_operator();
    let killed = g.ceph.elapsed();
    let status_at_kill = g.s.cr_status(CR).await?.unwrap_or_default();
    let args = g.operator_args.clone();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    g.s.start_operator_with_args(&OperatorOptions::default(), &args)?;
    let restarted = g.ceph.elapsed();

    g.s.wait_converged(CR, &g.want, &hash, LONG).await?;
    g.wait_gate_idle(LONG).await?;
    let done = t_roll.elapsed();
    g.cluster.wait_clean(LONG).await?;
    // The latest osdmap sample after the end: only the admin's noout.
    let settled = g.ceph.elapsed();
    g.ceph
        .wait_until("an osdmap sample after the end", LONG, |v| {
            v.osdmap.as_ref().is_some_and(|(at, _)| *at > settled)
        })
        .await?;

    let recording = g.ceph.recording();
    let sequence = condition_sequence(&g.gate.samples(), from);
    let report = format!(
        "{}CephGate sequence:\n{}operator log (starts, steps, noout):\n{}",
        g.report(from),
        render_sequence(&sequence),
        gate_log(&g)
    );
    let fail = |e: anyhow::Error| anyhow!("{e:#}\n{report}");
    recording.check_hosts_down_at_most(1, from).map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    g.bridge.check().map_err(fail)?;
    g.check_pods_rolled_by_host().await.map_err(fail)?;

    check_admin_noout_kept(&recording, from, admin_osd, &admin_noout).map_err(fail)?;

    // The killed operator's step, finished by the next one.
    let lines = check_step_finished(&g, &recording, from, &step_ids, restarted).map_err(fail)?;
    // The new operator kept the killed one's step, the same keys, until it ended.
    let samples = g.gate.samples();
    let first_other = samples.iter().filter(|s| s.at >= killed).find(|s| {
        s.step
            .as_ref()
            .is_some_and(|(keys, _)| !keys.iter().all(|k| step.keys.contains(k)))
    });
    let mut m = Milestones::on_clock("operator SIGKILLed mid-step", g.ceph.clock());
    m.figure(
        "step",
        format!(
            "on {:?} (osds {step_ids:?}, noout {:?}) open",
            step.keys, step.noout
        ),
    )
    .mark_at("killed", killed)
    .figure(
        "status.cephStep at the kill",
        format!("{:?}", status_at_kill.ceph_step.map(|s| (s.keys, s.noout))),
    )
    .mark_at("new operator started", restarted)
    .figure(
        "next step",
        format!("{:?}", first_other.map(|s| (s.at, s.step.clone()))),
    )
    .span("rollout done and gate idle after the template change", done)
    .figure("admin's noout kept", &admin_noout)
    .section("the step's OSDs", lines.join("\n"))
    .section("CephGate sequence", render_sequence(&sequence))
    .section("records", &report)
    .print();
    println!("==== the scenario took {:.1}s", t0.elapsed().as_secs_f64());
    g.down().await
}

/// An OSD no pod runs, on a CRUSH host of its own, up and in at CRUSH weight 0 (no PG) with the
/// admin's `noout`, every PG clean. Returns its id and its `noout` entry.
async fn admin_noout_osd(g: &Gated) -> anyhow::Result<(u32, String)> {
    let admin_host = g.s.host("ceph-admin");
    let admin_osd = g.cluster.osd_create(&admin_host).await?;
    g.cluster
        .osd_start(
            admin_osd,
            &OsdStart {
                host: &admin_host,
                ..OsdStart::default()
            },
        )
        .await?;
    g.ceph
        .wait_until("the admin's OSD up", LONG, |v| {
            v.osdmap
                .as_ref()
                .is_some_and(|(_, m)| m.osd(admin_osd).is_some_and(|o| o.up && o.in_))
        })
        .await?;
    // Weight 0: it holds no PG, so Ceph lets it stop together with any step (a step is asked
    // about together with every OSD carrying noout).
    let name = format!("osd.{admin_osd}");
    g.cluster
        .cli(&["osd", "crush", "reweight", &name, "0"])
        .await?;
    g.cluster.wait_clean(LONG).await?;
    let admin_noout = g.add_admin_noout(admin_osd, LONG).await?;
    Ok((admin_osd, admin_noout))
}

/// The admin's `noout` on `admin_osd` in every osdmap sample from `from`, and alone at the end.
fn check_admin_noout_kept(
    recording: &CephRecording,
    from: Duration,
    admin_osd: u32,
    admin_noout: &str,
) -> anyhow::Result<()> {
    for e in recording.events.iter().filter(|e| e.at >= from) {
        if let Observed::OsdMap(map) = &e.observed {
            anyhow::ensure!(
                map.osd(admin_osd).is_some_and(|o| o.noout),
                "the admin's noout on osd.{admin_osd} was gone at {:.2}s",
                e.at.as_secs_f64()
            );
        }
    }
    let last = recording
        .events
        .iter()
        .rev()
        .find_map(|e| match &e.observed {
            Observed::OsdMap(m) => Some(m),
            _ => None,
        })
        .ok_or_else(|| anyhow!("no osdmap recorded"))?;
    anyhow::ensure!(
        last.noout() == [admin_noout.to_owned()],
        "noout at the end on {:?}, expected on {admin_noout} alone",
        last.noout()
    );

    Ok(())
}

/// The killed operator's step (`step_ids`), finished by the next one (started at
/// `restarted`): its OSDs' new daemons booted (one new daemon each), `noout` held on them
/// until then, and only then another OSD stopped. Returns a line per OSD.
fn check_step_finished(
    g: &Gated,
    recording: &CephRecording,
    from: Duration,
    step_ids: &[u32],
    restarted: Duration,
) -> anyhow::Result<Vec<String>> {
    let daemons = g.bridge.daemons();
    let stops = old_daemon_stops(g);
    let mut lines = Vec::new();
    for id in step_ids {
        let list = daemons.get(id).cloned().unwrap_or_default();
        anyhow::ensure!(
            list.len() == 2,
            "osd.{id}: {} daemons, expected the old and one new",
            list.len()
        );
        let (booted_at, up_from) = list[1]
            .booted
            .ok_or_else(|| anyhow!("osd.{id}: the new daemon never booted"))?;
        let noout_cleared = first_map(recording, booted_at, |m| {
            m.osd(*id).is_some_and(|o| !o.noout)
        });
        let noout_gone_early = first_map(recording, from, |m| m.osd(*id).is_some_and(|o| o.noout))
            .and_then(|set| first_map(recording, set, |m| m.osd(*id).is_some_and(|o| !o.noout)))
            .filter(|cleared| *cleared < booted_at);
        anyhow::ensure!(
            noout_gone_early.is_none(),
            "osd.{id}: noout cleared at {noout_gone_early:?}, before its new daemon booted at \
             {:.2}s",
            booted_at.as_secs_f64()
        );
        anyhow::ensure!(
            noout_cleared.is_some(),
            "osd.{id}: noout never cleared after its new daemon booted"
        );
        for (other, stop) in &stops {
            if step_ids.contains(other) {
                continue;
            }
            anyhow::ensure!(
                stop.is_some_and(|s| s > booted_at && s > restarted),
                "osd.{other} was stopped at {stop:?}: before osd.{id}'s new daemon booted \
                 ({:.2}s) or the new operator started ({:.2}s)",
                booted_at.as_secs_f64(),
                restarted.as_secs_f64()
            );
        }
        lines.push(format!(
            "  osd.{id}: new daemon booted {:.2}s (up_from {up_from}), noout cleared {}",
            booted_at.as_secs_f64(),
            noout_cleared.map_or_else(|| "-".into(), |t| format!("{:.2}s", t.as_secs_f64()))
        ));
    }
    Ok(lines)
}

/// An OSD outside the step killed while the step's OSDs are down: the next step does not
/// start while it is down (the next host's pod stays) and `CephGate` names the killed OSD
/// (`osd.N`) within a minute; started again as its pod's daemon, the rollout resumes and
/// completes. Two hosts are down meanwhile (the step's and the killed one's): that is the
/// fault, the operator takes nothing more down.
#[tokio::test]
async fn an_osd_killed_outside_the_step_is_named_and_holds_the_next_step_until_it_is_back(
) -> anyhow::Result<()> {
    Box::pin(osd_killed_mid_step("gatefault-osd")).await
}

/// How long `CephGate` may take to name an OSD down outside the step.
const NAMED_WITHIN: Duration = Duration::from_mins(1);

/// The journey of the test above.
async fn osd_killed_mid_step(name: &str) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up(name).await?;
    let Started {
        from,
        at: t_roll,
        hash,
        step,
    } = start_rollout(&g).await?;
    let step_keys: BTreeSet<String> = step.keys.iter().cloned().collect();
    let step_ids: Vec<u32> = step.osds.iter().map(|o| o.id).collect();
    // The killed OSD: the last key outside the step.
    let (key, id) = g
        .table
        .iter()
        .rev()
        .find(|(k, _)| !step_keys.contains(&k.to_string()))
        .map(|(k, id)| (k.clone(), *id))
        .ok_or_else(|| anyhow!("no key outside the step"))?;
    let pod = g.converged.pods[&key].name_any();
    g.ceph
        .wait_until("the step's OSDs down", LONG, |v| {
            v.osdmap
                .as_ref()
                .is_some_and(|(_, m)| step_ids.iter().all(|s| m.osd(*s).is_some_and(|o| !o.up)))
        })
        .await?;
    g.cluster.osd_stop(id, true).await?;
    let killed = g.ceph.elapsed();
    g.wait_osd("the killed OSD down", id, LONG, |o| !o.up)
        .await?;
    let seen_down = g.ceph.elapsed();
    let osd = format!("osd.{id}");
    // Nothing more goes down while it is down: checked for HELD and until the gate names it,
    // NAMED_WITHIN at most.
    let holding = Instant::now();
    let named = hold_while_down(&g, &step_keys, &osd).await?;
    let held = g.gate_condition().await?;
    let held_for = holding.elapsed();

    // Back as its pod's daemon.
    g.start_as_pod(id, &key, &pod).await?;
    let restarted = g.ceph.elapsed();
    g.s.wait_converged(CR, &g.want, &hash, LONG).await?;
    g.wait_gate_idle(LONG).await?;
    let done = t_roll.elapsed();
    g.cluster.wait_clean(LONG).await?;

    let sequence = condition_sequence(&g.gate.samples(), from);
    let report = format!(
        "{}CephGate sequence:\n{}",
        g.report(from),
        render_sequence(&sequence)
    );
    let back_up = check_kill_was_the_only_fault(&g, from, &key, id, &step_ids, restarted)
        .await
        .map_err(|e| anyhow!("{e:#}\n{report}"))?;
    // What the gate said while the OSD was down, from its samples.
    let named_at = g.gate.samples().into_iter().find(|s| {
        s.at >= killed
            && s.at <= back_up
            && s.condition
                .as_ref()
                .is_some_and(|(_, _, message)| message.contains(&osd))
    });
    Milestones::on_clock(format!("{osd} ({key}) killed mid-step"), g.ceph.clock())
        .figure("step", format!("on {step_keys:?} (osds {step_ids:?})"))
        .mark_at("killed", killed)
        .mark_at("down in Ceph", seen_down)
        .figure(
            "CephGate named it",
            format!("{:?}", named_at.as_ref().map(|s| (s.at, &s.condition))),
        )
        .figure(
            format!("CephGate after {:.0}s", held_for.as_secs_f64()),
            format!("{held:?}"),
        )
        .mark_at("restarted", restarted)
        .mark_at("up", back_up)
        .span("rollout done and gate idle after the template change", done)
        .section("CephGate sequence", render_sequence(&sequence))
        .section("records", &report)
        .print();
    anyhow::ensure!(
        named.is_some() && named_at.is_some(),
        "CephGate never named {osd} in the {:.0}s it was checked while it was down\n{report}",
        held_for.as_secs_f64()
    );
    println!("==== the scenario took {:.1}s", t0.elapsed().as_secs_f64());
    g.down().await
}

/// The rollout around the killed OSD (`id` of `key`, started again at `restarted`): one host
/// down at most besides the killed OSD's, PGs unavailable only while it was down, no `noout`
/// left, one pod per disk, no other OSD asked to stop before it was back. Returns when it was
/// seen up again.
async fn check_kill_was_the_only_fault(
    g: &Gated,
    from: Duration,
    key: &OsdKey,
    id: u32,
    step_ids: &[u32],
    restarted: Duration,
) -> anyhow::Result<Duration> {
    let recording = g.ceph.recording();
    let osd = format!("osd.{id}");
    let back_up = first_map(&recording, restarted, |m| m.osd(id).is_some_and(|o| o.up))
        .ok_or_else(|| anyhow!("{osd} never seen up again"))?;
    // The operator's own: one host down at most besides the killed OSD's; PGs unavailable only
    // while that OSD was down.
    check_hosts_down_besides(&recording, from, &key.host, 1)?;
    recording.check_hosts_down_at_most(2, from)?;
    recording.check_pgs_never_unavailable(back_up)?;
    recording.check_no_noout_at_end()?;
    g.s.assert_one_pod_per_key().await?;
    // No other OSD asked to stop before the killed one was back.
    for (other, stop) in old_daemon_stops(g) {
        if step_ids.contains(&other) || other == id {
            continue;
        }
        anyhow::ensure!(
            stop.is_some_and(|s| s > back_up),
            "osd.{other} was stopped at {stop:?}, {osd} back up only at {:.2}s",
            back_up.as_secs_f64()
        );
    }
    Ok(back_up)
}

/// While the killed OSD (`osd`) is down: nothing more goes down, checked for [`HELD`] and
/// until `CephGate` names it ([`NAMED_WITHIN`] at most). Returns the condition naming it.
async fn hold_while_down(
    g: &Gated,
    step_keys: &BTreeSet<String>,
    osd: &str,
) -> anyhow::Result<Option<(String, String, String)>> {
    let holding = Instant::now();
    let mut named = None;
    loop {
        nothing_more_down(g, step_keys, "the OSD killed").await?;
        if named.is_none() {
            named = g
                .gate_condition()
                .await?
                .filter(|(_, _, message)| message.contains(osd));
        }
        let waited = holding.elapsed();
        if waited >= HELD && (named.is_some() || waited >= NAMED_WITHIN) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(named)
}
