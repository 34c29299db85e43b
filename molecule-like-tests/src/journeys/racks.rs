//! A real Ceph of one OSD per host in CRUSH racks (root → rack → host; [`Layout::TWELVE`]: 12
//! hosts in 4 racks, [`Layout::SIX`]: 6 in 3), a pool whose
//! copies are each in another rack (size 3, min_size 2), optionally a pool whose copies are
//! each on another host (size 2, min_size 1), and a gated rollout on it checked as a rollout by
//! failure domain: in the pod watch (one pod per disk; the update domains, hosts or racks,
//! one at a time, each whole) and in Ceph's own view (at most one rack with an OSD down, no PG
//! below min_size, no PG with more copies down than the pools allow, every step started with
//! every OSD up and every PG clean, no `noout` left).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use crate::ceph::PoolSpec;
use crate::journeys::gated::{Gated, GatedOptions};
use crate::journeys::steps::{steps_from, CephStep};
use crate::kubernetes::manifests::CR;
use crate::kubernetes::pods::names_by_key;
use crate::recording::domains::Domains;

/// Host bases by rack (hosts in name order are racks in name order): the cluster's shape.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub racks: &'static [(&'static str, &'static [&'static str])],
}

impl Layout {
    /// 12 hosts in 4 racks: a rollout by host is 12 steps, by rack 4.
    pub const TWELVE: Self = Self {
        racks: &[
            ("rack-a", &["h01", "h02", "h03"]),
            ("rack-b", &["h04", "h05", "h06"]),
            ("rack-c", &["h07", "h08", "h09"]),
            ("rack-d", &["h10", "h11", "h12"]),
        ],
    };

    /// 6 hosts in 3 racks: the fewest that hold [`RACK_POOL`] (a copy in each rack) with
    /// racks of more than one host, for what needs racks but not many steps.
    pub const SIX: Self = Self {
        racks: &[
            ("rack-a", &["h01", "h02"]),
            ("rack-b", &["h03", "h04"]),
            ("rack-c", &["h05", "h06"]),
        ],
    };

    /// Every host base, in order.
    pub fn hosts(&self) -> Vec<&'static str> {
        (self.racks.iter())
            .flat_map(|(_, hosts)| hosts.iter().copied())
            .collect()
    }
}

/// Copies in three racks: one rack down leaves two of every PG.
pub const RACK_POOL: PoolSpec<'static> = PoolSpec {
    name: "by-rack",
    size: 3,
    min_size: 2,
    failure_domain: "rack",
};

/// Copies on two hosts, maybe of one rack: one rack down may take both copies of a PG.
pub const HOST_POOL: PoolSpec<'static> = PoolSpec {
    name: "by-host",
    size: 2,
    min_size: 1,
    failure_domain: "host",
};

/// How long a rollout of up to 12 OSDs may take (12 host steps of ~10-20 s each).
pub const RACK_ROLLOUT: Duration = Duration::from_mins(8);

/// `spec` for a rollout by rack (`updateDomain: Topology`, CRUSH racks).
pub fn by_rack_spec() -> serde_json::Value {
    json!({"updateDomain": "Topology", "topology": {"bucketType": "rack"}})
}

/// The cluster of `layout` with `pools`, its CephOSD converged with `update_domain` and
/// `spec_patch`.
/// Ceph's own pools (the mgr's `device_health_metrics`, made with the default rule: copies on
/// hosts, maybe of one rack) follow the first of `pools` whose copies are in racks: whether
/// Ceph lets a whole rack stop is then up to `pools` alone.
pub async fn up(
    name: &str,
    layout: Layout,
    pools: &[PoolSpec<'_>],
    update_domain: &str,
    spec_patch: Option<serde_json::Value>,
) -> anyhow::Result<Gated> {
    let g = up_as_given(name, layout, pools, update_domain, spec_patch).await?;
    if let Some(racked) = pools.iter().find(|p| p.failure_domain == "rack") {
        let rule = format!("replicated-{}", racked.failure_domain);
        let all = g.cluster.cli_json(&["osd", "pool", "ls"]).await?;
        let others = (all.as_array().into_iter().flatten())
            .filter_map(serde_json::Value::as_str)
            .filter(|name| pools.iter().all(|p| p.name != *name));
        for pool in others {
            (g.cluster)
                .cli(&["osd", "pool", "set", pool, "crush_rule", &rule])
                .await?;
        }
        g.cluster.wait_clean(Duration::from_mins(1)).await?;
    }
    Ok(g)
}

async fn up_as_given(
    name: &str,
    layout: Layout,
    pools: &[PoolSpec<'_>],
    update_domain: &str,
    spec_patch: Option<serde_json::Value>,
) -> anyhow::Result<Gated> {
    let hosts = layout.hosts();
    Gated::up_with(
        name,
        &GatedOptions {
            hosts: &hosts,
            racks: layout.racks,
            pools: Some(pools),
            update_domain,
            spec_patch,
            ..GatedOptions::default()
        },
    )
    .await
}

/// What one rollout measured.
#[derive(Clone, Debug)]
pub struct Rollout {
    /// The template change to the gate idle again.
    pub wall: Duration,
    /// The steps as Ceph saw them.
    pub steps: Vec<CephStep>,
    /// When the gate was idle again, on the recorders' clock.
    pub idle_at: Duration,
    /// The pods after it, by key.
    pub pods: BTreeMap<OsdKey, Pod>,
}

impl Rollout {
    /// Each step's Ceph time (its first stop to every PG clean after its last boot) and the
    /// operator's (from then to the next step's first stop, the last: to the gate idle).
    pub fn step_times(&self) -> Vec<(Duration, Duration)> {
        (self.steps.iter().enumerate())
            .map(|(i, s)| {
                let clean = s.clean.unwrap_or(s.start);
                let next = self.steps.get(i + 1).map_or(self.idle_at, |n| n.start);
                (clean.saturating_sub(s.start), next.saturating_sub(clean))
            })
            .collect()
    }
}

impl Rollout {
    /// The mean of [`Self::step_times`]: (Ceph's, the operator's).
    pub fn mean_step(&self) -> (Duration, Duration) {
        let times = self.step_times();
        let n = u32::try_from(times.len()).unwrap_or(u32::MAX).max(1);
        let ceph: Duration = times.iter().map(|(c, _)| *c).sum();
        let operator: Duration = times.iter().map(|(_, o)| *o).sum();
        (ceph / n, operator / n)
    }
}

/// What a rollout by host (`by_rack` false) or by rack checks: whole domains, one at a time,
/// at most one copy of any PG down.
pub fn expect(g: &Gated, by_rack: bool) -> Expect {
    Expect {
        domains: if by_rack {
            Domains::Buckets(g.rack_of.clone())
        } else {
            Domains::Host
        },
        whole: true,
        copies_down: 1,
        ceph_from: None,
    }
}

/// What a rollout's checks expect (see [`finish`]).
#[derive(Clone, Debug)]
pub struct Expect {
    /// The update domains the pod watch counts.
    pub domains: Domains,
    /// Each domain's pods all at once and in order (else: at most one domain down at a time).
    pub whole: bool,
    /// The most copies of one PG that may be down at once.
    pub copies_down: u64,
    /// From when Ceph's view is checked for racks down and PGs below min_size or with copies
    /// down (None: the template change). A test that moves a down host to another rack
    /// itself makes Ceph map PGs onto down OSDs (some fall below min_size by that move, not by
    /// a stop): it checks from the cluster clean again after its move back.
    pub ceph_from: Option<Duration>,
}

/// A template change under way.
pub struct Started {
    from: Duration,
    from_seq: usize,
    t0: Instant,
    hash: String,
}

impl Started {
    /// When it was made, on the recorders' clock.
    pub fn from(&self) -> Duration {
        self.from
    }
}

/// A template change (`rev`): the rollout starts.
pub async fn change_template(g: &Gated, rev: &str) -> anyhow::Result<Started> {
    let from_seq = g.s.pod_watch_mark().await?;
    let (from, t0) = (g.ceph.elapsed(), Instant::now());
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": rev}}))
            .await?;
    Ok(Started {
        from,
        from_seq,
        t0,
        hash,
    })
}

/// A template change (`rev`) rolled out from `old` pods and checked (see [`finish`]).
pub async fn roll(
    g: &Gated,
    old: &BTreeMap<OsdKey, Pod>,
    rev: &str,
    expect: &Expect,
) -> anyhow::Result<Rollout> {
    let started = change_template(g, rev).await?;
    finish(g, started, old, expect).await
}

/// Waits until the pods of `started` converged and the gate is idle, then checks the pod
/// watch (one pod per disk, the update domains of `expect`) and Ceph's view (at most one rack
/// with an OSD down, no PG unavailable, at most `expect.copies_down` copies of a PG down, each
/// step started with every OSD up and every PG clean, every OSD stopped once, no `noout` left).
pub async fn finish(
    g: &Gated,
    started: Started,
    old: &BTreeMap<OsdKey, Pod>,
    expect: &Expect,
) -> anyhow::Result<Rollout> {
    let Started {
        from,
        from_seq,
        t0,
        hash,
    } = started;
    let pods = g.s.wait_converged(CR, &g.want, &hash, RACK_ROLLOUT).await;
    let pods = pods.map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.gate.render()))?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let wall = t0.elapsed();
    let idle_at = g.ceph.elapsed();
    g.cluster.wait_clean(Duration::from_mins(1)).await?;

    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    // The pod watch: one pod per disk, the domains one at a time.
    g.s.assert_one_pod_per_key().await.map_err(fail)?;
    let recorder = g.s.recorder()?;
    recorder
        .assert_unavailable_domains_at_most(&g.want, expect.domains.clone(), 1, from_seq)
        .map_err(fail)?;
    if expect.whole {
        (recorder.timeline())
            .check_rollout(&names_by_key(old), expect.domains.clone())
            .map_err(fail)?;
    }
    g.bridge.check().map_err(fail)?;
    // Ceph's view.
    let recording = g.ceph.recording();
    let ceph_from = expect.ceph_from.unwrap_or(from);
    recording
        .check_buckets_down_at_most("rack", 1, ceph_from)
        .map_err(fail)?;
    recording
        .check_pgs_never_unavailable(ceph_from)
        .map_err(fail)?;
    recording
        .check_copies_down_at_most(expect.copies_down, ceph_from)
        .map_err(fail)?;
    recording.check_no_noout_at_end().map_err(fail)?;
    let steps = steps_from(&g.bridge.daemons(), &recording, from);
    let mut since = from;
    for step in &steps {
        recording
            .check_clean_before(step.start, since)
            .map_err(fail)?;
        since = step.booted.unwrap_or(step.start);
    }
    let stopped: Vec<u32> = steps.iter().flat_map(|s| s.osds.clone()).collect();
    let mut once = stopped.clone();
    once.sort_unstable();
    once.dedup();
    anyhow::ensure!(
        stopped.len() == g.table.len() && once.len() == stopped.len(),
        "OSD stops {stopped:?} for {} OSDs: {steps:?}\n{report}",
        g.table.len()
    );
    Ok(Rollout {
        wall,
        steps,
        idle_at,
        pods,
    })
}

/// The racks of `step`'s OSDs.
pub fn racks_of(g: &Gated, step: &CephStep) -> Vec<String> {
    let mut racks: Vec<String> = (g.table.iter())
        .filter(|(_, id)| step.osds.contains(id))
        .filter_map(|(key, _)| g.rack_of.get(&key.host).cloned())
        .collect();
    racks.sort();
    racks.dedup();
    racks
}
