//! The planner fed from a watch cache that lags arbitrarily behind the API, guarded by
//! expectations (see `runtime/memory/expectations.rs`): whatever the lag, never two pods on one disk, and
//! once the cache catches up everything converges.

use super::*;
use crate::crd::UpdateDomain;
use crate::runtime::memory::expectations::{Expectations, Expected, Readiness};
use k8s_openapi::api::core::v1::Pod;

/// A cluster whose every state is kept: the cache may show any of them, never going back.
struct LaggingCache {
    cluster: Cluster,
    history: Vec<(Vec<Pod>, Vec<ReplicaSet>)>,
    /// The newest state the cache has shown so far.
    shown: usize,
    expectations: Expectations,
}

const TIMEOUT: SignedDuration = SignedDuration::from_secs(10);

impl LaggingCache {
    fn new(cluster: Cluster) -> Self {
        let mut this = Self {
            cluster,
            history: Vec::new(),
            shown: 0,
            expectations: Expectations::default(),
        };
        this.record();
        this
    }

    fn record(&mut self) {
        self.history
            .push((self.cluster.pods.clone(), self.cluster.replica_sets.clone()));
    }

    /// A reconcile whose cache is `lag` states behind (but never behind what it showed).
    fn reconcile(&mut self, cr: &CephOsd, lag: usize) {
        let newest = self.history.len() - 1;
        self.shown = self.shown.max(newest.saturating_sub(lag));
        let (cached_pods, cached_sets) = self.history[self.shown].clone();
        let now = at(self.cluster.clock);
        let (pods, replica_sets) =
            match self
                .expectations
                .check(&cached_pods, &cached_sets, now, TIMEOUT)
            {
                Readiness::Wait => return,
                Readiness::Cache => (cached_pods, cached_sets),
                Readiness::List => {
                    let listed = (self.cluster.pods.clone(), self.cluster.replica_sets.clone());
                    self.expectations.listed(&listed.0, &listed.1, now);
                    listed
                }
            };
        let plan = self.cluster.reconcile_from(cr, &pods, &replica_sets);
        for action in &plan.actions {
            if let Some(expected) = Expected::of(action) {
                self.expectations.expect(expected, now);
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Event {
    Reconcile {
        lag: usize,
    },
    FinishTerminations,
    Ready(usize),
    Unready(usize),
    /// An admin deletes a pod.
    Delete(usize),
    /// The template is edited (a rollout starts).
    Edit,
    /// Time passes (expectations may time out).
    Wait(i64),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => (0usize..30).prop_map(|lag| Event::Reconcile { lag }),
        3 => Just(Event::FinishTerminations),
        3 => (0usize..8).prop_map(Event::Ready),
        1 => (0usize..8).prop_map(Event::Unready),
        1 => (0usize..8).prop_map(Event::Delete),
        1 => Just(Event::Edit),
        1 => (1i64..15).prop_map(Event::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_lagging_cache_never_puts_two_pods_on_one_disk(
        host_domain in any::<bool>(),
        events in prop::collection::vec(event(), 1..150),
    ) {
        let domain = if host_domain { UpdateDomain::Host } else { UpdateDomain::Osd };
        let mut cr = cr(domain, &["h1", "h2"], &["/dev/sdb", "/dev/sdc"], "a");
        let mut model = LaggingCache::new(converged(&cr));
        let mut revision = 0;
        for event in events {
            model.cluster.clock += 1;
            match event {
                Event::Reconcile { lag } => model.reconcile(&cr, lag),
                Event::FinishTerminations => model.cluster.finish_terminations(),
                Event::Ready(i) => if let Some(p) = model.cluster.pods.get_mut(i) {
                    set_ready(p, true);
                },
                Event::Unready(i) => if let Some(p) = model.cluster.pods.get_mut(i) {
                    set_ready(p, false);
                },
                Event::Delete(i) => if let Some(p) = model.cluster.pods.get_mut(i) {
                    p.metadata.deletion_timestamp = Some(
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(0)),
                    );
                },
                Event::Edit => {
                    revision += 1;
                    cr.spec.pod_template = template(&format!("r{revision}"));
                }
                Event::Wait(seconds) => model.cluster.clock += seconds,
            }
            model.record();
            prop_assert!(
                one_pod_per_disk(&model.cluster.pods).is_ok(),
                "{:?}",
                one_pod_per_disk(&model.cluster.pods)
            );
        }
        // The cache catches up: everything converges to the spec.
        for _ in 0..100 {
            model.cluster.clock += 1;
            model.reconcile(&cr, 0);
            model.cluster.finish_terminations();
            model.cluster.make_all_ready();
            model.record();
            prop_assert!(one_pod_per_disk(&model.cluster.pods).is_ok());
        }
        let hash = crate::hash::TemplateHash::of(&cr.spec.pod_template);
        let live = model.cluster.live();
        prop_assert_eq!(live.len(), 4);
        let current = live.iter().all(|p| {
            super::tests::annotation(p, crate::labels::TEMPLATE_HASH) == Some(hash.as_str())
        });
        prop_assert!(current, "every pod on the last template");
    }
}

/// The guard is what makes it safe: without expectations, a cache that has not seen our own
/// creation makes the planner create a second pod for the same disk.
#[test]
fn without_expectations_a_stale_cache_creates_a_second_pod() {
    let cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut cluster = Cluster::default();
    let stale: Vec<Pod> = Vec::new();
    cluster.reconcile_from(&cr, &stale, &[]);
    cluster.reconcile_from(&cr, &stale, &[]);
    assert!(one_pod_per_disk(&cluster.pods).is_err());

    let mut model = LaggingCache::new(Cluster::default());
    model.reconcile(&cr, 0);
    model.record();
    // The cache still shows the empty cluster: the reconcile waits.
    model.reconcile(&cr, usize::MAX);
    assert_eq!(model.cluster.pods.len(), 1);
    assert!(one_pod_per_disk(&model.cluster.pods).is_ok());
}
