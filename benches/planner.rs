//! Planner benchmark: how long one reconcile's planning takes for large CephOSDs.
//! `cargo bench --bench planner` prints the figures and rewrites BENCHMARKS.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixture;

use ceph_osd_operator::{ExpandedSpec, MAX_CREATIONS_PER_PLAN};
use fixture::{cephosd, converged_pods, plan_from};
use k8s_openapi::api::core::v1::Pod;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

fn median_time(mut run: impl FnMut()) -> Duration {
    let mut samples: Vec<Duration> = (0..15)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let mut table = String::from(
        "| OSDs (hosts × OSDs) | baseline: decode the pod LIST | plan, steady state | the same, spec already expanded (the operator's case) | plan, rollout start (all out of date) | plan, first creation (renders up to 1,000 pods) | steady, expanded ÷ baseline |\n|---|---|---|---|---|---|---|\n",
    );
    for (hosts, per_host) in [(10, 10), (100, 10), (1000, 10)] {
        let cr = cephosd(hosts, per_host, "a");
        let pods = converged_pods(&cr);
        assert_eq!(pods.len(), hosts * per_host);
        // What every reconcile's pod LIST costs the client before planning starts.
        let listed = serde_json::to_string(&pods).expect("json");
        let baseline = median_time(|| {
            let decoded: Vec<Pod> = serde_json::from_str(&listed).expect("decodes");
            assert_eq!(decoded.len(), pods.len());
        });
        let changed = cephosd(hosts, per_host, "b");
        // `plan` itself expands the spec: these plans do too.
        let steady = median_time(|| {
            assert!(plan_from(&cr, &ExpandedSpec::of(&cr.spec), &pods)
                .actions
                .is_empty());
        });
        let expanded = ExpandedSpec::of(&cr.spec);
        let steady_expanded = median_time(|| {
            assert!(plan_from(&cr, &expanded, &pods).actions.is_empty());
        });
        let rollout = median_time(|| {
            let p = plan_from(&changed, &ExpandedSpec::of(&changed.spec), &pods);
            assert_eq!(p.replacing.len(), per_host);
        });
        let create = median_time(|| {
            let p = plan_from(&cr, &ExpandedSpec::of(&cr.spec), &[]);
            assert_eq!(
                p.actions.len(),
                (hosts * per_host).min(MAX_CREATIONS_PER_PLAN)
            );
        });
        let row = format!(
            "| {} ({hosts} × {per_host}) | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} |\n",
            hosts * per_host,
            baseline.as_secs_f64() * 1e3,
            steady.as_secs_f64() * 1e3,
            steady_expanded.as_secs_f64() * 1e3,
            rollout.as_secs_f64() * 1e3,
            create.as_secs_f64() * 1e3,
            steady_expanded.as_secs_f64() / baseline.as_secs_f64()
        );
        print!("{row}");
        table.push_str(&row);
    }
    let mut doc = String::from("# Benchmarks\n\n");
    let _ = writeln!(
        doc,
        "Planner time per reconcile (median of 15 runs, release build), measured by \
         `cargo bench --bench planner`, which rewrites this file. Reconciles read pods from \
         the watch cache; the baseline, measured in the same run, is what decoding one LIST \
         of the same pods costs the client (what every reconcile paid before the cache). \
         `cargo bench --bench planner_criterion` measures the same plans under criterion \
         (confidence intervals, comparison with its last run).\n\n\
         Target: the steady-state plan well under that baseline (ratio < 1), so planning \
         never dominates a reconcile, and under a millisecond at 1,000 OSDs. The operator \
         expands a CephOSD's spec (its OSDs, disks, template hash and problems) once per \
         version of the CephOSD, so its steady-state plans cost the \"spec already expanded\" \
         column; the first plan of a new version (a rollout's start, for one) pays the expansion \
         too. Pod additions come from the built-in template rendered once per shape and filled \
         per pod. What remains (perf): classifying each pod (its annotations, its OSD key, \
         allocated anew each plan) and the status; past 1,000 OSDs the maps outgrow the CPU \
         caches. A resync of a settled CephOSD does not plan at all (its inputs are those of \
         the last plan, which had nothing to do).\n\nMeasured on: {} cores, {}.\n",
        std::thread::available_parallelism().map_or(1, usize::from),
        std::env::consts::ARCH
    );
    doc.push_str(&table);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/BENCHMARKS.md");
    // The cluster benchmark's section (molecule-like-tests/benches/cluster.rs) stays.
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    let cluster = existing
        .find("\n## The operator on the local control plane")
        .map_or("", |i| &existing[i..]);
    std::fs::write(path, format!("{doc}{cluster}")).expect("writes BENCHMARKS.md");
}
