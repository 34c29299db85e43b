//! The planner: a pure function from (CR, observed pods, suffixes) to the actions that move the
//! cluster one safe step towards the CR. No I/O happens here; every rule is unit-testable.
//!
//! Safety rules beyond the reference operator: a pod for an OSD is created only when no pod
//! holds its disk any more (terminating, foreign and invalid ones included, whatever the
//! spelling of the disk), so two pods never share a device; a rollout step starts only when
//! every desired OSD has a live pod and none is waiting for Ready; an OSD the spec is
//! ambiguous about is neither created nor replaced; pods another controller controls are
//! never touched.

use crate::classify::{classify, Owner, Timing};
pub use crate::classify::{ObservedPod, PodClass, Workload};
use crate::conditions::{ConditionReason, ConditionType};
use crate::crd::{CephOsd, CephOsdStatus};
use crate::desired::desired_osds;
use crate::events::EventReason;
use crate::hash::TemplateHash;
use crate::labels::PodState;
use crate::osd::{DeviceId, OsdKey, SuffixSource};
use crate::render::{render_pod, PodIdentity, RenderError};
use crate::replica_sets::{classify_replica_sets, ObservedReplicaSet, ReplicaSetClass};
use crate::rollout::{deadlines, domain_id, rollout_step};
use crate::status::{compute_status, SpecProblem, StatusInput};
use crate::template_rules::template_problems;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::collections::BTreeSet;

/// Why a pod is deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeleteReason {
    Invalid(String),
    Ended(String),
    /// Its OSD is no longer in the CR.
    Superfluous,
    /// Rolling update: out-of-date, its successor follows once it is gone.
    Replace,
}

/// Why a pod is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateReason {
    /// An OSD new to the CR (or the CR is new).
    New,
    /// The successor of a pod replaced by the rollout.
    Replacement,
    /// The OSD's pod vanished (deleted by hand, evicted, ended).
    Recreate,
}

/// An Event to publish on the CephOSD, computed as data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub warning: bool,
    pub reason: EventReason,
    pub note: String,
    /// The pod the event is about (its `related` object), if one.
    pub pod: Option<String>,
}

/// What the planner observed of one CephOSD: every pod and every ReplicaSet carrying its
/// owner label.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    pub pods: &'a [Pod],
    pub replica_sets: &'a [ReplicaSet],
}

impl<'a> Observed<'a> {
    /// Pods only (a cluster without ReplicaSets of the Ansible operator).
    pub fn pods(pods: &'a [Pod]) -> Self {
        Self {
            pods,
            replica_sets: &[],
        }
    }
}

/// One API write.
#[derive(Clone, Debug)]
pub enum Action {
    Delete {
        name: String,
        uid: Option<String>,
        key: Option<OsdKey>,
        reason: DeleteReason,
    },
    /// Deletes a ReplicaSet of the Ansible operator with foreground propagation (its pod goes
    /// with it; the ReplicaSet controller recreates nothing).
    DeleteReplicaSet {
        name: String,
        uid: Option<String>,
        key: Option<OsdKey>,
        reason: DeleteReason,
    },
    Create {
        key: OsdKey,
        pod: Box<Pod>,
        reason: CreateReason,
    },
    PatchState {
        name: String,
        key: OsdKey,
        state: PodState,
    },
}

/// Counts for logs and status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub desired: usize,
    /// Desired OSDs with a live pod.
    pub current: usize,
    /// Live pods whose Ready condition is True.
    pub ready: usize,
    /// Live pods on the current template and devices.
    pub updated: usize,
    pub out_of_date: usize,
    pub unready: usize,
    pub invalid: usize,
    pub terminating: usize,
    /// Pods with the owner label that another controller controls (left alone).
    pub foreign: usize,
    /// Desired OSDs still run by a ReplicaSet of the Ansible operator.
    pub migrating: usize,
}

/// The outcome of planning one reconcile.
#[derive(Clone, Debug)]
pub struct Plan {
    pub template_hash: TemplateHash,
    pub pods: Vec<ObservedPod>,
    pub actions: Vec<Action>,
    pub summary: Summary,
    /// The OSDs whose replacement started in this plan (rollout step), in order.
    pub replacing: Vec<OsdKey>,
    /// Why no rollout step started although pods are out of date, if so.
    pub halted: Option<String>,
    /// What is wrong with the spec (the `InvalidSpec` condition).
    pub spec_problems: Vec<SpecProblem>,
    /// A replacement past its progress deadline, described.
    pub stalled: Option<String>,
    /// Events that are not tied to one action (halts, stalls, overrides, adoptions).
    pub events: Vec<PlannedEvent>,
    /// The status the CephOSD should show.
    pub status: CephOsdStatus,
    /// Whether that status differs from the one the CephOSD shows (a write is due).
    pub status_changed: bool,
    /// When to look again at the latest (a soak or a deadline ends), if sooner than resync.
    pub requeue_after: Option<SignedDuration>,
}

/// Why no pod can be built for this spec: the plan then makes no write at all (a replaced
/// pod without a successor would leave its OSD down) and says why in `InvalidSpec`.
#[derive(Debug, thiserror::Error)]
enum Unbuildable {
    #[error("cannot build the pod for OSD {key}: {source}")]
    Render { key: OsdKey, source: RenderError },
    #[error("the CephOSD has no namespace")]
    NoNamespace,
}

/// At most this many pods are created by one plan (one reconcile).
pub const MAX_CREATIONS_PER_PLAN: usize = 500;

/// Plans one reconcile of `cr` given what carries its owner label, at time `now`. Total: a
/// spec nothing can be built from yields a plan without writes whose status says why.
pub fn plan(
    cr: &CephOsd,
    observed_objects: &Observed<'_>,
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Plan {
    let spec = &cr.spec;
    let template_hash = TemplateHash::of(&spec.pod_template);
    let desired_set = desired_osds(spec);
    let (desired, blocked) = (&desired_set.osds, &desired_set.blocked);
    let timing = Timing {
        now,
        min_ready: spec.min_ready(),
    };
    let cr_name = cr.name_any();
    let owner_uid = cr.uid();
    let owner = Owner {
        name: &cr_name,
        uid: owner_uid.as_deref(),
    };
    let observed = classify(
        observed_objects.pods,
        &owner,
        &template_hash,
        desired,
        &timing,
    );
    let replica_sets = classify_replica_sets(observed_objects.replica_sets, &observed, &owner);
    // A ReplicaSet of the Ansible operator stands for its OSD until replaced.
    let era: Vec<ObservedPod> = replica_sets
        .iter()
        .filter(|rs| rs.class == ReplicaSetClass::Era)
        .filter(|rs| rs.key.as_ref().is_some_and(|k| desired.contains_key(k)))
        .map(ObservedReplicaSet::as_workload)
        .collect();
    let previous = cr.status.clone().unwrap_or_default();
    let same_generation = previous.observed_generation.is_some()
        && previous.observed_generation == cr.metadata.generation;
    let domain_of = |key: &OsdKey| domain_id(key, spec.update_domain);
    let previous_update: BTreeSet<&str> =
        previous.current_update.iter().map(String::as_str).collect();

    let mut actions = Vec::new();
    // 1 + 2: invalid and ended pods, then pods of OSDs no longer in the CR.
    for pod in &observed {
        let reason = match &pod.class {
            PodClass::Invalid(why) => Some(DeleteReason::Invalid(why.clone())),
            PodClass::Ended(phase) => Some(DeleteReason::Ended(phase.clone())),
            _ if pod.is_live() && !pod.key.as_ref().is_some_and(|k| desired.contains_key(k)) => {
                Some(DeleteReason::Superfluous)
            }
            _ => None,
        };
        if let Some(reason) = reason {
            actions.push(delete(pod, reason));
        }
    }
    for rs in &replica_sets {
        let reason = match &rs.class {
            ReplicaSetClass::Invalid(why) => DeleteReason::Invalid(why.clone()),
            ReplicaSetClass::Era if !rs.key.as_ref().is_some_and(|k| desired.contains_key(k)) => {
                DeleteReason::Superfluous
            }
            _ => continue,
        };
        actions.push(Action::DeleteReplicaSet {
            name: rs.name.clone(),
            uid: rs.uid.clone(),
            key: rs.key.clone(),
            reason,
        });
    }

    // 3: missing OSDs, created only once no pod holds their disk at all (never two per
    // device), and never while the spec is ambiguous about them.
    let occupied: BTreeSet<DeviceId> = observed
        .iter()
        .filter_map(|p| p.device().cloned())
        .chain(replica_sets.iter().filter_map(ObservedReplicaSet::device))
        .collect();
    let live: BTreeSet<&OsdKey> = observed
        .iter()
        .chain(&era)
        .filter(|p| p.is_live())
        .filter_map(|p| p.key.as_ref())
        .collect();
    // A Ready pod of another controller keeps its OSD available (though not ours); a
    // ReplicaSet's pod only while that ReplicaSet is there and not being deleted: otherwise
    // the garbage collector is about to take the pod down (it may even remove a ReplicaSet
    // before its pods).
    let standing: BTreeSet<&str> = replica_sets
        .iter()
        .filter(|rs| rs.class != ReplicaSetClass::Terminating)
        .map(|rs| rs.name.as_str())
        .collect();
    let served_by_foreign: BTreeSet<DeviceId> = observed
        .iter()
        .filter(|p| match &p.class {
            PodClass::Foreign(c) => {
                p.ready && (c.kind != "ReplicaSet" || standing.contains(c.name.as_str()))
            }
            _ => false,
        })
        .filter_map(|p| p.device().cloned())
        .collect();
    let namespace = cr.namespace();
    let mut unbuildable = namespace.is_none().then_some(Unbuildable::NoNamespace);
    let namespace = namespace.unwrap_or_default();
    let build = |osd: &crate::desired::DesiredOsd, name: &str, pod_state| {
        let identity = PodIdentity {
            cr_name: &cr_name,
            namespace: &namespace,
            owner_uid: owner_uid.as_deref(),
            name,
            template_hash: &template_hash,
            pod_state,
        };
        render_pod(&spec.pod_template, osd, &identity).map_err(|source| Unbuildable::Render {
            key: osd.key.clone(),
            source,
        })
    };
    let mut missing = Vec::new();
    let mut creations = 0;
    for osd in desired.values().filter(|o| !live.contains(&o.key)) {
        if !served_by_foreign.contains(&osd.key.device_id()) {
            missing.push(osd.key.clone());
        }
        if occupied.contains(&osd.key.device_id()) || blocked.contains(&osd.key) {
            continue;
        }
        // A bounded batch: the next reconcile, moments later, creates the rest, and sees a
        // deleted CephOSD, an edited spec or a shutdown in between.
        creations += 1;
        if creations > MAX_CREATIONS_PER_PLAN {
            continue;
        }
        if unbuildable.is_some() {
            continue;
        }
        let name = format!("{}{}", osd.key.name_prefix(), suffixes.next_suffix());
        // Every pod we create gates the rollout until it is Ready.
        let pod = match build(osd, &name, PodState::WaitForReady) {
            Ok(pod) => pod,
            Err(error) => {
                unbuildable = Some(error);
                continue;
            }
        };
        let reason = if previous_update.contains(domain_of(&osd.key).as_str()) {
            CreateReason::Replacement
        } else if same_generation {
            CreateReason::Recreate
        } else {
            CreateReason::New
        };
        actions.push(Action::Create {
            key: osd.key.clone(),
            pod: Box::new(pod),
            reason,
        });
    }

    // 4: record states (only where the annotation differs: adoption writes nothing; a
    // blocked OSD's pod stays exactly as it is).
    let current: Vec<&ObservedPod> = observed
        .iter()
        .filter(|p| p.is_live() && p.key.as_ref().is_some_and(|k| desired.contains_key(k)))
        .chain(&era)
        .collect();
    let is_blocked = |p: &ObservedPod| p.key.as_ref().is_some_and(|k| blocked.contains(k));
    let own_pods = current
        .iter()
        .filter(|p| p.workload == Workload::Pod && !is_blocked(p));
    for pod in own_pods {
        let state = match pod.class {
            PodClass::OutOfDate => PodState::OutOfDate,
            PodClass::UpToDate | PodClass::Ready => PodState::UpToDate,
            _ => continue,
        };
        if pod.state.as_deref() != Some(state.as_str()) {
            if let Some(key) = &pod.key {
                actions.push(Action::PatchState {
                    name: pod.name.clone(),
                    key: key.clone(),
                    state,
                });
            }
        }
    }

    // 5: rolling update, at most `maxUnavailable` update domains unavailable at once; a
    // blocked OSD's pod is not replaced.
    let candidates: Vec<&ObservedPod> = current
        .iter()
        .copied()
        .filter(|p| !(p.class == PodClass::OutOfDate && is_blocked(p)))
        .collect();
    let step = rollout_step(spec, &candidates, &missing, blocked);
    let mut replacing = Vec::new();
    for pod in &step.replace {
        actions.push(delete(pod, DeleteReason::Replace));
        replacing.extend(pod.key.clone());
    }
    // A pod is replaced only once its successor can be built.
    for osd in replacing.iter().filter_map(|key| desired.get(key)) {
        if unbuildable.is_none() {
            unbuildable = build(osd, &osd.key.name_prefix(), PodState::WaitForReady).err();
        }
    }
    if unbuildable.is_some() {
        actions.clear();
        replacing.clear();
    }
    let halted = step.halted;
    let unavailable = step.unavailable;
    let blocking_terminations = observed.iter().filter(|p| {
        p.class == PodClass::Terminating && p.key.as_ref().is_some_and(|k| missing.contains(k))
    });
    let watch = deadlines(
        spec,
        current.iter().copied().chain(blocking_terminations),
        now,
    );
    let (stalled, mut requeue_after) = (watch.stalled, watch.requeue_after);
    if creations > MAX_CREATIONS_PER_PLAN {
        requeue_after = Some(SignedDuration::from_secs(1));
    }

    let mut current_update: BTreeSet<String> = unavailable
        .iter()
        .filter(|d| previous_update.contains(d.as_str()))
        .cloned()
        .collect();
    current_update.extend(replacing.iter().map(domain_of));

    let count = |class: PodClass| current.iter().filter(|p| p.class == class).count();
    // Pods of the Ansible operator's ReplicaSets are expected; any other foreign pod is told.
    let era_sets: BTreeSet<&str> = replica_sets
        .iter()
        .filter(|rs| !matches!(rs.class, ReplicaSetClass::Foreign(_)))
        .map(|rs| rs.name.as_str())
        .collect();
    let foreign_pods: Vec<(&ObservedPod, String)> = observed
        .iter()
        .filter_map(|p| match &p.class {
            PodClass::Foreign(c)
                if !(c.kind == "ReplicaSet" && era_sets.contains(c.name.as_str())) =>
            {
                Some((p, c.to_string()))
            }
            _ => None,
        })
        .collect();
    // Our OSD pods the scheduler cannot place (a host without its Node, a cordoned node, ...).
    let unschedulable_pods: Vec<(&ObservedPod, String)> = current
        .iter()
        .filter_map(|p| {
            let key = p.key.as_ref()?;
            let why = p.unschedulable.as_ref()?;
            Some((*p, format!("{key} waits for node {}: {why}", key.host)))
        })
        .collect();
    let unschedulable: Vec<String> = unschedulable_pods.iter().map(|(_, w)| w.clone()).collect();
    let summary = Summary {
        desired: desired.len(),
        current: current.len(),
        ready: current.iter().filter(|p| p.ready).count(),
        updated: current
            .iter()
            .filter(|p| {
                matches!(
                    p.class,
                    PodClass::UpToDate | PodClass::Ready | PodClass::Unready
                )
            })
            .count(),
        out_of_date: count(PodClass::OutOfDate),
        unready: count(PodClass::Unready),
        invalid: observed
            .iter()
            .filter(|p| matches!(p.class, PodClass::Invalid(_) | PodClass::Ended(_)))
            .count(),
        terminating: observed
            .iter()
            .filter(|p| p.class == PodClass::Terminating)
            .count(),
        foreign: foreign_pods.len(),
        migrating: era.len(),
    };
    let mut spec_problems = spec_problems(&desired_set, &spec.pod_template);
    if let Some(error) = &unbuildable {
        spec_problems.insert(
            0,
            SpecProblem {
                reason: ConditionReason::InvalidPodTemplate,
                message: error.to_string(),
            },
        );
    }
    let status = compute_status(&StatusInput {
        previous: &previous,
        generation: cr.metadata.generation,
        now,
        template_hash: &template_hash,
        summary: &summary,
        paused: spec.is_paused(),
        halted: halted.as_deref(),
        stalled: stalled.as_deref(),
        spec_problems: &spec_problems,
        pending_actions: !actions.is_empty() || unbuildable.is_some(),
        current_update: current_update.into_iter().collect(),
        foreign_pods: foreign_pods.iter().map(|(p, _)| p.name.clone()).collect(),
        unschedulable: unschedulable.clone(),
    });
    let mut events = transition_events(&previous, &status);
    events.extend(foreign_pod_events(&previous, &foreign_pods));
    events.extend(unschedulable_events(&previous, &unschedulable_pods));
    for pod in &current {
        if pod.class == PodClass::UpToDate
            && !pod.ready
            && pod
                .key
                .as_ref()
                .is_some_and(|k| previous_update.contains(domain_of(k).as_str()))
        {
            events.push(PlannedEvent {
                warning: false,
                reason: EventReason::Overridden,
                note: format!(
                    "pod {} was marked up-to-date before it became Ready; the rollout continues",
                    pod.describe(),
                ),
                pod: Some(pod.name.clone()),
            });
        }
        if cr.status.is_none() && !pod.controlled && pod.workload == Workload::Pod {
            events.push(PlannedEvent {
                warning: false,
                reason: EventReason::Adopted,
                note: format!(
                    "adopted pod {} as it is, without restarting it",
                    pod.describe(),
                ),
                pod: Some(pod.name.clone()),
            });
        }
    }
    let status_changed = cr.status.as_ref() != Some(&status);
    Plan {
        template_hash,
        pods: observed,
        actions,
        summary,
        replacing,
        halted,
        spec_problems,
        stalled,
        events,
        status,
        status_changed,
        requeue_after,
    }
}

/// Everything wrong with the spec: storage problems first, then forbidden template fields.
fn spec_problems(
    desired: &crate::desired::DesiredOsds,
    template: &serde_json::Value,
) -> Vec<SpecProblem> {
    let storage = desired.problems.iter().map(|p| SpecProblem {
        reason: if p.blocks.is_empty() {
            ConditionReason::InvalidStorage
        } else {
            ConditionReason::ConflictingDevices
        },
        message: p.message.clone(),
    });
    let template = template_problems(template)
        .into_iter()
        .map(|p| SpecProblem {
            reason: ConditionReason::ForbiddenTemplateField,
            message: format!("{p} (left out of every pod)"),
        });
    let mut problems: Vec<SpecProblem> = storage.chain(template).collect();
    // The most severe reason first: it names the condition.
    problems.sort_by_key(|p| p.reason != ConditionReason::ConflictingDevices);
    problems
}

/// One Warning per pod of another controller, when it is first seen (the status lists those
/// already told).
/// One Warning per OSD whose pod newly cannot be scheduled.
fn unschedulable_events(
    previous: &CephOsdStatus,
    unschedulable: &[(&ObservedPod, String)],
) -> Vec<PlannedEvent> {
    unschedulable
        .iter()
        .filter(|(_, waiting)| !previous.unschedulable.contains(waiting))
        .map(|(pod, waiting)| PlannedEvent {
            warning: true,
            reason: EventReason::Unschedulable,
            note: format!("OSD {waiting}"),
            pod: Some(pod.name.clone()),
        })
        .collect()
}

fn foreign_pod_events(
    previous: &CephOsdStatus,
    foreign: &[(&ObservedPod, String)],
) -> Vec<PlannedEvent> {
    foreign
        .iter()
        .filter(|(p, _)| !previous.foreign_pods.contains(&p.name))
        .map(|(p, controller)| PlannedEvent {
            warning: true,
            reason: EventReason::ForeignPod,
            note: format!(
                "pod {} carries this CephOSD's owner label but is controlled by {controller}: \
                     left alone, and no pod is created for its disk while it exists",
                p.describe()
            ),
            pod: Some(p.name.clone()),
        })
        .collect()
}

/// Events for state changes between the previous and the new status (so a steady state,
/// or a halt that persists, publishes nothing).
fn transition_events(previous: &CephOsdStatus, status: &CephOsdStatus) -> Vec<PlannedEvent> {
    fn condition(status: &CephOsdStatus, type_: ConditionType) -> Option<&Condition> {
        status.conditions.iter().find(|c| c.type_ == type_.as_str())
    }
    fn true_in(status: &CephOsdStatus, type_: ConditionType) -> Option<&Condition> {
        condition(status, type_).filter(|c| c.status == "True")
    }
    let event = |warning, reason, note: &str| PlannedEvent {
        warning,
        reason,
        note: note.to_owned(),
        pod: None,
    };
    let mut events = Vec::new();
    // InvalidSpec: when it turns True, or says something new while True.
    if let Some(now) = true_in(status, ConditionType::InvalidSpec) {
        let before = true_in(previous, ConditionType::InvalidSpec);
        if before.is_none_or(|b| b.message != now.message) {
            events.push(event(true, EventReason::InvalidSpec, &now.message));
        }
    }
    // Stalled: when it turns True.
    if let Some(now) = true_in(status, ConditionType::Stalled) {
        if true_in(previous, ConditionType::Stalled).is_none() {
            events.push(event(true, EventReason::Stalled, &now.message));
        }
    }
    // A halted or paused rollout: when the halt or its cause is new.
    let halts = [ConditionReason::Halted, ConditionReason::Paused].map(ConditionReason::as_str);
    if let Some(now) =
        condition(status, ConditionType::Progressing).filter(|c| halts.contains(&c.reason.as_str()))
    {
        let before = condition(previous, ConditionType::Progressing);
        if before.is_none_or(|b| (&b.reason, &b.message) != (&now.reason, &now.message)) {
            events.push(event(false, EventReason::Halted, &now.message));
        }
    }
    events
}

fn delete(pod: &ObservedPod, reason: DeleteReason) -> Action {
    let (name, uid, key) = (pod.name.clone(), pod.uid.clone(), pod.key.clone());
    match pod.workload {
        Workload::Pod => Action::Delete {
            name,
            uid,
            key,
            reason,
        },
        Workload::ReplicaSet => Action::DeleteReplicaSet {
            name,
            uid,
            key,
            reason,
        },
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "plan_safety_tests.rs"]
mod safety_tests;

#[cfg(test)]
#[path = "plan_migration_tests.rs"]
mod migration_tests;

#[cfg(test)]
#[path = "plan_cache_tests.rs"]
mod cache_tests;
