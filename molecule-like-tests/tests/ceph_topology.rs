//! Rollouts by failure domain on a real Ceph of one OSD per host in CRUSH racks
//! (`journeys::racks`): by host (the baseline, 12 steps) and by rack (`updateDomain: Topology`,
//! 4 steps) on the same cluster of 12 hosts in 4 racks; on 6 hosts in 3 racks (what they need:
//! racks of more than one host), a pool whose copies may share a rack (Ceph refuses such a
//! rack whole: the rollout takes what Ceph allows within it and says so), a host moved to
//! another rack mid-rollout and a rack label that disagrees with CRUSH (halts, named). Each
//! checks the pod watch with the update domains counted as racks and Ceph's own view
//! (`racks::finish`). The times are printed; `benches/ceph_topology.rs` writes them to
//! BENCHMARKS.md.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (the cluster installs them when missing).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use molecule_like_tests::journeys::gated::Gated;
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::racks::{
    self, by_rack_spec, expect, racks_of, Expect, Layout, HOST_POOL, RACK_POOL,
};
use molecule_like_tests::journeys::scenario::{describe_events, hold};
use molecule_like_tests::journeys::steps::clean_after;
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::nodes::label_node;
use serde_json::json;

/// The node label the label scenario names as `topologyKey`.
const RACK_LABEL: &str = "testing.local/rack";

/// The same cluster rolled by host (12 steps), then by rack (4 steps, each one whole rack);
/// both hold in the pod watch and in Ceph's view; the times printed side by side.
#[tokio::test]
async fn by_rack_is_four_steps_where_by_host_is_twelve() -> anyhow::Result<()> {
    let g = racks::up("racks-roll", Layout::TWELVE, &[RACK_POOL], "Host", None).await?;
    let by_host = racks::roll(&g, &g.converged.pods, "2", &expect(&g, false)).await?;
    let hosts: Vec<usize> = by_host.steps.iter().map(|s| s.osds.len()).collect();
    anyhow::ensure!(hosts == [1; 12], "steps by host: {:?}", by_host.steps);

    g.s.patch_spec(CR, by_rack_spec()).await?;
    let by_rack = racks::roll(&g, &by_host.pods, "3", &expect(&g, true)).await?;
    let steps: Vec<Vec<String>> = by_rack.steps.iter().map(|s| racks_of(&g, s)).collect();
    let want: Vec<Vec<String>> = (Layout::TWELVE.racks.iter())
        .map(|(r, _)| vec![(*r).to_owned()])
        .collect();
    anyhow::ensure!(
        steps == want && by_rack.steps.iter().all(|s| s.osds.len() == 3),
        "steps by rack: {steps:?} {:?}\n{}",
        by_rack.steps,
        g.gate.render()
    );
    Milestones::new("12 OSDs in 4 racks: by host, then by rack")
        .span("by host: template change → gate idle", by_host.wall)
        .span("by rack: template change → gate idle", by_rack.wall)
        .figure(
            "by rack ÷ by host (goal ≤ 0.4)",
            format!(
                "{:.2}",
                by_rack.wall.as_secs_f64() / by_host.wall.as_secs_f64()
            ),
        )
        .span("by host: Ceph's time per step, mean", by_host.mean_step().0)
        .span(
            "by host: the operator's time per step, mean",
            by_host.mean_step().1,
        )
        .span("by rack: Ceph's time per step, mean", by_rack.mean_step().0)
        .span(
            "by rack: the operator's time per step, mean",
            by_rack.mean_step().1,
        )
        .print();
    g.down().await
}

/// Whether Ceph lets every OSD of `rack` stop at once (`ok-to-stop` as the admin), asked once
/// every PG is active+clean: a refusal (`EBUSY`) then means PGs that would become inactive,
/// never a PG still peering (which would count a rack as refused that the rollout then stops
/// whole). Any other failure (`EAGAIN` while PG states are not known, a call past its bound
/// under load) is no answer: asked again, at most 5 times.
async fn ceph_lets_rack_stop(g: &Gated, rack: &str) -> anyhow::Result<bool> {
    let ids: Vec<String> = (g.table.iter())
        .filter(|(key, _)| g.rack_of.get(&key.host).is_some_and(|r| r == rack))
        .map(|(_, id)| id.to_string())
        .collect();
    let mut args = vec!["osd", "ok-to-stop"];
    args.extend(ids.iter().map(String::as_str));
    let mut tries = 0;
    loop {
        g.cluster.wait_clean(Duration::from_mins(2)).await?;
        match g.cluster.cli(&args).await {
            Ok(_) => return Ok(true),
            Err(e) if format!("{e:#}").contains("exit status: 16") => return Ok(false),
            Err(e) if tries < 4 => {
                println!("ceph {args:?} gave no answer (asked again): {e:#}");
                tries += 1;
            }
            Err(e) => return Err(e.context(format!("ceph {args:?}: no answer in 5 tries"))),
        }
    }
}

/// A pool whose two copies may share a rack: Ceph refuses such a rack whole; its step shrinks
/// to what Ceph allows within the rack (never into another rack), the condition says so with
/// Ceph's numbers, and never two copies of one PG are down.
#[tokio::test]
async fn a_rack_ceph_refuses_whole_rolls_in_the_parts_ceph_allows() -> anyhow::Result<()> {
    let layout = Layout::SIX;
    let g = racks::up(
        "racks-refused",
        layout,
        &[RACK_POOL, HOST_POOL],
        "Topology",
        Some(json!({"topology": {"bucketType": "rack"}})),
    )
    .await?;
    let mut refused = Vec::new();
    for (rack, _) in layout.racks {
        if !ceph_lets_rack_stop(&g, rack).await? {
            refused.push((*rack).to_owned());
        }
    }
    anyhow::ensure!(
        !refused.is_empty(),
        "Ceph lets every rack stop whole: the host pool proves nothing here"
    );
    let rollout = racks::roll(
        &g,
        &g.converged.pods,
        "2",
        &Expect {
            whole: false,
            ..expect(&g, true)
        },
    )
    .await?;
    let report = g.report(Duration::ZERO);
    let mut steps_per_rack: BTreeMap<String, usize> = BTreeMap::new();
    for step in &rollout.steps {
        let racks = racks_of(&g, step);
        anyhow::ensure!(
            racks.len() == 1,
            "a step across racks {racks:?}: {step:?}\n{report}"
        );
        *steps_per_rack.entry(racks[0].clone()).or_default() += 1;
    }
    for (rack, _) in layout.racks {
        let steps = steps_per_rack.get(*rack).copied().unwrap_or(0);
        let split = refused.iter().any(|r| r == rack);
        anyhow::ensure!(
            (steps > 1) == split,
            "{rack}: {steps} steps, Ceph refused it whole: {split}\n{report}"
        );
    }
    // Said in the condition as the step starts, and in an event that stays.
    let events = g.s.cr_events(CR).await?;
    let said = (events.iter().filter_map(|e| e.note.clone())).find(|note| {
        let names_rack = refused.iter().any(|r| note.contains(r.as_str()));
        let has_number = note.chars().any(|c| c.is_ascii_digit());
        names_rack && note.contains("does not let all of") && note.contains("PG") && has_number
    });
    anyhow::ensure!(
        said.is_some(),
        "no CephGate event named a refused rack {refused:?} with Ceph's PG numbers\n{}\n{report}",
        describe_events(&events)
    );
    println!(
        "==== refused whole: {refused:?}; steps per rack {steps_per_rack:?}; said: {}\n{report}",
        said.unwrap_or_default()
    );
    g.down().await
}

/// Waits until a condition of the CephOSD names `what`; returns (type, reason, message).
async fn wait_condition_naming(
    g: &Gated,
    what: &str,
    timeout: Duration,
) -> anyhow::Result<(String, String, String)> {
    let found =
        g.s.wait_until(&format!("a condition naming {what}"), timeout, || async {
            let status = g.s.cr_status(CR).await?.unwrap_or_default();
            Ok((status.conditions.iter())
                .find(|c| c.status != "True" && c.message.contains(what))
                .map(|c| (c.type_.clone(), c.reason.clone(), c.message.clone())))
        })
        .await;
    found.map_err(|e| anyhow::anyhow!("{e:#}\ngate status:\n{}", g.gate.render()))
}

/// The OSDs whose daemons were asked to stop from `from` on.
fn stopped_since(g: &Gated, from: Duration) -> Vec<u32> {
    (g.bridge.daemons().into_iter())
        .filter(|(_, list)| list.iter().any(|d| d.stopping.is_some_and(|s| s >= from)))
        .map(|(id, _)| id)
        .collect()
}

/// A host moved to another rack in CRUSH while its rack's step is open: the rollout halts
/// naming it (no OSD of another rack stops); moved back, it completes. Ceph's view is checked
/// from the cluster clean after the move back: moving a down host makes Ceph map PGs onto
/// down OSDs (some below min_size for a few seconds, seen here), the admin's doing.
#[tokio::test]
async fn a_host_moved_to_another_rack_mid_rollout_halts_naming_it() -> anyhow::Result<()> {
    let layout = Layout::SIX;
    let g = racks::up(
        "racks-moved",
        layout,
        &[RACK_POOL],
        "Topology",
        Some(json!({"topology": {"bucketType": "rack"}})),
    )
    .await?;
    let started = racks::change_template(&g, "2").await?;
    g.wait_gate("the first step open", Duration::from_mins(2), |s| {
        s.ceph_step.is_some()
    })
    .await?;
    let step = g.s.cr_status(CR).await?.unwrap_or_default().ceph_step;
    let keys = step.map(|s| s.keys).unwrap_or_default();
    let first = &g.rack_of[&g.s.host(layout.racks[0].1[1])];
    let host = g.s.host(layout.racks[0].1[1]);
    anyhow::ensure!(
        keys.iter().any(|k| k.starts_with(&host)),
        "the first step is not {first}'s: {keys:?}"
    );
    g.cluster
        .cli(&["osd", "crush", "move", &host, "rack=rack-b"])
        .await?;
    let (kind, reason, message) = wait_condition_naming(&g, &host, Duration::from_mins(1)).await?;
    let step_osds: Vec<u32> = (g.table.iter())
        .filter(|(k, _)| g.rack_of.get(&k.host) == Some(first))
        .map(|(_, id)| *id)
        .collect();
    // Until that step ends (Ceph's timers on loopback may end it within the hold), only its
    // OSDs stop. The stops are read before the status: a step still open then was open at
    // every stop read.
    hold(Duration::from_secs(5), || async {
        let stopped = stopped_since(&g, started.from());
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        if status.ceph_step.is_none_or(|s| s.keys != keys) {
            return Ok(());
        }
        anyhow::ensure!(
            stopped.iter().all(|id| step_osds.contains(id)),
            "OSDs {stopped:?} stopped while {host} was moved (the step: {step_osds:?})\n{}",
            g.gate.render()
        );
        Ok(())
    })
    .await?;
    g.cluster
        .cli(&["osd", "crush", "move", &host, &format!("rack={first}")])
        .await?;
    let moved_back = g.ceph.elapsed();
    g.cluster.wait_clean(Duration::from_mins(2)).await?;
    let clean_again = clean_after(&g.ceph.recording(), moved_back);
    let rollout = racks::finish(
        &g,
        started,
        &g.converged.pods,
        &Expect {
            ceph_from: Some(clean_again.unwrap_or(moved_back)),
            ..expect(&g, true)
        },
    )
    .await?;
    println!(
        "==== {host} moved to rack-b mid-step: {kind} {reason}: {message}\nsteps {:?}\n{}",
        rollout.steps,
        g.report(Duration::ZERO)
    );
    g.down().await
}

/// A Node's rack label (`topologyKey`) that disagrees with CRUSH: the rollout halts before
/// any pod goes, naming the host; the label fixed, it completes by rack.
#[tokio::test]
async fn a_rack_label_that_disagrees_with_crush_halts_naming_the_host() -> anyhow::Result<()> {
    let layout = Layout::SIX;
    let g = racks::up(
        "racks-label",
        layout,
        &[RACK_POOL],
        "Topology",
        Some(json!({"topology": {"bucketType": "rack", "topologyKey": RACK_LABEL}})),
    )
    .await?;
    let wrong = g.s.host(layout.racks[1].1[1]);
    for (host, rack) in &g.rack_of {
        let label = if *host == wrong {
            "rack-c"
        } else {
            rack.as_str()
        };
        label_node(&g.s.client, host, RACK_LABEL, label).await?;
    }
    let started = racks::change_template(&g, "2").await?;
    let (kind, reason, message) = wait_condition_naming(&g, &wrong, Duration::from_mins(1)).await?;
    g.converged_pods_stand(
        Duration::from_secs(5),
        &format!("{wrong}'s label disagreed with CRUSH"),
    )
    .await?;
    label_node(&g.s.client, &wrong, RACK_LABEL, &g.rack_of[&wrong]).await?;
    let rollout = racks::finish(&g, started, &g.converged.pods, &expect(&g, true)).await?;
    anyhow::ensure!(
        rollout.steps.len() == layout.racks.len(),
        "steps {:?}",
        rollout.steps
    );
    println!(
        "==== {wrong} labelled rack-c: {kind} {reason}: {message}\nsteps {:?}",
        rollout.steps
    );
    g.down().await
}
