//! Rollouts by failure domain against by host, over real OSD daemons: 12 OSDs on 12 hosts in
//! 4 CRUSH racks (a pool of size 3 with rack failure domain), rolled by host (12 steps), then
//! by rack (`updateDomain: Topology`, 4 steps) on the same cluster, each checked as
//! `tests/ceph_topology.rs` checks it (`journeys::racks::roll`); both times, their ratio, each
//! step's time taken apart (Ceph's: its first stop to every PG clean after its last boot; the
//! operator's: from then to the next step's first stop), and a model of a fleet from them.
//!
//! With `--pre-pull`, the same with `spec.prePull` on (its defaults: a 300 s deadline, one
//! domain ahead): each step then also waits for its nodes' pre-pull pods, which end at once.
//!
//! Writes its section of BENCHMARKS.md (each variant its own).
//!
//!   cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench ceph_topology
//!   cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench ceph_topology -- --pre-pull

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::time::Duration;

use molecule_like_tests::journeys::racks::{
    self, by_rack_spec, expect, Layout, Rollout, RACK_POOL,
};
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::paths::operator_binary;

const HEADER: &str = "## Rollouts by rack against by host over real OSD daemons";
const PRE_PULL_HEADER: &str = "## Pre-pulled rollouts, by rack and by host, over real OSD daemons";

/// What a variant of the benchmark is: its section's header, its command's arguments, the
/// CephOSD's spec beyond the update domain, and what it says of it.
struct Variant {
    header: &'static str,
    args: &'static str,
    spec_patch: Option<serde_json::Value>,
    words: &'static str,
}

fn variant() -> Variant {
    if std::env::args().any(|a| a == "--pre-pull") {
        Variant {
            header: PRE_PULL_HEADER,
            args: " -- --pre-pull",
            spec_patch: Some(serde_json::json!({"prePull": {}})),
            words: "With `spec.prePull: {}` (a 300 s deadline, one domain ahead): before each \
                    step the new images are pulled on its nodes by pre-pull pods (which run at \
                    once on KWOK), and the step waits for them. ",
        }
    } else {
        Variant {
            header: HEADER,
            args: "",
            spec_patch: None,
            words: "",
        }
    }
}

/// The fleet the model line speaks of.
const FLEET_HOSTS: u32 = 100;
const FLEET_RACKS: u32 = 10;

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn minutes(d: Duration) -> String {
    format!("{:.1} min", d.as_secs_f64() / 60.0)
}

/// One table row per step: its OSDs, wall (to the next step), Ceph's, the operator's.
fn steps_table(section: &mut String, title: &str, r: &Rollout) {
    let _ = write!(
        section,
        "\n{title}\n\n| step | OSDs | wall | Ceph | operator |\n|---|---|---|---|---|\n"
    );
    for (i, (step, (ceph, operator))) in r.steps.iter().zip(r.step_times()).enumerate() {
        let osds: Vec<String> = step.osds.iter().map(|id| format!("osd.{id}")).collect();
        let _ = writeln!(
            section,
            "| {} | {} | {} | {} | {} |",
            i + 1,
            osds.join(" "),
            secs(ceph + operator),
            secs(ceph),
            secs(operator)
        );
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let binary = operator_binary()?;
    let v = variant();
    let g = racks::up(
        "bench-racks",
        Layout::TWELVE,
        &[RACK_POOL],
        "Host",
        v.spec_patch.clone(),
    )
    .await?;
    let by_host = racks::roll(&g, &g.converged.pods, "2", &expect(&g, false)).await?;
    g.s.patch_spec(CR, by_rack_spec()).await?;
    let by_rack = racks::roll(&g, &by_host.pods, "3", &expect(&g, true)).await?;
    g.down().await?;

    let (host_ceph, host_operator) = by_host.mean_step();
    let (rack_ceph, rack_operator) = by_rack.mean_step();
    let host_step = host_ceph + host_operator;
    let rack_step = rack_ceph + rack_operator;
    let mut section = format!(
        "{}\n\n\
         `cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench ceph_topology{}`\n\n\
         {}Ceph 16.2.15 (Debian's packages): one mon, one mgr, 12 BlueStore OSDs on sparse files, \
         each on a host of its own, 3 hosts to a CRUSH rack (4 racks); a pool of 32 PGs, size 3, \
         min_size 2, one copy per rack. Pods on KWOK, each OSD daemon run for its pod by the \
         harness's bridge; the operator `{}`. Measured on: 2 cores, x86_64, shared with whatever \
         else runs. A step is read from Ceph's and the bridge's records: Ceph's time from its \
         first stop to every PG clean after its last boot, the operator's from then to the next \
         step's first stop (the last: to the gate idle).\n\n\
         | the same cluster | steps | template change → gate idle | step, mean | Ceph, mean | operator, mean |\n\
         |---|---|---|---|---|---|\n\
         | by host (`updateDomain: Host`) | {} | {} | {} | {} | {} |\n\
         | by rack (`updateDomain: Topology`, `bucketType: rack`) | {} | {} | {} | {} | {} |\n\n\
         By rack ÷ by host: **{:.2}** (goal ≤ 0.4); a rack's step ÷ a host's: {:.2} (goal ≤ 1.2).\n",
        v.header,
        v.args,
        v.words,
        binary.display(),
        by_host.steps.len(),
        secs(by_host.wall),
        secs(host_step),
        secs(host_ceph),
        secs(host_operator),
        by_rack.steps.len(),
        secs(by_rack.wall),
        secs(rack_step),
        secs(rack_ceph),
        secs(rack_operator),
        by_rack.wall.as_secs_f64() / by_host.wall.as_secs_f64(),
        rack_step.as_secs_f64() / host_step.as_secs_f64(),
    );
    let _ = write!(
        section,
        "\nModel: 1,000 OSDs on {FLEET_HOSTS} hosts in {FLEET_RACKS} racks, from the mean steps \
         above: by host {FLEET_HOSTS} × {} = **{}**, by rack {FLEET_RACKS} × {} = **{}**. It \
         assumes a step takes as long with 10 OSDs per host or 100 per rack as here with 1 and \
         3 (every OSD of a step stops, boots and peers at once; the operator's part is per \
         step, not per OSD), and Ceph's time per step as on this tiny cluster; with production \
         steps of 1-5 min (BlueStore on disks, real PG counts) both lines scale by the same \
         factor, the ratio stays.\n",
        secs(host_step),
        minutes(host_step * FLEET_HOSTS),
        secs(rack_step),
        minutes(rack_step * FLEET_RACKS),
    );
    steps_table(&mut section, "By host, each step:", &by_host);
    steps_table(&mut section, "By rack, each step:", &by_rack);
    print!("{section}");
    molecule_like_tests::paths::write_benchmarks_section(v.header, &section)
}
