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
pub(crate) use crate::classify::{ObservedPod, PodClass, Workload};
use crate::conditions::ConditionReason;
use crate::crd::{CephOsd, CephOsdSpec, CephOsdStatus};
use crate::desired::{DesiredOsd, DesiredOsds};
use crate::events::{foreign_pod_events, transition_events, unschedulable_events, EventReason};
use crate::expanded_spec::ExpandedSpec;
use crate::hash::TemplateHash;
use crate::labels::PodState;
use crate::osd::{DeviceId, OsdKey, SuffixSource};
use crate::osd_pod::{render_pod, PodIdentity, RenderError};
use crate::replica_sets::{classify_replica_sets, ObservedReplicaSet, ReplicaSetClass};
use crate::rollout::{deadlines, domain_id, rollout_step};
use crate::status::{compute_status, SpecProblem, StatusInput};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::collections::{BTreeSet, HashSet};

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
/// owner label (borrowed: the watch caches' objects are not copied).
#[derive(Clone, Debug)]
pub struct Observed<'a> {
    pub pods: Vec<&'a Pod>,
    pub replica_sets: Vec<&'a ReplicaSet>,
}

impl<'a> Observed<'a> {
    pub fn new(
        pods: impl IntoIterator<Item = &'a Pod>,
        replica_sets: impl IntoIterator<Item = &'a ReplicaSet>,
    ) -> Self {
        Self {
            pods: pods.into_iter().collect(),
            replica_sets: replica_sets.into_iter().collect(),
        }
    }

    /// Pods only (a cluster without ReplicaSets of the Ansible operator).
    pub fn pods(pods: &'a [Pod]) -> Self {
        Self::new(pods, [])
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
pub const MAX_CREATIONS_PER_PLAN: usize = 1000;

/// Plans one reconcile of `cr` given what carries its owner label, at time `now`. Total: a
/// spec nothing can be built from yields a plan without writes whose status says why.
///
/// Steps, in the order their actions are applied: deletions of what must go, creations of
/// missing OSDs' pods, the rollout step, `pod-state` patches (once no pod is being created);
/// then the summary, status and events.
pub fn plan(
    cr: &CephOsd,
    observed: &Observed<'_>,
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Plan {
    plan_expanded(cr, &ExpandedSpec::of(&cr.spec), observed, suffixes, now)
}

/// [`plan`] with `cr`'s spec already expanded (`expanded` must be `ExpandedSpec::of(&cr.spec)`).
pub fn plan_expanded(
    cr: &CephOsd,
    expanded: &ExpandedSpec,
    observed: &Observed<'_>,
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Plan {
    let seen = Seen::new(cr, expanded, observed, now);
    let current = seen.current();
    let mut actions = deletions(&seen);
    let created = creations(&seen, suffixes);
    let creating = !created.actions.is_empty() || created.deferred;
    actions.extend(created.actions);
    let step = rollout(&seen, &current, &created.missing);
    let mut replacing = step.replacing;
    actions.extend(step.actions);
    // The `pod-state` marks come last and wait while pods are being created: they decide
    // nothing (classes do), and would hold up the next rollout step or compete with creations.
    if !creating {
        actions.extend(state_patches(&seen, &current));
    }
    // A pod is replaced only once its successor can be built.
    let unbuildable = created
        .unbuildable
        .or_else(|| successors_unbuildable(&seen, &replacing));
    if unbuildable.is_some() {
        actions.clear();
        replacing.clear();
    }
    let blocking_terminations = seen.pods.iter().filter(|p| {
        p.class == PodClass::Terminating
            && p.key.as_ref().is_some_and(|k| created.missing.contains(k))
    });
    let watch = deadlines(
        seen.spec,
        current.iter().copied().chain(blocking_terminations),
        now,
    );
    let requeue_after = if created.deferred {
        Some(SignedDuration::from_secs(1))
    } else {
        watch.requeue_after
    };
    // Domains still down from the update under way, plus those this step starts.
    let previous_update = seen.previous_update();
    let mut current_update: BTreeSet<String> = step
        .unavailable
        .iter()
        .filter(|d| previous_update.contains(d.as_str()))
        .cloned()
        .collect();
    current_update.extend(replacing.iter().map(|k| seen.domain_of(k)));

    let foreign_pods = seen.foreign_pods();
    let unschedulable_pods = unschedulable_pods(&current);
    let summary = summarize(&seen, &current, foreign_pods.len());
    let mut spec_problems = expanded.problems.clone();
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
        previous: &seen.previous,
        generation: cr.metadata.generation,
        now,
        template_hash: seen.template_hash,
        summary: &summary,
        paused: seen.spec.is_paused(),
        halted: step.halted.as_deref(),
        stalled: watch.stalled.as_deref(),
        spec_problems: &spec_problems,
        pending_actions: !actions.is_empty() || unbuildable.is_some(),
        current_update: current_update.into_iter().collect(),
        foreign_pods: foreign_pods.iter().map(|(p, _)| p.name.clone()).collect(),
        unschedulable: unschedulable_pods.iter().map(|(_, w)| w.clone()).collect(),
    });
    let mut events = transition_events(&seen.previous, &status);
    events.extend(foreign_pod_events(&seen.previous, &foreign_pods));
    events.extend(unschedulable_events(&seen.previous, &unschedulable_pods));
    events.extend(pod_events(&seen, &current));
    let status_changed = cr.status.as_ref() != Some(&status);
    Plan {
        template_hash: seen.template_hash.clone(),
        pods: seen.pods,
        actions,
        summary,
        replacing,
        halted: step.halted,
        spec_problems,
        stalled: watch.stalled,
        events,
        status,
        status_changed,
        requeue_after,
    }
}

/// What one reconcile sees of a CephOSD: its spec expanded, and what each object carrying
/// its owner label is.
struct Seen<'a> {
    cr: &'a CephOsd,
    spec: &'a CephOsdSpec,
    cr_name: String,
    template_hash: &'a TemplateHash,
    desired: &'a DesiredOsds,
    previous: CephOsdStatus,
    pods: Vec<ObservedPod>,
    replica_sets: Vec<ObservedReplicaSet>,
    /// The Ansible operator's ReplicaSets of desired OSDs: each stands for its OSD's pod until
    /// replaced.
    era: Vec<ObservedPod>,
}

impl<'a> Seen<'a> {
    fn new(
        cr: &'a CephOsd,
        expanded: &'a ExpandedSpec,
        observed: &Observed<'_>,
        now: Timestamp,
    ) -> Self {
        let spec = &cr.spec;
        let (template_hash, desired) = (&expanded.template_hash, &expanded.desired);
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
        let pods = classify(&observed.pods, &owner, template_hash, desired, &timing);
        let replica_sets = classify_replica_sets(&observed.replica_sets, &pods, &owner);
        let era = replica_sets
            .iter()
            .filter(|rs| rs.class == ReplicaSetClass::Era)
            .filter_map(|rs| {
                let osd = desired.osds.get(rs.key.as_ref()?)?;
                Some(rs.as_workload(Some(osd.index)))
            })
            .collect();
        Self {
            cr,
            spec,
            template_hash,
            desired,
            previous: cr.status.clone().unwrap_or_default(),
            pods,
            replica_sets,
            era,
            cr_name,
        }
    }

    fn is_desired(&self, key: Option<&OsdKey>) -> bool {
        key.is_some_and(|k| self.desired.osds.contains_key(k))
    }

    fn is_blocked(&self, pod: &ObservedPod) -> bool {
        pod.key
            .as_ref()
            .is_some_and(|k| self.desired.blocked.contains(k))
    }

    /// The live pods of desired OSDs, then the era ReplicaSets standing for theirs.
    fn current(&self) -> Vec<&ObservedPod> {
        self.pods
            .iter()
            .filter(|p| p.is_live() && p.osd.is_some())
            .chain(&self.era)
            .collect()
    }

    fn domain_of(&self, key: &OsdKey) -> String {
        domain_id(key, self.spec.update_domain)
    }

    /// The update domains the previous status listed as being replaced.
    fn previous_update(&self) -> BTreeSet<&str> {
        self.previous
            .current_update
            .iter()
            .map(String::as_str)
            .collect()
    }

    /// The pod for `osd` named `name`, as the operator creates it (waiting for Ready: every
    /// pod we create gates the rollout until it is Ready).
    fn build(&self, osd: &DesiredOsd, name: &str) -> Result<Pod, Unbuildable> {
        let namespace = self.cr.namespace().ok_or(Unbuildable::NoNamespace)?;
        let owner_uid = self.cr.uid();
        let identity = PodIdentity {
            cr_name: &self.cr_name,
            namespace: &namespace,
            owner_uid: owner_uid.as_deref(),
            name,
            template_hash: self.template_hash,
            pod_state: PodState::WaitForReady,
        };
        render_pod(&self.spec.pod_template, osd, &identity).map_err(|source| Unbuildable::Render {
            key: osd.key.clone(),
            source,
        })
    }

    /// Pods with the owner label controlled by something else than this CephOSD or its era
    /// ReplicaSets (whose pods are expected), with their controller.
    fn foreign_pods(&self) -> Vec<(&ObservedPod, String)> {
        let era_sets: BTreeSet<&str> = self
            .replica_sets
            .iter()
            .filter(|rs| !matches!(rs.class, ReplicaSetClass::Foreign(_)))
            .map(|rs| rs.name.as_str())
            .collect();
        self.pods
            .iter()
            .filter_map(|p| match &p.class {
                PodClass::Foreign(c)
                    if !(c.kind == "ReplicaSet" && era_sets.contains(c.name.as_str())) =>
                {
                    Some((p, c.to_string()))
                }
                _ => None,
            })
            .collect()
    }
}

/// Invalid and ended pods, then pods and era ReplicaSets of OSDs no longer in the CR.
fn deletions(seen: &Seen<'_>) -> Vec<Action> {
    let pods = seen.pods.iter().filter_map(|pod| {
        let reason = match &pod.class {
            PodClass::Invalid(why) => DeleteReason::Invalid(why.clone()),
            PodClass::Ended(phase) => DeleteReason::Ended(phase.clone()),
            _ if pod.is_live() && pod.osd.is_none() => DeleteReason::Superfluous,
            _ => return None,
        };
        Some(delete(pod, reason))
    });
    let replica_sets = seen.replica_sets.iter().filter_map(|rs| {
        let reason = match &rs.class {
            ReplicaSetClass::Invalid(why) => DeleteReason::Invalid(why.clone()),
            ReplicaSetClass::Era if !seen.is_desired(rs.key.as_ref()) => DeleteReason::Superfluous,
            _ => return None,
        };
        Some(Action::DeleteReplicaSet {
            name: rs.name.clone(),
            uid: rs.uid.clone(),
            key: rs.key.clone(),
            reason,
        })
    });
    pods.chain(replica_sets).collect()
}

/// The creation step's outcome.
struct Creations {
    actions: Vec<Action>,
    /// Desired OSDs without a live pod (nor a Ready pod of another controller serving them).
    missing: Vec<OsdKey>,
    /// Why a pod could not be built, if one could not.
    unbuildable: Option<Unbuildable>,
    /// More OSDs lack a pod than one plan creates: the next reconcile follows at once.
    deferred: bool,
}

/// Pods for missing OSDs, created only once no pod holds their disk at all (never two per
/// device), never while the spec is ambiguous about them, at most
/// `MAX_CREATIONS_PER_PLAN` at once.
fn creations(seen: &Seen<'_>, suffixes: &mut dyn SuffixSource) -> Creations {
    let mut out = Creations {
        actions: Vec::new(),
        missing: Vec::new(),
        unbuildable: None,
        deferred: false,
    };
    let mut live = vec![false; seen.desired.osds.len()];
    for pod in seen.pods.iter().chain(&seen.era).filter(|p| p.is_live()) {
        if let Some(flag) = pod.osd.and_then(|i| live.get_mut(i)) {
            *flag = true;
        }
    }
    let lacking: Vec<&DesiredOsd> = seen
        .desired
        .osds
        .values()
        .filter(|o| live.get(o.index) == Some(&false))
        .collect();
    if lacking.is_empty() {
        return out;
    }
    let replica_set_devices: Vec<DeviceId> = seen
        .replica_sets
        .iter()
        .filter_map(ObservedReplicaSet::device)
        .collect();
    let occupied: HashSet<&DeviceId> = seen
        .pods
        .iter()
        .filter_map(ObservedPod::device)
        .chain(&replica_set_devices)
        .collect();
    // A Ready pod of another controller keeps its OSD available (though not ours); a
    // ReplicaSet's pod only while that ReplicaSet is there and not being deleted: otherwise
    // the garbage collector is about to take the pod down (it may even remove a ReplicaSet
    // before its pods).
    let standing: BTreeSet<&str> = seen
        .replica_sets
        .iter()
        .filter(|rs| rs.class != ReplicaSetClass::Terminating)
        .map(|rs| rs.name.as_str())
        .collect();
    let served_by_foreign: HashSet<&DeviceId> = seen
        .pods
        .iter()
        .filter(|p| match &p.class {
            PodClass::Foreign(c) => {
                p.ready && (c.kind != "ReplicaSet" || standing.contains(c.name.as_str()))
            }
            _ => false,
        })
        .filter_map(ObservedPod::device)
        .collect();
    let previous_update = seen.previous_update();
    let same_generation = seen.previous.observed_generation.is_some()
        && seen.previous.observed_generation == seen.cr.metadata.generation;
    let mut wanted = 0;
    for osd in lacking {
        if !served_by_foreign.contains(&osd.device) {
            out.missing.push(osd.key.clone());
        }
        if occupied.contains(&osd.device) || seen.desired.blocked.contains(&osd.key) {
            continue;
        }
        // A bounded batch: the next reconcile, moments later, creates the rest, and sees a
        // deleted CephOSD, an edited spec or a shutdown in between.
        wanted += 1;
        if wanted > MAX_CREATIONS_PER_PLAN {
            out.deferred = true;
            continue;
        }
        if out.unbuildable.is_some() {
            continue;
        }
        let name = format!("{}{}", osd.key.name_prefix(), suffixes.next_suffix());
        let pod = match seen.build(osd, &name) {
            Ok(pod) => pod,
            Err(error) => {
                out.unbuildable = Some(error);
                continue;
            }
        };
        let reason = if previous_update.contains(seen.domain_of(&osd.key).as_str()) {
            CreateReason::Replacement
        } else if same_generation {
            CreateReason::Recreate
        } else {
            CreateReason::New
        };
        out.actions.push(Action::Create {
            key: osd.key.clone(),
            pod: Box::new(pod),
            reason,
        });
    }
    out
}

/// `pod-state` where it differs from the class (adoption writes nothing; a blocked OSD's pod
/// stays exactly as it is).
fn state_patches(seen: &Seen<'_>, current: &[&ObservedPod]) -> Vec<Action> {
    current
        .iter()
        .filter(|p| p.workload == Workload::Pod && !seen.is_blocked(p))
        .filter_map(|pod| {
            let state = match pod.class {
                PodClass::OutOfDate => PodState::OutOfDate,
                PodClass::UpToDate | PodClass::Ready => PodState::UpToDate,
                _ => return None,
            };
            let key = pod.key.clone()?;
            (pod.state.as_deref() != Some(state.as_str())).then(|| Action::PatchState {
                name: pod.name.clone(),
                key,
                state,
            })
        })
        .collect()
}

/// The rollout step's outcome.
struct Rollout {
    actions: Vec<Action>,
    /// The OSDs whose replacement starts now, in order.
    replacing: Vec<OsdKey>,
    halted: Option<String>,
    /// Update domains with a missing or not-yet-Ready OSD pod.
    unavailable: BTreeSet<String>,
}

/// At most `maxUnavailable` update domains unavailable at once; a blocked OSD's pod is not
/// replaced.
fn rollout(seen: &Seen<'_>, current: &[&ObservedPod], missing: &[OsdKey]) -> Rollout {
    let candidates: Vec<&ObservedPod> = current
        .iter()
        .copied()
        .filter(|p| !(p.class == PodClass::OutOfDate && seen.is_blocked(p)))
        .collect();
    let step = rollout_step(seen.spec, &candidates, missing, &seen.desired.blocked);
    Rollout {
        actions: step
            .replace
            .iter()
            .map(|pod| delete(pod, DeleteReason::Replace))
            .collect(),
        replacing: step.replace.iter().filter_map(|p| p.key.clone()).collect(),
        halted: step.halted,
        unavailable: step.unavailable,
    }
}

/// Why the successor of a pod about to be replaced could not be built, if so.
fn successors_unbuildable(seen: &Seen<'_>, replacing: &[OsdKey]) -> Option<Unbuildable> {
    replacing
        .iter()
        .filter_map(|key| seen.desired.osds.get(key))
        .find_map(|osd| seen.build(osd, &osd.key.name_prefix()).err())
}

/// Our OSD pods the scheduler cannot place (a host without its Node, a cordoned node, ...),
/// with `host:data waits for node host: <why>`.
fn unschedulable_pods<'p>(current: &[&'p ObservedPod]) -> Vec<(&'p ObservedPod, String)> {
    current
        .iter()
        .filter_map(|p| {
            let key = p.key.as_ref()?;
            let why = p.unschedulable.as_ref()?;
            Some((*p, format!("{key} waits for node {}: {why}", key.host)))
        })
        .collect()
}

fn summarize(seen: &Seen<'_>, current: &[&ObservedPod], foreign: usize) -> Summary {
    let count = |class: PodClass| current.iter().filter(|p| p.class == class).count();
    Summary {
        desired: seen.desired.osds.len(),
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
        invalid: seen
            .pods
            .iter()
            .filter(|p| matches!(p.class, PodClass::Invalid(_) | PodClass::Ended(_)))
            .count(),
        terminating: seen
            .pods
            .iter()
            .filter(|p| p.class == PodClass::Terminating)
            .count(),
        foreign,
        migrating: seen.era.len(),
    }
}

/// Events about single pods: a replacement an admin marked up-to-date before it was Ready,
/// and pods adopted from the reference operator (on the first reconcile).
fn pod_events(seen: &Seen<'_>, current: &[&ObservedPod]) -> Vec<PlannedEvent> {
    let previous_update = seen.previous_update();
    let mut events = Vec::new();
    for pod in current {
        let in_update = !previous_update.is_empty()
            && pod
                .key
                .as_ref()
                .is_some_and(|k| previous_update.contains(seen.domain_of(k).as_str()));
        if pod.class == PodClass::UpToDate && !pod.ready && in_update {
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
        if seen.cr.status.is_none() && !pod.controlled && pod.workload == Workload::Pod {
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
