//! The mgr, then the mon, away mid-step: nothing more taken down until they are back.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use ceph_osd_operator::crd::CephStep;
use molecule_like_tests::journeys::gated::Gated;
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::hold;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::pods::pod_key;
use molecule_like_tests::recording::pods::EventKind;

use crate::common::{
    condition_sequence, gate_log, nothing_more_down, old_daemon_stops, render_sequence,
    start_rollout, Started, HELD, LONG,
};

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
