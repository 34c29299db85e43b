//! The Ceph gate's cost, over real OSD daemons on the local control plane
//! (`molecule-like-tests/control-plane up` first; Ceph's daemons are installed when missing).
//!
//! 1. Ceph's own time per step, on a cluster of its own (3 OSDs in 3 CRUSH hosts, the same
//!    pool): each OSD stopped (SIGTERM) and started again at once; from the stop to its new
//!    daemon up and every PG active+clean (the first PG sample after the boot that says so).
//! 2. A gated rollout by host of 3 hosts × 1 OSD (`tests/ceph_gate.rs`'s setup): each step's
//!    time split into Ceph's (the old daemon's stop, the new one's boot, the PGs' peering),
//!    Kubernetes' (the old pod's removal once its daemon exited, the replacement's scheduling
//!    and start) and the operator's (the rest: creating the replacement once the old pod is
//!    gone, and from every PG clean to the next step's stop: confirming, asking, noout); the
//!    Ceph commands the operator ran, from its metrics.
//!
//! Writes its section of BENCHMARKS.md.
//!
//!   cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench ceph_gate

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use molecule_like_tests::ceph::{CephCluster, OsdStart};
use molecule_like_tests::journeys::gated::{Gated, GatedOptions, PG_STATS_LAG_SECONDS};
use molecule_like_tests::journeys::scenario::ROLLOUT;
use molecule_like_tests::kubernetes::manifests::{random_suffix, CR};
use molecule_like_tests::kubernetes::operator::{free_port, http_get};
use molecule_like_tests::paths::output_dir;
use molecule_like_tests::recording::ceph::{CephRecorder, CephRecording, Observed};
use serde_json::json;

const HEADER: &str = "## The Ceph gate over real OSD daemons";

const LIMITS: &str =
    "\nWhat limits these figures: the operator asks Ceph over one long-lived connection (the \
    `ceph` CLI's own librados and argument parser kept running), so a question costs a few \
    milliseconds (`cargo test -p molecule-like-tests --test ceph_client -- --nocapture` prints \
    each call's time both ways: a `ceph` process per call takes about 0.2 s on a quiet machine \
    and 0.6-0.8 s on a busy one), and it looks at an open step four times a second. Most of \
    the operator's time left per step is the mon committing the next step's `noout` \
    (`osd add-noout`: the mon gathers changes for up to its `paxos_propose_interval`, 1 s, \
    before it commits them): Ceph's own wait, on the way to the next stop because `noout` must \
    hold before an OSD stops. The ended step's `noout` is cleared after the next step's \
    deletion, off that way. A step ends once every PG on its OSDs is reported clean in an \
    epoch at least their new `up_from` (`pg ls-by-osd`), which may come a moment after the \
    first clean sample above (counted as the operator's time). Ceph's own steps here are 7-9 \
    s, mostly the new daemon's start (BlueStore on a file) and the peering after it.\n";

/// The first PG sample after `after` with every PG active+clean.
fn clean_after(recording: &CephRecording, after: Duration) -> Option<Duration> {
    recording.events.iter().find_map(|e| match &e.observed {
        Observed::Pgs(p) if e.at > after && p.all_clean() => Some(e.at),
        _ => None,
    })
}

/// One OSD restarted by hand: stop requested → down seen → new daemon up → every PG clean.
struct OwnStep {
    down: Duration,
    up: Duration,
    clean: Duration,
}

async fn cephs_own_steps() -> anyhow::Result<Vec<OwnStep>> {
    let dir = output_dir().join(format!("bench-ceph-own-{}", random_suffix()));
    let cluster = CephCluster::up(&dir, 3).await?;
    let clock = Instant::now();
    let ceph = CephRecorder::start(&cluster, clock).await?;
    let map = cluster.osd_dump().await?;
    let mut steps = Vec::new();
    for id in 0..3u32 {
        let host = map
            .host_of(id)
            .ok_or_else(|| anyhow::anyhow!("osd.{id} in no host"))?
            .to_owned();
        let before = map.osd(id).map_or(0, |o| o.up_from);
        let stop = ceph.elapsed();
        cluster.osd_stop(id, false).await?;
        cluster
            .osd_start(
                id,
                &OsdStart {
                    host: &host,
                    pod_name: None,
                    pod_namespace: None,
                    node_name: None,
                    container_image: None,
                    ..OsdStart::default()
                },
            )
            .await?;
        ceph.wait_until("the new daemon up", Duration::from_mins(1), |v| {
            v.osdmap
                .as_ref()
                .is_some_and(|(_, m)| m.osd(id).is_some_and(|o| o.up && o.up_from > before))
        })
        .await?;
        cluster.wait_clean(Duration::from_mins(1)).await?;
        // One more sample past the clean one, so the recording holds it.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let recording = ceph.recording();
        let down = recording
            .osd_down_spans(stop)
            .get(&format!("osd.{id}"))
            .and_then(|s| s.first().map(|s| s.from))
            .ok_or_else(|| anyhow::anyhow!("osd.{id} never seen down"))?;
        let up = recording
            .boots(id)
            .into_iter()
            .find(|(_, u)| *u > before)
            .map(|(at, _)| at)
            .ok_or_else(|| anyhow::anyhow!("osd.{id} never seen up again"))?;
        let clean = clean_after(&recording, up)
            .ok_or_else(|| anyhow::anyhow!("no clean sample after osd.{id}'s boot"))?;
        steps.push(OwnStep {
            down: down.saturating_sub(stop),
            up: up.saturating_sub(stop),
            clean: clean.saturating_sub(stop),
        });
    }
    drop(ceph);
    cluster.down()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(steps)
}

/// One step of the gated rollout, each time from its stop.
struct GatedStep {
    id: u32,
    /// Until the next step's stop (the last: the gate idle again).
    wall: Duration,
    ceph: Duration,
    kubernetes: Duration,
    operator: Duration,
    /// From every PG clean to the next step's stop (the last: the gate idle).
    clean_to_next: Duration,
    /// From the old pod gone to its replacement created.
    gone_to_created: Duration,
}

/// The operator's Ceph commands: (command, count, seconds).
async fn ceph_commands(port: u16) -> anyhow::Result<BTreeMap<String, (f64, f64)>> {
    let (code, body) = http_get(port, "/metrics").await?;
    anyhow::ensure!(code == 200, "/metrics answered {code}");
    let mut out: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for line in body.lines() {
        let (series, value) = line.rsplit_once(' ').unwrap_or_default();
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let command = || {
            series
                .split("command=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(str::to_owned)
        };
        if series.starts_with("ceph_osd_operator_ceph_commands_total{") {
            out.entry(command().unwrap_or_default()).or_default().0 += value;
        } else if series.starts_with("ceph_osd_operator_ceph_command_seconds_total{") {
            out.entry(command().unwrap_or_default()).or_default().1 += value;
        }
    }
    Ok(out)
}

async fn gated_rollout() -> anyhow::Result<(Vec<GatedStep>, Duration, BTreeMap<String, (f64, f64)>)>
{
    let port = free_port()?;
    let address = format!("127.0.0.1:{port}");
    let g = Gated::up_with(
        "bench-gate",
        &GatedOptions {
            extra_args: &["--http-address", &address, "--metrics-auth=false"],
            ..GatedOptions::default()
        },
    )
    .await?;
    let before_commands = ceph_commands(port).await?;
    let t0 = g.ceph.elapsed();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let idle = g.ceph.elapsed();
    let after_commands = ceph_commands(port).await?;
    let commands: BTreeMap<String, (f64, f64)> = after_commands
        .into_iter()
        .map(|(c, (n, s))| {
            let (n0, s0) = before_commands.get(&c).copied().unwrap_or_default();
            (c, (n - n0, s - s0))
        })
        .collect();

    let recording = g.ceph.recording();
    let daemons = g.bridge.daemons();
    let pod_events = g.s.recorder()?.events();
    let created_at = |pod: &str| {
        pod_events
            .iter()
            .find(|e| e.pod.name_any() == pod)
            .map(|e| e.at)
    };
    let mut stops: Vec<(Duration, u32)> = g
        .table
        .values()
        .filter_map(|id| Some((daemons.get(id)?.first()?.stopping?, *id)))
        .collect();
    stops.sort_unstable();
    anyhow::ensure!(stops.len() == g.table.len(), "not every OSD was stopped");
    let mut steps = Vec::new();
    for (i, (stop, id)) in stops.iter().enumerate() {
        let list = &daemons[id];
        anyhow::ensure!(list.len() == 2, "osd.{id}: {} daemons", list.len());
        let (old, new) = (&list[0], &list[1]);
        let missing = |what: &str| anyhow::anyhow!("osd.{id}: no {what}\n{}", g.bridge.render());
        let stopped = old.stopped.ok_or_else(|| missing("exit"))?;
        let gone = old.gone.ok_or_else(|| missing("pod gone"))?;
        let created = created_at(&new.pod).ok_or_else(|| missing("replacement"))?;
        let started = new.started.ok_or_else(|| missing("new daemon"))?;
        let (booted, _) = new.booted.ok_or_else(|| missing("boot"))?;
        let clean = clean_after(&recording, booted).ok_or_else(|| missing("clean"))?;
        let next = stops.get(i + 1).map_or(idle, |(at, _)| *at);
        let ceph = stopped.saturating_sub(*stop) + clean.saturating_sub(started);
        let kubernetes = gone.saturating_sub(stopped) + started.saturating_sub(created);
        let wall = next.saturating_sub(*stop);
        steps.push(GatedStep {
            id: *id,
            wall,
            ceph,
            kubernetes,
            operator: wall.saturating_sub(ceph + kubernetes),
            clean_to_next: next.saturating_sub(clean),
            gone_to_created: created.saturating_sub(gone),
        });
    }
    let first_stop = stops.first().map_or(idle, |(at, _)| *at);
    println!(
        "template change → first stop {:.2}s\n{}",
        first_stop.saturating_sub(t0).as_secs_f64(),
        g.bridge.render()
    );
    let whole = idle.saturating_sub(t0);
    g.down().await?;
    Ok((steps, whole, commands))
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let own = cephs_own_steps().await?;
    let (steps, whole, commands) = Box::pin(gated_rollout()).await?;

    let own_mean = own.iter().map(|s| s.clean).sum::<Duration>() / u32::try_from(own.len())?;
    let mut section = format!(
        "{HEADER}\n\n\
         `cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench ceph_gate`\n\n\
         Ceph 16.2.15 (Debian's packages): one mon, one mgr, BlueStore OSDs on sparse files, \
         `mgr stats period` 1 s, the operator's `--ceph-pg-stats-lag-seconds {PG_STATS_LAG_SECONDS}`; \
         pods on KWOK, each OSD daemon run for its pod by the harness's bridge. Measured on: 2 \
         cores, x86_64; a run shares them with whatever else runs.\n\n\
         Ceph's own time per step, on a cluster of its own: an OSD stopped (SIGTERM) and started \
         again at once.\n\n\
         | OSD | stop → down | → new daemon up | → every PG active+clean |\n|---|---|---|---|\n"
    );
    for (id, s) in own.iter().enumerate() {
        let _ = writeln!(
            section,
            "| osd.{id} | {} | {} | {} |",
            secs(s.down),
            secs(s.up),
            secs(s.clean)
        );
    }
    let _ = write!(
        section,
        "\nA gated rollout by host, 3 hosts × 1 OSD: each step from its stop to the next step's \
         stop (the last: to the gate idle), taken apart. Ceph: the old daemon's shutdown, the \
         new one's boot and the PGs' peering until the first clean sample. Kubernetes: the old \
         pod removed once its daemon exited, the replacement scheduled and started. The \
         operator: the rest — the replacement created once the old pod is gone, and from every \
         PG clean to the next stop (the next look at the step, asking Ceph, noout set and read \
         back, the deletion).\n\n\
         | step | wall | Ceph | Kubernetes | operator | of which: clean → next stop | of which: pod gone → replacement created |\n\
         |---|---|---|---|---|---|---|\n"
    );
    for s in &steps {
        let _ = writeln!(
            section,
            "| osd.{} | {} | {} | {} | {} | {} | {} |",
            s.id,
            secs(s.wall),
            secs(s.ceph),
            secs(s.kubernetes),
            secs(s.operator),
            secs(s.clean_to_next),
            secs(s.gone_to_created),
        );
    }
    let n = u32::try_from(steps.len())?;
    let (ceph, kubernetes, operator) = steps.iter().fold(
        (Duration::ZERO, Duration::ZERO, Duration::ZERO),
        |(c, k, o), s| (c + s.ceph, k + s.kubernetes, o + s.operator),
    );
    let _ = write!(
        section,
        "\n| the whole rollout (template change → gate idle) | time |\n|---|---|\n\
         | wall | {} |\n\
         | Ceph's own time, {n} × the mean of the steps above ({}) | {} |\n\
         | wall ÷ Ceph's own time (target ≤ 1.1) | {:.2} |\n\
         | wall ÷ (Ceph's time in the rollout + Kubernetes') | {:.2} |\n\
         | the operator's time per step, mean (target ≤ 1 s) | {} |\n\
         | the mon's commit of the next step's `noout` (`osd add-noout`, mean; it may start before the clean sample) | {} |\n",
        secs(whole),
        secs(own_mean),
        secs(own_mean * n),
        whole.as_secs_f64() / (own_mean * n).as_secs_f64(),
        whole.as_secs_f64() / (ceph + kubernetes).as_secs_f64(),
        secs(operator / n),
        secs(Duration::from_secs_f64(
            commands
                .get("osd add-noout")
                .map_or(0.0, |(count, seconds)| seconds / count.max(1.0))
        )),
    );
    let _ = write!(
        section,
        "\nThe Ceph commands the operator ran during the rollout (its metrics), per step:\n\n\
         | command | calls per step | time per call |\n|---|---|---|\n"
    );
    for (command, (count, seconds)) in &commands {
        if *count > 0.0 {
            let _ = writeln!(
                section,
                "| `{command}` | {:.1} | {:.0} ms |",
                count / f64::from(n),
                seconds / count * 1000.0
            );
        }
    }
    section += LIMITS;
    print!("{section}");
    molecule_like_tests::paths::write_benchmarks_section(HEADER, &section)
}
