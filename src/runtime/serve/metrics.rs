//! Prometheus metrics: reconciles, errors, durations, OSD pods by state, rollout progress, and
//! what each CephOSD's status shows since when (its conditions, the `noout` of its open Ceph
//! step, the drains waiting for its budget), so alerts can say how long a thing has lasted.

use crate::crd::CephOsdStatus;
use crate::plan::phases::report::status::Summary;
use crate::plan::says::failure::Failure;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The `state` label values of `osd_pods`.
const STATES: [&str; 6] = [
    "ready",
    "updated",
    "out-of-date",
    "unready",
    "invalid",
    "terminating",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CephOsdLabels {
    namespace: String,
    cephosd: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    namespace: String,
    cephosd: String,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConditionLabels {
    namespace: String,
    cephosd: String,
    r#type: String,
    status: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: String,
    resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CephCommandLabels {
    /// `osd dump`, `osd ok-to-stop`, … (without ids).
    command: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GateLabels {
    /// `Proceed`, or the first blocker's category.
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    category: &'static str,
}

/// All metrics of the operator process.
pub struct Metrics {
    registry: Registry,
    reconciles: Counter,
    unchanged: Counter,
    errors: Family<ErrorLabels, Counter>,
    duration: Histogram,
    domain_seconds: Histogram,
    pods: Family<StateLabels, Gauge>,
    desired: Family<CephOsdLabels, Gauge>,
    updated: Family<CephOsdLabels, Gauge>,
    leader: Gauge,
    api_requests: Family<RequestLabels, Counter>,
    gate_decisions: Family<GateLabels, Counter>,
    ceph_commands: Family<CephCommandLabels, Counter>,
    ceph_command_seconds: Family<CephCommandLabels, Counter<f64, AtomicU64>>,
    status: StatusSeries,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("ceph_osd_operator");
        let reconciles = Counter::default();
        let unchanged = Counter::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let duration = Histogram::new(exponential_buckets(0.005, 2.0, 12));
        let domain_seconds = Histogram::new(exponential_buckets(5.0, 2.0, 12));
        let pods = Family::<StateLabels, Gauge>::default();
        let desired = Family::<CephOsdLabels, Gauge>::default();
        let updated = Family::<CephOsdLabels, Gauge>::default();
        let leader = Gauge::default();
        let api_requests = Family::<RequestLabels, Counter>::default();
        let gate_decisions = Family::<GateLabels, Counter>::default();
        let ceph_commands = Family::<CephCommandLabels, Counter>::default();
        let ceph_command_seconds = Family::<CephCommandLabels, Counter<f64, AtomicU64>>::default();
        let status = StatusSeries::registered(&mut registry);
        registry.register(
            "ceph_commands",
            "Ceph CLI commands run by the gate, answered or not",
            ceph_commands.clone(),
        );
        registry.register(
            "ceph_command_seconds",
            "Time spent in Ceph CLI commands of the gate",
            ceph_command_seconds.clone(),
        );
        registry.register(
            "ceph_gate_decisions",
            "Answers of the Ceph gate before a rollout step: Proceed, or why not",
            gate_decisions.clone(),
        );
        registry.register("reconciles", "Reconciles run", reconciles.clone());
        registry.register(
            "reconciles_unchanged",
            "Reconciles skipped: their inputs were those of a plan with nothing to do",
            unchanged.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Failed reconciles by category",
            errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Duration of a reconcile",
            duration.clone(),
        );
        registry.register(
            "update_domain_duration_seconds",
            "Time an update domain took in a rollout, from the deletion of its old pods to its new pods Ready and soaked",
            domain_seconds.clone(),
        );
        registry.register("osd_pods", "OSD pods of a CephOSD by state", pods.clone());
        registry.register("osds_desired", "OSDs a CephOSD asks for", desired.clone());
        registry.register(
            "osds_updated",
            "OSD pods on the current template (rollout progress)",
            updated.clone(),
        );
        registry.register(
            "leader",
            "1 while this process acts: it holds the leader lease, or runs without leader election",
            leader.clone(),
        );
        registry.register(
            "api_requests",
            "Requests sent to the Kubernetes API by verb and resource",
            api_requests.clone(),
        );
        Self {
            registry,
            reconciles,
            unchanged,
            errors,
            duration,
            domain_seconds,
            pods,
            desired,
            updated,
            leader,
            api_requests,
            gate_decisions,
            ceph_commands,
            ceph_command_seconds,
            status,
        }
    }
}

impl Metrics {
    pub fn reconciled(&self, namespace: &str, cephosd: &str, summary: &Summary, took: Duration) {
        self.reconciles.inc();
        self.duration.observe(took.as_secs_f64());
        let counts = [
            summary.ready,
            summary.updated,
            summary.out_of_date,
            summary.unready,
            summary.invalid,
            summary.terminating,
        ];
        for (state, count) in STATES.into_iter().zip(counts) {
            let labels = StateLabels {
                namespace: namespace.to_owned(),
                cephosd: cephosd.to_owned(),
                state,
            };
            self.pods.get_or_create(&labels).set(gauge(count));
        }
        let labels = CephOsdLabels {
            namespace: namespace.to_owned(),
            cephosd: cephosd.to_owned(),
        };
        self.desired
            .get_or_create(&labels)
            .set(gauge(summary.desired));
        self.updated
            .get_or_create(&labels)
            .set(gauge(summary.updated));
    }

    /// Update domains a rollout finished, with the seconds each took.
    pub fn domains_finished(&self, seconds: &[i64]) {
        for s in seconds {
            #[allow(clippy::cast_precision_loss)] // durations far below 2^52 seconds
            self.domain_seconds.observe(*s as f64);
        }
    }

    /// A reconcile skipped because nothing changed since a plan with nothing to do.
    pub fn unchanged(&self, took: Duration) {
        self.reconciles.inc();
        self.unchanged.inc();
        self.duration.observe(took.as_secs_f64());
    }

    /// What the status of a CephOSD shows after a reconcile: its conditions since when, the
    /// `noout` its open Ceph step holds (with the limit), the drains waiting for its budget.
    pub(crate) fn status_shown(
        &self,
        namespace: &str,
        cephosd: &str,
        status: &CephOsdStatus,
        max_noout: Duration,
    ) {
        self.status.show(namespace, cephosd, status, max_noout);
    }

    /// Drops the series of a CephOSD that no longer exists.
    pub fn forget(&self, namespace: &str, cephosd: &str) {
        for state in STATES {
            self.pods.remove(&StateLabels {
                namespace: namespace.to_owned(),
                cephosd: cephosd.to_owned(),
                state,
            });
        }
        let labels = CephOsdLabels {
            namespace: namespace.to_owned(),
            cephosd: cephosd.to_owned(),
        };
        self.desired.remove(&labels);
        self.updated.remove(&labels);
        self.status.forget(&labels);
    }

    pub fn failed(&self, failure: Failure, took: Duration) {
        self.reconciles.inc();
        self.duration.observe(took.as_secs_f64());
        self.errors
            .get_or_create(&ErrorLabels {
                category: failure.as_str(),
            })
            .inc();
    }

    /// Counts one Ceph CLI command and the time it took.
    pub(crate) fn ceph_command(&self, command: &'static str, took: Duration) {
        let labels = CephCommandLabels { command };
        self.ceph_commands.get_or_create(&labels).inc();
        self.ceph_command_seconds
            .get_or_create(&labels)
            .inc_by(took.as_secs_f64());
    }

    /// Counts one answer of the Ceph gate (`Proceed` or a blocker's category).
    pub(crate) fn gate_decided(&self, decision: &'static str) {
        self.gate_decisions
            .get_or_create(&GateLabels { decision })
            .inc();
    }

    pub fn api_request(&self, verb: String, resource: String) {
        self.api_requests
            .get_or_create(&RequestLabels { verb, resource })
            .inc();
    }

    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// What each CephOSD's status shows since when: its conditions, the `noout` its open Ceph step
/// holds (with the limit), the drains waiting for its budget.
struct StatusSeries {
    condition_since: Family<ConditionLabels, Gauge>,
    /// The condition series each CephOSD shows now, to drop those its status no longer has.
    conditions_shown: Mutex<HashMap<CephOsdLabels, Vec<ConditionLabels>>>,
    noout_since: Family<CephOsdLabels, Gauge>,
    noout_limit: Family<CephOsdLabels, Gauge>,
    drains_waiting: Family<CephOsdLabels, Gauge>,
}

impl StatusSeries {
    fn registered(registry: &mut Registry) -> Self {
        let condition_since = Family::<ConditionLabels, Gauge>::default();
        let noout_since = Family::<CephOsdLabels, Gauge>::default();
        let noout_limit = Family::<CephOsdLabels, Gauge>::default();
        let drains_waiting = Family::<CephOsdLabels, Gauge>::default();
        registry.register(
            "condition_since_timestamp_seconds",
            "Each status condition of a CephOSD (type, status, reason) and since when its status holds (lastTransitionTime, Unix seconds)",
            condition_since.clone(),
        );
        registry.register(
            "ceph_noout_since_timestamp_seconds",
            "While a CephOSD's open Ceph step holds noout on its OSDs: when the step started (Unix seconds)",
            noout_since.clone(),
        );
        registry.register(
            "ceph_noout_limit_seconds",
            "While a CephOSD's open Ceph step holds noout: how long it may (--ceph-max-noout-seconds)",
            noout_limit.clone(),
        );
        registry.register(
            "budget_drains_waiting",
            "Cordoned hosts of a CephOSD whose OSD pods still run (their drains wait for the disruption budget)",
            drains_waiting.clone(),
        );
        Self {
            condition_since,
            conditions_shown: Mutex::default(),
            noout_since,
            noout_limit,
            drains_waiting,
        }
    }

    fn show(&self, namespace: &str, cephosd: &str, status: &CephOsdStatus, max_noout: Duration) {
        let of = CephOsdLabels {
            namespace: namespace.to_owned(),
            cephosd: cephosd.to_owned(),
        };
        let shown: Vec<ConditionLabels> = status
            .conditions
            .iter()
            .map(|c| {
                let labels = ConditionLabels {
                    namespace: namespace.to_owned(),
                    cephosd: cephosd.to_owned(),
                    r#type: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                };
                self.condition_since
                    .get_or_create(&labels)
                    .set(c.last_transition_time.0.as_second());
                labels
            })
            .collect();
        let mut all = self
            .conditions_shown
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for gone in all.get(&of).into_iter().flatten() {
            if !shown.contains(gone) {
                self.condition_since.remove(gone);
            }
        }
        all.insert(of.clone(), shown);
        drop(all);
        match &status.ceph_step {
            Some(step) if !step.noout.is_empty() => {
                self.noout_since
                    .get_or_create(&of)
                    .set(step.started.0.as_second());
                self.noout_limit
                    .get_or_create(&of)
                    .set(i64::try_from(max_noout.as_secs()).unwrap_or(i64::MAX));
            }
            _ => {
                self.noout_since.remove(&of);
                self.noout_limit.remove(&of);
            }
        }
        match &status.budget {
            Some(budget) => {
                self.drains_waiting
                    .get_or_create(&of)
                    .set(gauge(budget.drains_waiting.len()));
            }
            None => {
                self.drains_waiting.remove(&of);
            }
        }
    }

    fn forget(&self, labels: &CephOsdLabels) {
        let shown = self
            .conditions_shown
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(labels);
        for gone in shown.into_iter().flatten() {
            self.condition_since.remove(&gone);
        }
        self.noout_since.remove(labels);
        self.noout_limit.remove(labels);
        self.drains_waiting.remove(labels);
    }
}

fn gauge(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
