//! An OSD killed outside the step: named, and the next step held until it is back.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use ceph_osd_operator::OsdKey;
use kube::ResourceExt;
use molecule_like_tests::journeys::gated::Gated;
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::recording::ceph::{hosts_down, CephRecording, Observed};

use crate::common::{
    condition_sequence, first_map, nothing_more_down, old_daemon_stops, render_sequence,
    start_rollout, Started, HELD, LONG,
};

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
