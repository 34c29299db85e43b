//! The planner alone under criterion (confidence intervals, outliers, comparison with the last
//! run): one plan in steady state (with the spec expanded anew, and already expanded as the
//! operator keeps it per CephOSD version), at the start of a rollout, and creating the first
//! 1,000 pods, at 1,000 and 10,000 OSDs.
//! `cargo bench --bench planner_criterion`; the table in BENCHMARKS.md comes from
//! `cargo bench --bench planner`, which plans from the same fixtures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixture;

use ceph_osd_operator::{ExpandedSpec, MAX_CREATIONS_PER_PLAN};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fixture::{cephosd, converged_pods, plan_from};

fn planner(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan");
    group.sample_size(10);
    for (hosts, per_host) in [(100, 10), (1000, 10)] {
        let osds = hosts * per_host;
        let cr = cephosd(hosts, per_host, "a");
        let changed = cephosd(hosts, per_host, "b");
        let pods = converged_pods(&cr);
        let expanded = ExpandedSpec::of(&cr.spec);
        group.bench_function(BenchmarkId::new("steady state", osds), |b| {
            b.iter(|| {
                assert!(plan_from(&cr, &ExpandedSpec::of(&cr.spec), &pods)
                    .actions
                    .is_empty());
            });
        });
        group.bench_function(BenchmarkId::new("steady state, spec expanded", osds), |b| {
            b.iter(|| {
                assert!(plan_from(&cr, &expanded, &pods).actions.is_empty());
            });
        });
        group.bench_function(BenchmarkId::new("first creation", osds), |b| {
            b.iter(|| {
                let p = plan_from(&cr, &expanded, &[]);
                assert_eq!(p.actions.len(), osds.min(MAX_CREATIONS_PER_PLAN));
            });
        });
        group.bench_function(BenchmarkId::new("rollout start", osds), |b| {
            b.iter(|| {
                let p = plan_from(&changed, &ExpandedSpec::of(&changed.spec), &pods);
                assert_eq!(p.replacing.len(), per_host);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, planner);
criterion_main!(benches);
