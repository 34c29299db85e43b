//! The planner's tests: a tiny simulated cluster (`Cluster`) that applies plans, plays kubelet
//! and finishes terminations, and the helpers every planner test shares. The tests themselves
//! are in `tests/`, by concern.

use super::*;
use crate::crd::desired::desired_osds;
use crate::crd::osd::CountingSuffix;
use crate::crd::update_domain::domain_id;
use crate::crd::UpdateDomain;
use crate::labels;
use crate::labels::PodState;
use crate::plan::gate::CephView;
use crate::plan::observed::classify::PodClass;
use crate::plan::observed::classify::{classify, Owner, Timing};
use crate::plan::rules::budget::pod_selector;
use crate::plan::rules::budget::DisruptionView;
use crate::plan::says::actions::{CreateReason, DeleteReason};
use crate::plan::says::events::EventReason;
use crate::testing::CephOsdBuilder;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::core::SelectorExt;
use kube::ResourceExt;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

mod budget;
mod cache;
mod ceph_gate;
mod crush_looks;
mod deletion;
mod migration;
mod removal;
mod replacement;
mod rollout_controls;
mod rules;
mod safety;
mod topology;

pub(super) fn template(marker: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"role": "osd"}},
           "spec": {"containers": [{"name": "osd", "image": "ceph", "env": [{"name": "M", "value": marker}]}]}})
}

pub(crate) fn cr(domain: UpdateDomain, hosts: &[&str], datas: &[&str], marker: &str) -> CephOsd {
    CephOsdBuilder::new("ceph-osds")
        .storage(hosts, datas)
        .update_domain(domain)
        .template(template(marker))
        .namespace("ceph")
        .uid("cr-uid")
        .generation(1)
        .build()
        .expect("a CephOSD")
}

/// A tiny in-memory cluster: applies plans, plays kubelet, finishes terminations.
#[derive(Default)]
pub(crate) struct Cluster {
    pub(crate) pods: Vec<Pod>,
    /// ReplicaSets of the Ansible operator (see `run_replica_set_controller`).
    pub(super) replica_sets: Vec<ReplicaSet>,
    suffixes: CountingSuffix,
    uid: u32,
    /// The CR's status as last written by a plan.
    pub(crate) status: Option<crate::crd::CephOsdStatus>,
    /// Seconds since the epoch: the simulated clock.
    pub(super) clock: i64,
    /// What the planner is told of Ceph (default: no Ceph configured).
    pub(super) ceph: CephView,
    /// PodDisruptionBudgets and cordons, when the planner is shown them (default: not).
    pub(super) disruption: Option<SimulatedDisruption>,
    /// What the planner is told of the hosts' failure domains.
    pub(super) topology: crate::plan::topology::TopologyView,
}

/// The PodDisruptionBudgets of the namespace and the cordoned nodes, as the API server and
/// kube-controller-manager's disruption controller keep them.
#[derive(Default)]
pub(super) struct SimulatedDisruption {
    pub(super) budgets: Vec<k8s_openapi::api::policy::v1::PodDisruptionBudget>,
    pub(super) cordoned: BTreeSet<String>,
    /// The last resourceVersion handed out.
    version: u64,
    /// Whether an admitted eviction's pod deletion waits for `land_evictions` (the API server
    /// updates the budget first, then deletes the pod).
    pub(super) deletions_lag: bool,
    /// Admitted evictions whose pods are not deleted yet.
    landing: Vec<String>,
}

impl SimulatedDisruption {
    fn bump(&mut self) -> String {
        self.version += 1;
        self.version.to_string()
    }

    /// Applies a budget write as the API server would (a reservation at a stale
    /// resourceVersion fails: false).
    fn write(
        &mut self,
        budget: &k8s_openapi::api::policy::v1::PodDisruptionBudget,
        exists: bool,
        resource_version: Option<&str>,
    ) -> bool {
        let name = budget.metadata.name.clone();
        let version = self.bump();
        let found = self.budgets.iter_mut().find(|b| b.metadata.name == name);
        match (found, exists) {
            (None, false) => {
                let mut created = budget.clone();
                created.metadata.generation = Some(1);
                created.metadata.resource_version = Some(version);
                created.metadata.uid = Some("budget-uid".into());
                self.budgets.push(created);
                true
            }
            (Some(current), true) => {
                if resource_version
                    .is_some_and(|v| current.metadata.resource_version.as_deref() != Some(v))
                {
                    return false;
                }
                if current.spec != budget.spec {
                    current.metadata.generation =
                        Some(current.metadata.generation.unwrap_or(0) + 1);
                }
                current.spec.clone_from(&budget.spec);
                // A merge patch: the labels merge, the owner references are replaced.
                if let Some(labels) = &budget.metadata.labels {
                    (current.metadata.labels.get_or_insert_with(Default::default))
                        .extend(labels.clone());
                }
                (current.metadata.owner_references).clone_from(&budget.metadata.owner_references);
                current.metadata.resource_version = Some(version);
                true
            }
            _ => false,
        }
    }

    /// The disruption controller: each budget's counts over `pods`, for its generation.
    pub(super) fn run_controller(&mut self, pods: &[Pod]) {
        for i in 0..self.budgets.len() {
            let version = self.bump();
            let budget = &mut self.budgets[i];
            let spec = budget.spec.clone().unwrap_or_default();
            let selected: Vec<&Pod> = pod_selector(budget)
                .map(|s| pods.iter().filter(|p| s.matches(p.labels())).collect())
                .unwrap_or_default();
            // An admitted eviction stays listed until its pod is seen deleted, and its pod
            // counts as gone.
            let disrupted = budget
                .status
                .as_mut()
                .and_then(|s| s.disrupted_pods.as_mut());
            if let Some(disrupted) = disrupted {
                disrupted.retain(|name, _| {
                    pods.iter()
                        .any(|p| p.name_any() == *name && p.metadata.deletion_timestamp.is_none())
                });
            }
            let disrupted = budget
                .status
                .as_ref()
                .and_then(|s| s.disrupted_pods.clone())
                .unwrap_or_default();
            let healthy = selected
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p))
                .filter(|p| !disrupted.contains_key(&p.name_any()))
                .count();
            let healthy = i32::try_from(healthy).expect("few pods");
            let min = match spec.min_available {
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => n,
                _ => healthy,
            };
            let status = budget.status.get_or_insert_with(Default::default);
            status.observed_generation = budget.metadata.generation;
            status.expected_pods = Some(i32::try_from(selected.len()).expect("few pods"));
            status.current_healthy = Some(healthy);
            status.desired_healthy = Some(min);
            status.disruptions_allowed = Some((healthy - min).max(0));
            budget.metadata.resource_version = Some(version);
        }
    }

    /// The eviction API: `Ok` when `pod` may go (it is then terminating), `Err` with the
    /// API server's answer otherwise.
    pub(super) fn evict(&mut self, pod: &mut Pod) -> Result<(), &'static str> {
        let labels = pod.labels().clone();
        let mut covering: Vec<usize> = (0..self.budgets.len())
            .filter(|&i| pod_selector(&self.budgets[i]).is_some_and(|s| s.matches(&labels)))
            .collect();
        if covering.len() > 1 {
            return Err("500 This pod has more than one PodDisruptionBudget");
        }
        let mut counted = false;
        if let Some(i) = covering.pop() {
            let unhealthy_goes = !is_ready(pod);
            counted = !unhealthy_goes;
            let version = self.bump();
            let budget = &mut self.budgets[i];
            let status = budget.status.get_or_insert_with(Default::default);
            if status.observed_generation != budget.metadata.generation {
                return Err("429 the disruption budget is being updated");
            }
            if !unhealthy_goes {
                let allowed = status.disruptions_allowed.unwrap_or(0);
                if allowed < 1 {
                    return Err(
                        "429 Cannot evict pod as it would violate the pod's disruption budget",
                    );
                }
                status.disruptions_allowed = Some(allowed - 1);
                status
                    .disrupted_pods
                    .get_or_insert_with(Default::default)
                    .insert(pod.name_any(), Time(at(0)));
                budget.metadata.resource_version = Some(version);
            }
        }
        // A pod no budget counts is deleted in the eviction's own request; a counted one
        // right after the budget's update.
        if self.deletions_lag && counted {
            self.landing.push(pod.name_any());
        } else {
            pod.metadata.deletion_timestamp = Some(Time(at(0)));
        }
        Ok(())
    }
}

impl Cluster {
    /// Deletes the pods of the admitted evictions.
    pub(super) fn land_evictions(&mut self) {
        let landing = self
            .disruption
            .as_mut()
            .map(|d| std::mem::take(&mut d.landing))
            .unwrap_or_default();
        for name in landing {
            if let Some(pod) = self.pod_mut(&name) {
                pod.metadata.deletion_timestamp = Some(Time(at(0)));
            }
        }
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub(super) fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("valid time")
}

impl Cluster {
    pub(super) fn reconcile(&mut self, cr: &CephOsd) -> Plan {
        let mut cr = cr.clone();
        cr.status = self.status.clone();
        let mut observed = Observed::new(&self.pods, &self.replica_sets);
        observed.ceph = self.ceph.clone();
        observed.topology = self.topology.clone();
        observed.disruption = self.disruption.as_ref().map(|d| DisruptionView {
            budgets: d.budgets.iter().collect(),
            cordoned: d.cordoned.clone(),
        });
        let plan = plan(&cr, &observed, &mut self.suffixes, at(self.clock));
        self.apply(&plan);
        plan
    }

    /// Plans from `pods` and `replica_sets` (what a cache showed, perhaps long ago) and
    /// applies the plan to the cluster as it is now.
    pub(super) fn reconcile_from(
        &mut self,
        cr: &CephOsd,
        pods: &[Pod],
        replica_sets: &[ReplicaSet],
    ) -> Plan {
        let mut cr = cr.clone();
        cr.status = self.status.clone();
        let observed = Observed::new(pods, replica_sets);
        let plan = plan(&cr, &observed, &mut self.suffixes, at(self.clock));
        self.apply(&plan);
        plan
    }

    /// Applies a plan's actions and status, as the executor would.
    pub(super) fn apply(&mut self, plan: &Plan) {
        self.status = Some(plan.status.clone());
        for action in &plan.actions {
            match action {
                Action::Delete { name, .. } | Action::DeletePrePull { name, .. } => {
                    if let Some(p) = self.pod_mut(name) {
                        p.metadata.deletion_timestamp =
                            Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
                    }
                }
                Action::Create { pod, .. } | Action::CreatePrePull { pod, .. } => {
                    let mut pod = (**pod).clone();
                    self.uid += 1;
                    pod.metadata.uid = Some(format!("pod-uid-{}", self.uid));
                    pod.metadata.creation_timestamp = Some(Time(at(self.clock)));
                    assert!(self.pod_mut(&pod.name_any()).is_none(), "name clash");
                    self.pods.push(pod);
                }
                Action::PatchState { name, state, .. } => {
                    // A pod gone meanwhile: the API answers 404, nothing changes.
                    if let Some(pod) = self.pod_mut(name) {
                        annotate(pod, labels::POD_STATE, state.as_str());
                    }
                }
                Action::DeleteReplicaSet { name, .. } => self.delete_replica_set(name),
                // The status is applied above; Ceph is not simulated here.
                Action::RecordCephStep
                | Action::SetNoout { .. }
                | Action::ClearNoout { .. }
                | Action::MarkOut { .. }
                | Action::MarkIn { .. }
                | Action::DestroyOsd { .. }
                | Action::RequireOsdRelease { .. } => {}
                Action::LetGo {
                    name, owner_uid, ..
                } => {
                    if let Some(pod) = self.pod_mut(name) {
                        if let Some(refs) = pod.metadata.owner_references.as_mut() {
                            refs.retain(|r| r.uid != *owner_uid);
                        }
                    }
                }
                Action::LabelDomain { name, value } => {
                    if let Some(pod) = self.pod_mut(name) {
                        pod.labels_mut()
                            .insert(labels::UPDATE_DOMAIN.to_owned(), value.clone());
                    }
                }
                Action::WriteBudget {
                    budget,
                    exists,
                    resource_version,
                } => {
                    let disruption = self.disruption.as_mut().expect("budgets simulated");
                    if !disruption.write(budget, *exists, resource_version.as_deref()) {
                        // The executor stops at the first failed write.
                        return;
                    }
                }
                Action::DeleteBudget { name, .. } => {
                    let disruption = self.disruption.as_mut().expect("budgets simulated");
                    disruption
                        .budgets
                        .retain(|b| b.metadata.name.as_deref() != Some(name));
                }
            }
        }
    }

    pub(super) fn pod_mut(&mut self, name: &str) -> Option<&mut Pod> {
        self.pods.iter_mut().find(|p| p.name_any() == name)
    }

    pub(super) fn finish_terminations(&mut self) {
        self.pods
            .retain(|p| p.metadata.deletion_timestamp.is_none());
        // Foreground deletion: a ReplicaSet goes once its pods are gone.
        let pods = &self.pods;
        self.replica_sets.retain(|rs| {
            rs.metadata.deletion_timestamp.is_none()
                || pods.iter().any(|p| controller_uid(p) == rs.metadata.uid)
        });
    }

    /// Foreground deletion: the ReplicaSet gets a deletionTimestamp; its pods only once the
    /// garbage collector runs.
    pub(super) fn delete_replica_set(&mut self, name: &str) {
        if let Some(rs) = self
            .replica_sets
            .iter_mut()
            .find(|rs| rs.name_any() == name)
        {
            rs.metadata.deletion_timestamp = Some(Time(at(0)));
        }
    }

    /// What the garbage collector does: the pods of a ReplicaSet being deleted get a
    /// deletionTimestamp.
    pub(super) fn run_garbage_collector(&mut self) {
        let standing: Vec<Option<String>> = self
            .replica_sets
            .iter()
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .map(|rs| rs.metadata.uid.clone())
            .collect();
        for pod in &mut self.pods {
            let of_replica_set = pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && o.kind == "ReplicaSet");
            // Its ReplicaSet being deleted, or gone (a dangling owner reference).
            if of_replica_set
                && !standing.contains(&controller_uid(pod))
                && pod.metadata.deletion_timestamp.is_none()
            {
                pod.metadata.deletion_timestamp = Some(Time(at(0)));
            }
        }
    }

    /// What the ReplicaSet controller does: a ReplicaSet that is not being deleted and has no
    /// active (non-terminating) pod gets a new one from its template.
    pub(super) fn run_replica_set_controller(&mut self) {
        let mut new = Vec::new();
        for rs in &self.replica_sets {
            let active = self.pods.iter().any(|p| {
                controller_uid(p) == rs.metadata.uid && p.metadata.deletion_timestamp.is_none()
            });
            if rs.metadata.deletion_timestamp.is_some() || active {
                continue;
            }
            let template = rs.spec.template.clone().unwrap_or_default();
            self.uid += 1;
            let mut pod = Pod {
                metadata: template.metadata.unwrap_or_default(),
                spec: template.spec,
                status: None,
            };
            pod.metadata.name = Some(format!("{}-p{:04}", rs.name_any(), self.uid));
            pod.metadata.uid = Some(format!("pod-uid-{}", self.uid));
            pod.metadata.creation_timestamp = Some(Time(at(self.clock)));
            pod.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: rs.name_any(),
                uid: rs.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]);
            new.push(pod);
        }
        self.pods.extend(new);
    }

    pub(super) fn make_all_ready(&mut self) {
        for pod in &mut self.pods {
            set_ready(pod, true);
        }
    }

    /// Reconciles, finishes terminations and readies pods until nothing changes.
    pub(super) fn settle(&mut self, cr: &CephOsd) -> Vec<Plan> {
        let mut plans = Vec::new();
        for _ in 0..100 {
            let plan = self.reconcile(cr);
            let idle = plan.actions.is_empty()
                && plan.summary.terminating == 0
                && plan.summary.unready == 0
                && plan.summary.migrating == 0
                && (self.replica_sets.iter()).all(|rs| rs.metadata.deletion_timestamp.is_none());
            plans.push(plan);
            if idle {
                return plans;
            }
            self.run_garbage_collector();
            self.finish_terminations();
            self.run_replica_set_controller();
            self.make_all_ready();
        }
        assert!(plans.is_empty(), "did not settle after 100 rounds");
        plans
    }

    pub(super) fn live(&self) -> Vec<&Pod> {
        self.pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect()
    }
}

/// The disk a pod's annotations name.
pub(super) fn device_of(pod: &Pod) -> Option<crate::crd::osd::DeviceId> {
    Some(
        OsdKey::new(
            annotation(pod, labels::HOST)?,
            annotation(pod, labels::DATA)?,
        )
        .device_id(),
    )
}

/// The uid of the object a pod's controller ownerReference names.
/// Never two pods (terminating included, a ReplicaSet's pod and ours alike) on one disk.
pub(super) fn one_pod_per_disk(pods: &[Pod]) -> Result<(), String> {
    let mut seen = std::collections::BTreeMap::new();
    for pod in pods {
        if let Some(device) = device_of(pod) {
            if let Some(other) = seen.insert(device.clone(), pod.name_any()) {
                return Err(format!("{other} and {} both on {device}", pod.name_any()));
            }
        }
    }
    Ok(())
}

pub(super) fn controller_uid(pod: &Pod) -> Option<String> {
    pod.owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.clone())
}

pub(super) fn annotate(pod: &mut Pod, key: &str, value: &str) {
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(key.to_owned(), value.to_owned());
}

pub(super) fn set_ready(pod: &mut Pod, ready: bool) {
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
}

pub(super) fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

pub(super) fn deletes(plan: &Plan) -> Vec<(String, DeleteReason)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::Delete { key, reason, .. } => Some((
                key.as_ref().map(ToString::to_string).unwrap_or_default(),
                reason.clone(),
            )),
            _ => None,
        })
        .collect()
}

pub(super) fn creates(plan: &Plan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::Create { key, .. } => Some(key.to_string()),
            _ => None,
        })
        .collect()
}

pub(super) fn patches(plan: &Plan) -> Vec<(String, PodState)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::PatchState { key, state, .. } => Some((key.to_string(), *state)),
            _ => None,
        })
        .collect()
}

pub(crate) fn converged(cr: &CephOsd) -> Cluster {
    let mut cluster = Cluster::default();
    cluster.settle(cr);
    cluster
}

pub(super) fn condition<'a>(
    plan: &'a Plan,
    type_: &str,
) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    plan.status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .expect("condition present")
}

/// Checks that `plan`'s condition `type_` has `status` and `reason` and that its message
/// contains `words`.
pub(super) fn assert_condition(plan: &Plan, type_: &str, status: &str, reason: &str, words: &str) {
    let c = condition(plan, type_);
    assert_eq!(c.status, status, "{type_}: {}", c.message);
    assert_says(plan, type_, reason, words);
}

/// Checks that `plan`'s condition `type_` has `reason` and that its message contains `words`.
pub(super) fn assert_says(plan: &Plan, type_: &str, reason: &str, words: &str) {
    let c = condition(plan, type_);
    assert_eq!(c.reason, reason, "{type_}: {}", c.message);
    assert!(c.message.contains(words), "{type_}: {}", c.message);
}

pub(super) fn event_reasons(plan: &Plan) -> Vec<&'static str> {
    plan.events.iter().map(|e| e.reason.as_str()).collect()
}
