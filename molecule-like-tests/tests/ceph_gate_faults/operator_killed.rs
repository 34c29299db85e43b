//! The operator killed between `noout` and clean: the next process finishes the step.

use std::time::{Duration, Instant};

use anyhow::anyhow;
use molecule_like_tests::ceph::OsdStart;
use molecule_like_tests::journeys::gated::Gated;
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::recording::ceph::{CephRecording, Observed};

use crate::common::{
    condition_sequence, first_map, gate_log, old_daemon_stops, render_sequence, start_rollout,
    Started, LONG,
};

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
