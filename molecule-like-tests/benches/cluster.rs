//! Cluster benchmark on the local control plane (`molecule-like-tests/control-plane up` first):
//! how long the operator takes to create the pods of a large CephOSD from empty, against a
//! bare client POSTing the same pods 16 at a time, measured in the same run. Writes its section
//! of BENCHMARKS.md. `BENCH_HOSTS` × `BENCH_OSDS_PER_HOST` (default 100 × 10).
//!
//!   cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench cluster

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::{CephOsd, Phase};
use ceph_osd_operator::CountingSuffix;
use ceph_osd_operator::{plan, Action, Observed};
use futures::{stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use molecule_like_tests::nodes::ensure_nodes;
use molecule_like_tests::scenario::{
    cephosd, fast_sample_template, is_ready, storage, OperatorOptions, Scenario, CR,
};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The pods the operator would create for `cr` in `namespace` (all batches).
fn rendered_pods(cr: &CephOsd) -> Vec<Pod> {
    let mut pods: Vec<Pod> = Vec::new();
    let mut suffixes = CountingSuffix::default();
    loop {
        let planned = plan(
            cr,
            &Observed::pods(&pods),
            &mut suffixes,
            Timestamp::UNIX_EPOCH,
        );
        let before = pods.len();
        pods.extend(planned.actions.into_iter().filter_map(|a| match a {
            Action::Create { pod, .. } => Some(*pod),
            _ => None,
        }));
        if pods.len() == before {
            return pods;
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (hosts, per_host) = (
        env_or("BENCH_HOSTS", 100),
        env_or("BENCH_OSDS_PER_HOST", 10),
    );
    let host_names: Vec<String> = (0..hosts).map(|h| format!("bench-{h:04}")).collect();
    let host_refs: Vec<&str> = host_names.iter().map(String::as_str).collect();
    let devices: Vec<String> = (0..per_host)
        .map(|d| format!("/dev/disk/by-id/osd-{d:02}"))
        .collect();
    let device_refs: Vec<&str> = devices.iter().map(String::as_str).collect();
    let manifest = cephosd(
        CR,
        storage(&host_refs, &device_refs),
        "Host",
        fast_sample_template()?,
    );
    let total = hosts * per_host;

    // Baseline: a bare client POSTs the same pods, 16 in flight.
    let bare = Scenario::create("bench-bare").await?;
    ensure_nodes(
        &bare.client,
        &host_names.iter().cloned().collect::<BTreeSet<_>>(),
    )
    .await?;
    let mut cr: CephOsd = serde_json::from_value(manifest.clone())?;
    cr.metadata.namespace = Some(bare.namespace.clone());
    cr.metadata.uid = Some("bench".into());
    let pods = rendered_pods(&cr);
    anyhow::ensure!(pods.len() == total, "rendered {} pods", pods.len());
    let api: Api<Pod> = Api::namespaced(bare.client.clone(), &bare.namespace);
    let started = Instant::now();
    let results: Vec<kube::Result<Pod>> = stream::iter(pods.into_iter().map(|mut pod| {
        let api = api.clone();
        pod.metadata.owner_references = None;
        async move { api.create(&PostParams::default(), &pod).await }
    }))
    .buffer_unordered(16)
    .collect()
    .await;
    let baseline = started.elapsed();
    anyhow::ensure!(
        results.iter().all(Result::is_ok),
        "the bare client's POSTs failed"
    );
    bare.destroy().await?;

    // The operator (release build next to this benchmark) creates them from the CephOSD.
    let mut s = Scenario::create("bench-operator").await?;
    s.start_operator(&OperatorOptions { resync_seconds: 30 })?;
    let started = Instant::now();
    s.create_cr(&manifest).await?;
    s.wait_until("every pod created", Duration::from_mins(10), || async {
        Ok((s.owned_pods(CR).await?.len() == total).then_some(()))
    })
    .await?;
    let created = started.elapsed();
    // The pods' own readiness (the scheduler, KWOK), then the operator's report of it.
    s.wait_until("every pod Ready", Duration::from_mins(10), || async {
        let pods = s.owned_pods(CR).await?;
        Ok((pods.len() == total && pods.iter().all(is_ready)).then_some(()))
    })
    .await?;
    let pods_ready = started.elapsed();
    s.wait_until("status Ready", Duration::from_mins(10), || async {
        let status = s.cr_status(CR).await?.unwrap_or_default();
        Ok((status.phase == Some(Phase::Ready)).then_some(()))
    })
    .await?;
    let ready = started.elapsed();
    s.destroy().await?;

    let section = format!(
        "## Creating a CephOSD of {total} OSDs ({hosts} hosts × {per_host}) on the local control plane\n\n\
         `cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench cluster`\n\n\
         | what | time | ÷ baseline |\n|---|---|---|\n\
         | baseline: a bare client POSTing the same {total} pods, 16 in flight | {:.1} s | 1.00 |\n\
         | the operator: CephOSD applied → every pod created | {:.1} s | {:.2} |\n\
         | every pod Ready (scheduled and started by kube-scheduler and KWOK; Ready 1 s after start) | {:.1} s | |\n\
         | the operator: status Ready | {:.1} s ({:.1} s after the last pod was seen Ready, polling every 0.2 s) | |\n",
        baseline.as_secs_f64(),
        created.as_secs_f64(),
        created.as_secs_f64() / baseline.as_secs_f64(),
        pods_ready.as_secs_f64(),
        ready.as_secs_f64(),
        ready.checked_sub(pods_ready).unwrap().as_secs_f64(),
    );
    print!("{section}");
    let path = molecule_like_tests::scenario::workspace_root().join("BENCHMARKS.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    let kept = doc
        .split("\n## Creating a CephOSD")
        .next()
        .unwrap_or_default();
    std::fs::write(&path, format!("{}\n\n{section}", kept.trim_end()))?;
    Ok(())
}
