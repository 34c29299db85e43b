//! The planner: a pure function from (CR, observed pods, suffixes) to the actions that move the
//! cluster one safe step towards the CR. No I/O happens here; every rule is unit-testable.
//!
//! Safety rules beyond the reference operator: a pod for an OSD is created only when no pod
//! holds its disk any more (terminating, foreign and invalid ones, and pods of other
//! CephOSDs included, whatever the spelling of the disk and whatever its annotations say), so
//! two pods never share a device; a disk two CephOSDs list belongs to the older one; every pod
//! that may run an OSD daemon is taken down only in its update domain's turn (out of date,
//! its OSD gone from the spec, or a pod whose OSD cannot be told), honouring `paused` and
//! `maxUnavailable`, and a rollout step starts only when every desired OSD has a live pod and
//! none is waiting for Ready; an OSD the spec is ambiguous about is neither created nor
//! replaced; pods another controller controls are never touched. Only duplicates on a disk
//! (a second pod where another is kept) and ended pods are deleted at once.

pub(crate) mod actions;
pub(crate) mod budget;
pub(crate) mod ceph_gate;
pub(crate) mod classify;
pub(crate) mod cluster_lock;
mod conditions;
pub(crate) mod deletion;
pub(crate) mod disk_claims;
mod drain;
pub(crate) mod events;
pub(crate) mod expanded_spec;
pub(crate) mod failure;
mod gate_io;
pub(crate) mod progress;
mod replica_sets;
mod rollout;
pub(crate) mod status;

use crate::crd::desired::{DesiredOsd, DesiredOsds};
use crate::crd::osd::{DeviceId, OsdKey, SuffixSource};
use crate::crd::update_domain::domain_id;
use crate::crd::{CephOsd, CephOsdSpec, CephOsdStatus};
use crate::hash::TemplateHash;
use crate::labels::{self, PodState};
use crate::plan::actions::{Action, CreateReason, DeleteReason};
use crate::plan::budget::{
    drains_waiting, label_patches, plan_budget, start_blocked, BudgetInput, DisruptionView, Keeping,
};
use crate::plan::ceph_gate::{gate, osd_ids, CephView, GateInput, GateSubject};
use crate::plan::classify::{classify, Owner, Timing};
pub(crate) use crate::plan::classify::{ObservedPod, PodClass, Workload};
use crate::plan::conditions::{ConditionReason, SpecProblem};
pub(crate) use crate::plan::deletion::{Deletion, FinalizerWrite};
use crate::plan::events::{
    foreign_pod_events, transition_events, unschedulable_events, EventReason, PlannedEvent,
};
use crate::plan::expanded_spec::ExpandedSpec;
use crate::plan::progress::{next_progress, ProgressInput};
use crate::plan::replica_sets::{classify_replica_sets, ObservedReplicaSet, ReplicaSetClass};
pub use crate::plan::rollout::Hold;
use crate::plan::rollout::{deadlines, rollout_step, Candidate, Limits, Missing};
use crate::plan::status::{compute_status, StatusInput, Summary};
use crate::pod::identity::held_disks;
use crate::pod::osd_pod::render_pod;
use crate::pod::pod_additions::{PodIdentity, RenderError};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// What the planner observed of one CephOSD: every pod it owns (by owner label or controller
/// reference) and every ReplicaSet carrying its owner label (borrowed: the watch caches'
/// objects are not copied), the pods of other CephOSDs, and the disks older CephOSDs claim.
#[derive(Clone, Debug, Default)]
pub struct Observed<'a> {
    pub pods: Vec<&'a Pod>,
    pub replica_sets: Vec<&'a ReplicaSet>,
    /// Pods of other CephOSDs: each holds the disks it may run a daemon on.
    pub others: Vec<&'a Pod>,
    /// The CR's OSDs whose disk an older CephOSD lists, with that CephOSD (`namespace/name`).
    pub claimed: BTreeMap<OsdKey, String>,
    /// What the runtime learnt of Ceph (default: no Ceph configured).
    pub ceph: CephView,
    /// The PodDisruptionBudgets of the namespace and the cordoned nodes (None: not watched,
    /// no budget is kept or reported).
    pub disruption: Option<DisruptionView<'a>>,
    /// Whether the CephOSD's namespace is being deleted (its pods go at once).
    pub namespace_terminating: bool,
}

impl<'a> Observed<'a> {
    pub fn new(
        pods: impl IntoIterator<Item = &'a Pod>,
        replica_sets: impl IntoIterator<Item = &'a ReplicaSet>,
    ) -> Self {
        Self {
            pods: pods.into_iter().collect(),
            replica_sets: replica_sets.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Pods only (a cluster without ReplicaSets of the Ansible operator).
    pub fn pods(pods: &'a [Pod]) -> Self {
        Self::new(pods, [])
    }
}

/// The outcome of planning one reconcile.
#[derive(Clone, Debug)]
pub struct Plan {
    pub template_hash: TemplateHash,
    pub pods: Vec<ObservedPod>,
    pub actions: Vec<Action>,
    pub summary: Summary,
    /// The OSDs whose pods the rollout step takes down in this plan, in order.
    pub replacing: Vec<OsdKey>,
    /// Why no rollout step started although pods wait for one, if so.
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
    /// The keys to ask Ceph about before the rollout's deletions can go: plan again with the
    /// answer. Their deletions are withheld from this plan.
    pub gate_question: Option<Vec<GateSubject>>,
    /// The out-of-date update domains `partition` or a canary hold, and which.
    pub held: BTreeMap<String, Hold>,
    /// The update domains started now, in rollout order.
    pub starting: Vec<String>,
    /// Seconds each update domain that finished in this plan took.
    pub finished_domain_seconds: Vec<i64>,
    /// How the CephOSD is being deleted, if it is.
    pub(crate) deletion: Option<Deletion>,
    /// The operator's finalizer to add or remove, after the actions went through.
    pub(crate) finalizer: Option<FinalizerWrite>,
}

impl Plan {
    /// Whether the plan takes down a pod that may run an OSD daemon in its domain's turn:
    /// such a plan must be decided on a view of the cluster no older than the decision.
    pub fn disrupts(&self) -> bool {
        !self.replacing.is_empty()
    }
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
/// Steps, in the order their actions are applied: deletions of what must go at once,
/// creations of missing OSDs' pods, the rollout step, `pod-state` patches (once no pod is
/// being created); then the summary, status and events.
pub fn plan(
    cr: &CephOsd,
    observed: &Observed<'_>,
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Plan {
    plan_expanded(cr, &ExpandedSpec::of(&cr.spec), observed, suffixes, now)
}

/// [`plan`] with `cr`'s spec already expanded (`expanded` must be `ExpandedSpec::of(&cr.spec)`).
#[expect(
    clippy::too_many_lines,
    reason = "one plan's steps in the order their actions apply: at once, creations, the gated rollout step, marks; then status and events"
)]
pub fn plan_expanded(
    cr: &CephOsd,
    expanded: &ExpandedSpec,
    observed: &Observed<'_>,
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Plan {
    // Deleted: every key leaves the spec, and only the pods it controls are its own.
    let deletion = deletion::deletion_of(cr, observed.namespace_terminating);
    let leaving_all;
    let expanded = if deletion.is_some() {
        leaving_all = expanded.leaving_all();
        &leaving_all
    } else {
        expanded
    };
    let keeping = Keeping::of(cr, observed.disruption.as_ref(), &observed.pods);
    let no_cordons = BTreeSet::new();
    let cordoned = keeping.cordoned().unwrap_or(&no_cordons);
    let mut seen = Seen::new(cr, expanded, observed, cordoned, now);
    if deletion.is_some() {
        seen.pods.retain(|p| p.controlled);
        seen.replica_sets.clear();
        seen.era.clear();
        seen.era_superfluous.clear();
    }
    let seen = seen;
    let current = seen.current();
    let removals = seen.removals();
    let mut actions = deletions(&seen, &removals);
    let created = creations(&seen, &removals, suffixes);
    let creating = !created.actions.is_empty() || created.deferred;
    actions.extend(created.actions);
    let waiting = drains_waiting(cordoned, &seen.pods);
    let budget_blocks = start_blocked(&keeping, &seen.cr_name, &waiting);
    let previous_update = seen.previous_update();
    let (limits, limit_problems) = seen.limits(&previous_update);
    let step = rollout(
        &seen,
        &current,
        &removals,
        &created.missing,
        budget_blocks.as_deref(),
        &limits,
    );
    // A pod is replaced only once its successor can be built.
    let unbuildable = created
        .unbuildable
        .or_else(|| successors_unbuildable(&seen, &step.replacing));
    let open_step = seen.previous.ceph_step.as_ref();
    let mut gated = match (deletion, open_step) {
        (Some(deleting), Some(open)) => {
            let live = seen.pods.iter().any(ObservedPod::is_live);
            deletion::open_step_at_deletion(deleting, open, live)
        }
        _ => None,
    }
    .unwrap_or_else(|| gate_rollout(&seen, &observed.ceph, &step, now));
    if let Some(Deletion::AtOnce(why)) = deletion {
        // Kubernetes takes every pod down itself: the operator takes none and asks nothing.
        gated.deletions_allowed = false;
        gated.question = None;
        gated.halted.get_or_insert_with(|| why.to_owned());
    }
    let mut replacing = Vec::new();
    let mut step = step;
    if let Some(allowed) = &gated.allowed_domains {
        step.keep_domains(allowed, |key| seen.domain_of(key));
    }
    if let Some(allowed) = &gated.allowed_keys {
        step.keep_keys(allowed);
    }
    if gated.deletions_allowed {
        replacing = step.replacing;
        actions.extend(step.actions);
    }
    // The `pod-state` marks come last and wait while pods are being created: they decide
    // nothing (classes do), and would hold up the next rollout step or compete with creations.
    let mut marked_tampered = Vec::new();
    if !creating {
        let patches = state_patches(&seen, &current);
        marked_tampered = tampered_events(&seen, &patches);
        actions.extend(patches);
        if matches!(keeping, Keeping::Managed { .. }) {
            actions.extend(label_patches(seen.spec, &current, |p| {
                seen.is_blocked(p.key.as_ref())
            }));
        }
    }
    // The domains this plan starts (besides those down already) are reserved in the budget
    // before their pods go.
    let starting: Vec<String> = if gated.deletions_allowed && unbuildable.is_none() {
        (step.domains.iter())
            .filter(|d| !step.unavailable.contains(*d))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    let budget = plan_budget(
        &BudgetInput {
            cr,
            keeping: &keeping,
            unavailable: &step.unavailable,
            starting: &starting,
            pods: &seen.pods,
            waiting: &waiting,
            closed: observed.ceph.pgs_unclean.as_deref(),
        },
        seen.previous.budget.as_ref(),
    );
    let (mut ceph_step, mut gate_question) = (gated.step, gated.question);
    if unbuildable.is_some() {
        actions.clear();
        replacing.clear();
        marked_tampered.clear();
        ceph_step = open_step.cloned();
        gate_question = None;
    } else {
        // The Ceph step is recorded first; the budget is written before any pod goes.
        let first = gated.first.len();
        actions.splice(0..0, gated.first);
        actions.splice(first..first, budget.actions);
        actions.extend(gated.last);
    }
    if let Some(Deletion::AtOnce(_)) = deletion {
        // Kubernetes removes the CephOSD's objects itself (a terminating namespace takes no
        // new one): only its Ceph step is ended.
        actions.retain(|a| matches!(a, Action::ClearNoout { .. } | Action::RecordCephStep));
    }
    let blocking_terminations = seen.pods.iter().filter(|p| {
        p.class == PodClass::Terminating
            && p.key
                .as_ref()
                .is_some_and(|k| created.missing.iter().any(|m| m.key == *k))
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
    let requeue_after = earliest(requeue_after, gated.requeue_after);
    // A budget Ceph closed reopens on no Kubernetes event: look again soon.
    let requeue_after = earliest(requeue_after, budget.reopens_after);
    // Domains still down from the update under way, plus those this step starts.
    let previous_update = seen.previous_update();
    let mut current_update: BTreeSet<String> = step
        .unavailable
        .iter()
        .filter(|d| previous_update.contains(d.as_str()))
        .cloned()
        .collect();
    if unbuildable.is_none() && gated.deletions_allowed {
        current_update.extend(step.domains);
    }
    let halted_by_budget = gated.halted.is_none() && step.waits_for_budget && unbuildable.is_none();
    let held_by = step.halted_by.filter(|_| gated.halted.is_none());
    let halted = gated
        .halted
        .or(step.halted)
        .or_else(|| held_by.map(|hold| seen.hold_message(hold, &step.held)));
    let (rollout_progress, finished_domain_seconds) = next_progress(
        seen.previous.rollout.as_ref(),
        &ProgressInput {
            template_hash: seen.template_hash.as_str(),
            now,
            paused: seen.spec.is_paused(),
            under_way: &current_update.iter().cloned().collect::<Vec<_>>(),
            waiting: (step.out_of_date.iter())
                .filter(|d| !current_update.contains(*d))
                .count(),
            held: step.held.len(),
        },
    );

    let foreign_pods = seen.foreign_pods();
    let unschedulable_pods = unschedulable_pods(&current);
    let mut unschedulable: Vec<String> =
        unschedulable_pods.iter().map(|(_, w)| w.clone()).collect();
    unschedulable.extend(
        (created.missing.iter())
            .filter(|m| cordoned.contains(&m.key.host))
            .map(|m| {
                format!(
                    "{} waits for node {}: it is cordoned; the pod is created once it is uncordoned",
                    m.key, m.key.host
                )
            }),
    );
    let summary = summarize(&seen, &current, foreign_pods.len());
    let mut spec_problems = expanded.problems.clone();
    spec_problems.extend(seen.claimed_problems());
    spec_problems.extend(limit_problems);
    if let Some(error) = &unbuildable {
        spec_problems.insert(
            0,
            SpecProblem {
                reason: ConditionReason::InvalidPodTemplate,
                message: error.to_string(),
            },
        );
    }
    let mut status = compute_status(&StatusInput {
        previous: &seen.previous,
        generation: cr.metadata.generation,
        now,
        template_hash: seen.template_hash,
        summary: &summary,
        paused: seen.spec.is_paused(),
        halted: halted.as_deref(),
        halted_by_budget,
        held_by,
        stalled: watch.stalled.as_deref(),
        spec_problems: &spec_problems,
        pending_actions: !actions.is_empty() || unbuildable.is_some(),
        current_update: current_update.into_iter().collect(),
        foreign_pods: foreign_pods.iter().map(|(p, _)| p.name.clone()).collect(),
        unschedulable,
        ceph_gate: &gated.condition,
        disruption_budget: budget.condition.as_ref(),
        budget: budget.status,
        osd_ids: known_osd_ids(&seen, &observed.ceph),
        ceph_step,
    });
    status.expected_updated_domains =
        i64::try_from(seen.domain_count().saturating_sub(step.held.len())).ok();
    status.rollout = rollout_progress;
    if matches!(deletion, Some(Deletion::AtOnce(_))) {
        // Kept to say which OSDs went down at once.
        status.osd_ids.clone_from(&seen.previous.osd_ids);
    }
    let finalizer = deletion::finalizer_write(
        cr,
        deletion,
        !seen.pods.is_empty(),
        status.ceph_step.is_some(),
    );
    let mut events = transition_events(&seen.previous, &status);
    if let Some(Deletion::AtOnce(why)) = deletion {
        // Said from the first plan that sees it (the garbage collector may be through before
        // the next): the same words each time, one Event series.
        events.push(deletion::went_at_once(why, &status.osd_ids));
    }
    events.extend(foreign_pod_events(&seen.previous, &foreign_pods));
    events.extend(unschedulable_events(&seen.previous, &unschedulable_pods));
    events.extend(pod_events(&seen, &current));
    events.extend(marked_tampered);
    events.extend(gated.events);
    events.extend(budget.events);
    let status_changed = cr.status.as_ref() != Some(&status);
    Plan {
        template_hash: seen.template_hash.clone(),
        pods: seen.pods,
        actions,
        summary,
        replacing,
        halted,
        spec_problems,
        stalled: watch.stalled,
        events,
        status,
        status_changed,
        requeue_after,
        gate_question,
        held: step.held,
        starting,
        finished_domain_seconds,
        deletion,
        finalizer,
    }
}

/// What one reconcile sees of a CephOSD: its spec expanded, what each object it owns is,
/// and what other CephOSDs hold or claim of its disks.
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
    /// The Ansible operator's ReplicaSets of OSDs no longer in the spec, as workloads.
    era_superfluous: Vec<ObservedPod>,
    /// Disks the pods of other CephOSDs may run a daemon on, with one such pod (described).
    held_elsewhere: HashMap<DeviceId, String>,
    /// The CR's OSDs whose disk an older CephOSD claims.
    claimed: &'a BTreeMap<OsdKey, String>,
    /// Cordoned nodes where no missing pod is created (while the budget is managed).
    cordoned: &'a BTreeSet<String>,
}

impl<'a> Seen<'a> {
    fn new(
        cr: &'a CephOsd,
        expanded: &'a ExpandedSpec,
        observed: &'a Observed<'_>,
        cordoned: &'a BTreeSet<String>,
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
        let (era, era_superfluous) = replica_sets
            .iter()
            .filter(|rs| rs.class == ReplicaSetClass::Era)
            .map(|rs| {
                let osd = rs.key.as_ref().and_then(|k| desired.osds.get(k));
                rs.as_workload(osd.map(|o| o.index))
            })
            .partition(|w| w.osd.is_some());
        let mut held_elsewhere = HashMap::new();
        for pod in &observed.others {
            for disk in held_disks(pod, desired) {
                held_elsewhere
                    .entry(disk)
                    .or_insert_with(|| describe_other(pod));
            }
        }
        Self {
            cr,
            spec,
            template_hash,
            desired,
            previous: cr.status.clone().unwrap_or_default(),
            pods,
            replica_sets,
            era,
            era_superfluous,
            held_elsewhere,
            claimed: &observed.claimed,
            cordoned,
            cr_name,
        }
    }

    /// Whether the planner may neither create nor replace the pod of `key`: the spec is
    /// ambiguous about it, or an older CephOSD claims its disk.
    fn is_blocked(&self, key: Option<&OsdKey>) -> bool {
        key.is_some_and(|k| self.desired.blocked.contains(k) || self.claimed.contains_key(k))
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

    /// How many update domains the spec has.
    fn domain_count(&self) -> usize {
        (self.desired.osds.keys())
            .map(|k| self.domain_of(k))
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// How far the rollout may go under the current template (`partition`, the canary), with
    /// the domains under way (`continuing`); a value that cannot be read holds everything and
    /// is a problem of the spec.
    fn limits<'c>(&self, continuing: &'c BTreeSet<&'c str>) -> (Limits<'c>, Vec<SpecProblem>) {
        let total = self.domain_count();
        let mut problems = Vec::new();
        let mut unreadable = |message: String| {
            problems.push(SpecProblem {
                reason: ConditionReason::InvalidRolloutControl,
                message: format!("{message}; no update domain is replaced"),
            });
        };
        let partition = self.spec.partition_of(total).unwrap_or_else(|e| {
            unreadable(e);
            usize::MAX
        });
        let canary = self.spec.canary_of(total).unwrap_or_else(|e| {
            unreadable(e);
            usize::MAX
        });
        let promoted =
            self.spec.promoted_template_hash.as_deref() == Some(self.template_hash.as_str());
        let canary_left = (canary > 0 && !promoted).then(|| {
            let started = (self.previous.rollout.as_ref())
                .filter(|r| r.template_hash == self.template_hash.as_str())
                .map_or(0, |r| {
                    usize::try_from(r.domains_started).unwrap_or(usize::MAX)
                });
            if canary == usize::MAX {
                0
            } else {
                canary.saturating_sub(started)
            }
        });
        let limits = Limits {
            partition,
            canary_left,
            continuing,
        };
        (limits, problems)
    }

    /// Why the rollout stops at its cut, in words.
    fn hold_message(&self, hold: Hold, held: &BTreeMap<String, Hold>) -> String {
        let total = self.domain_count();
        let unit = self.spec.update_domain.plural();
        let updated = total.saturating_sub(held.len());
        match hold {
            Hold::Partition => format!(
                "{updated} of {total} {unit} updated; spec.partition holds the last {} \
                 out of date",
                held.len()
            ),
            Hold::Canary => format!(
                "{updated} of {total} {unit} updated; promote {} to continue \
                 (kubectl ceph-osd promote)",
                self.template_hash
            ),
        }
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
        let mut pod = render_pod(&self.spec.pod_template, osd, &identity).map_err(|source| {
            Unbuildable::Render {
                key: osd.key.clone(),
                source,
            }
        })?;
        let domain = labels::update_domain_label_value(&self.domain_of(&osd.key));
        (pod.metadata.labels.get_or_insert_with(BTreeMap::new))
            .insert(labels::UPDATE_DOMAIN.to_owned(), domain);
        Ok(pod)
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

    /// The disks our live pods and era ReplicaSets keep (one pod each).
    fn kept_disks(&self) -> HashSet<&DeviceId> {
        self.pods
            .iter()
            .filter(|p| p.is_live())
            .chain(&self.era)
            .chain(&self.era_superfluous)
            .filter_map(ObservedPod::device)
            .collect()
    }

    /// The desired OSD on `disk`, if the CR lists one.
    fn osd_on(&self, disk: &DeviceId) -> Option<&DesiredOsd> {
        let number = *self.desired.disks.get(disk)?;
        self.desired.osds.values().find(|o| o.disk == number)
    }

    /// What goes in its domain's turn without a successor of its own, each with the disk of a
    /// desired OSD it holds if one (that OSD is served until it goes): pods and era
    /// ReplicaSets of OSDs no longer in the spec, and pods that may run a daemon on a desired
    /// disk no other pod keeps although their OSD cannot be told.
    fn removals(&self) -> Vec<Removal<'_>> {
        let superfluous = self
            .pods
            .iter()
            .filter(|p| p.is_live() && p.osd.is_none())
            .chain(&self.era_superfluous)
            .map(|p| {
                let served = p.holds().find_map(|d| self.osd_on(d));
                (p, DeleteReason::Superfluous, served)
            });
        let unplaced: Vec<&ObservedPod> = self
            .pods
            .iter()
            .filter(|p| matches!(p.class, PodClass::Invalid(_)) && !p.duplicate)
            .collect();
        let kept = if unplaced.is_empty() {
            HashSet::new()
        } else {
            self.kept_disks()
        };
        let unplaced = unplaced.into_iter().filter_map(|p| {
            let PodClass::Invalid(why) = &p.class else {
                return None;
            };
            let served = p
                .holds()
                .filter(|d| !kept.contains(d))
                .find_map(|d| self.osd_on(d))?;
            Some((p, DeleteReason::Invalid(why.clone()), Some(served)))
        });
        superfluous.chain(unplaced).collect()
    }

    /// One `SpecProblem` per OSD whose disk an older CephOSD claims.
    fn claimed_problems(&self) -> impl Iterator<Item = SpecProblem> + '_ {
        self.claimed.iter().map(|(key, holder)| SpecProblem {
            reason: ConditionReason::DiskClaimed,
            message: format!(
                "OSD {key}: CephOSD {holder}, which is older, lists the same disk; no pod is \
                 created or replaced for it here"
            ),
        })
    }
}

/// A pod (or era ReplicaSet) that goes in its domain's turn without a successor of its own,
/// why, and the desired OSD it serves until then (the one on its disk), if any.
type Removal<'a> = (&'a ObservedPod, DeleteReason, Option<&'a DesiredOsd>);

/// `pod ns/name of CephOSD ns/cr`, for messages about pods of other CephOSDs.
fn describe_other(pod: &Pod) -> String {
    let namespace = pod.namespace().unwrap_or_default();
    let owner = crate::plan::classify::owning_cephosd(pod)
        .map(|cr| format!(" of CephOSD {namespace}/{cr}"))
        .unwrap_or_default();
    format!("pod {namespace}/{}{owner}", pod.name_any())
}

/// What must go at once: duplicates on a disk another pod keeps, pods that ended, invalid
/// pods that hold no desired disk left unkept; and invalid ReplicaSets.
fn deletions(seen: &Seen<'_>, removals: &[Removal<'_>]) -> Vec<Action> {
    let in_turn: HashSet<&str> = removals.iter().map(|(p, _, _)| p.name.as_str()).collect();
    let pods = seen.pods.iter().filter_map(|pod| {
        let reason = match &pod.class {
            PodClass::Invalid(_) if in_turn.contains(pod.name.as_str()) => return None,
            PodClass::Invalid(why) => DeleteReason::Invalid(why.clone()),
            PodClass::Ended(phase) => DeleteReason::Ended(phase.clone()),
            _ => return None,
        };
        Some(delete(pod, reason))
    });
    let replica_sets = seen.replica_sets.iter().filter_map(|rs| {
        let ReplicaSetClass::Invalid(why) = &rs.class else {
            return None;
        };
        Some(Action::DeleteReplicaSet {
            name: rs.name.clone(),
            uid: rs.uid.clone(),
            key: rs.key.clone(),
            reason: DeleteReason::Invalid(why.clone()),
        })
    });
    pods.chain(replica_sets).collect()
}

/// The creation step's outcome.
struct Creations {
    actions: Vec<Action>,
    /// Desired OSDs without a live pod (nor a Ready pod of another controller, nor a pod
    /// waiting for its turn to go, serving them).
    missing: Vec<Missing>,
    /// Why a pod could not be built, if one could not.
    unbuildable: Option<Unbuildable>,
    /// More OSDs lack a pod than one plan creates: the next reconcile follows at once.
    deferred: bool,
}

/// Pods for missing OSDs, created only once no pod holds their disk at all (never two per
/// device), never while the spec is ambiguous about them or an older CephOSD claims their
/// disk, at most `MAX_CREATIONS_PER_PLAN` at once.
fn creations(
    seen: &Seen<'_>,
    removals: &[Removal<'_>],
    suffixes: &mut dyn SuffixSource,
) -> Creations {
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
        .flat_map(ObservedPod::holds)
        .chain(&replica_set_devices)
        .chain(seen.held_elsewhere.keys())
        .collect();
    // A Ready pod of another controller keeps its OSD available (though not ours); a
    // ReplicaSet's pod only while that ReplicaSet is there and not being deleted: otherwise
    // the garbage collector is about to take the pod down (it may even remove a ReplicaSet
    // before its pods). A pod waiting for its turn to go serves the OSD on its disk too.
    let standing: BTreeSet<&str> = seen
        .replica_sets
        .iter()
        .filter(|rs| rs.class != ReplicaSetClass::Terminating)
        .map(|rs| rs.name.as_str())
        .collect();
    let mut served: HashSet<&DeviceId> = seen
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
    served.extend(
        removals
            .iter()
            .filter_map(|(_, _, osd)| osd.map(|o| &o.device)),
    );
    // Each OSD lacking a live pod, in rollout order, goes down this ladder: it is missing
    // unless a pod waiting for its turn or a Ready pod of another controller serves it; it
    // gets no pod while any pod holds its disk or the spec is ambiguous about it; past
    // MAX_CREATIONS_PER_PLAN it waits for the next plan; after a pod that could not be built
    // none is built; else its pod is created.
    let mut wanted = 0;
    for osd in lacking {
        let blocked = seen.is_blocked(Some(&osd.key));
        if !served.contains(&osd.device) {
            out.missing.push(Missing {
                key: osd.key.clone(),
                why: why_missing(seen, osd, blocked, &occupied),
            });
        }
        if occupied.contains(&osd.device) || blocked || seen.cordoned.contains(&osd.key.host) {
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
        match seen.build(osd, &name) {
            Ok(pod) => out.actions.push(Action::Create {
                key: osd.key.clone(),
                pod: Box::new(pod),
                reason: create_reason(seen, osd),
            }),
            Err(error) => out.unbuildable = Some(error),
        }
    }
    out
}

/// Why `osd`, which no pod serves, has no pod yet, when that needs words: the first that
/// applies of an older CephOSD listing its disk, a spec ambiguous about it, a pod of another
/// CephOSD holding its disk, and a pod of ours other than its own holding its disk.
fn why_missing(
    seen: &Seen<'_>,
    osd: &DesiredOsd,
    blocked: bool,
    occupied: &HashSet<&DeviceId>,
) -> Option<String> {
    if let Some(holder) = seen.claimed.get(&osd.key) {
        Some(format!("CephOSD {holder}, which is older, lists its disk"))
    } else if blocked {
        Some("the spec is ambiguous about it (see the InvalidSpec condition)".to_owned())
    } else if let Some(by) = seen.held_elsewhere.get(&osd.device) {
        Some(format!("its disk is held by {by}"))
    } else if seen.cordoned.contains(&osd.key.host) {
        Some(format!(
            "node {} is cordoned; its pod is created once the node is uncordoned",
            osd.key.host
        ))
    } else if occupied.contains(&osd.device) {
        // One of ours that is not this OSD's live pod (a terminating predecessor, or a
        // ReplicaSet's pod the garbage collector has yet to reach, is the normal pace of a
        // replacement and needs no words).
        (seen.pods.iter())
            .filter(|p| !matches!(p.class, PodClass::Terminating | PodClass::Foreign(_)))
            .filter(|p| p.osd != Some(osd.index))
            .find(|p| p.holds().any(|d| *d == osd.device))
            .map(|p| format!("pod {} still holds its disk", p.describe()))
    } else {
        None
    }
}

/// Why `osd`'s pod is created: the first that applies of its update domain being replaced
/// (the successor of a pod the rollout took down), an unchanged spec since the last status
/// (its pod vanished), and a new OSD or CephOSD.
fn create_reason(seen: &Seen<'_>, osd: &DesiredOsd) -> CreateReason {
    let same_generation = seen.previous.observed_generation.is_some()
        && seen.previous.observed_generation == seen.cr.metadata.generation;
    let domain = seen.domain_of(&osd.key);
    if seen.previous.current_update.contains(&domain) {
        CreateReason::Replacement
    } else if same_generation {
        CreateReason::Recreate
    } else {
        CreateReason::New
    }
}

/// `pod-state` where it differs from the class (adoption writes nothing; a blocked OSD's pod
/// stays exactly as it is).
fn state_patches(seen: &Seen<'_>, current: &[&ObservedPod]) -> Vec<Action> {
    current
        .iter()
        .filter(|p| p.workload == Workload::Pod && !seen.is_blocked(p.key.as_ref()))
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

/// A Warning for each pod marked out of date because its annotations disagree with what it
/// runs (once: when the mark is written).
fn tampered_events(seen: &Seen<'_>, patches: &[Action]) -> Vec<PlannedEvent> {
    let marked: HashSet<&str> = patches
        .iter()
        .filter_map(|a| match a {
            Action::PatchState { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    seen.pods
        .iter()
        .filter(|p| marked.contains(p.name.as_str()))
        .filter_map(|p| {
            let why = p.tampered.as_ref()?;
            Some(PlannedEvent {
                warning: true,
                reason: EventReason::Tampered,
                note: format!(
                    "pod {}: {why}; it is replaced in its update domain's turn",
                    p.name
                ),
                pod: Some(p.name.clone()),
            })
        })
        .collect()
}

/// The rollout step's outcome.
struct Rollout {
    actions: Vec<Action>,
    /// The update domain of each of `actions`.
    action_domains: Vec<String>,
    /// The OSDs whose pods go now, in order.
    replacing: Vec<OsdKey>,
    /// The update domains started now.
    domains: Vec<String>,
    halted: Option<String>,
    /// Update domains with a missing, not-yet-Ready or still-terminating OSD pod.
    unavailable: BTreeSet<String>,
    /// The keys of the chosen deletions with their pods, for the Ceph gate.
    subjects: Vec<GateSubject>,
    /// The keys of every candidate still standing (live and Ready).
    standing: BTreeSet<String>,
    /// The update domains with an out-of-date pod (or era ReplicaSet).
    out_of_date: BTreeSet<String>,
    /// Those `partition` or a canary hold.
    held: BTreeMap<String, Hold>,
    /// The hold the rollout stops at, when nothing else waits.
    halted_by: Option<Hold>,
    /// Whether `halted` is the disruption budget's reason.
    waits_for_budget: bool,
}

/// At most `maxUnavailable` update domains unavailable at once: out-of-date pods (their
/// successors follow) and the removals, by update domain; a blocked OSD's pod is not
/// replaced.
fn rollout(
    seen: &Seen<'_>,
    current: &[&ObservedPod],
    removals: &[Removal<'_>],
    missing: &[Missing],
    start_blocked: Option<&str>,
    limits: &Limits<'_>,
) -> Rollout {
    let out_of_date = current
        .iter()
        .copied()
        .filter(|p| p.class == PodClass::OutOfDate && !seen.is_blocked(p.key.as_ref()))
        .filter_map(|pod| {
            let domain = seen.domain_of(pod.key.as_ref()?);
            Some((Candidate::replacing(pod, domain), DeleteReason::Replace))
        });
    let removals = removals.iter().filter_map(|(pod, reason, served)| {
        let key = served.map(|o| &o.key).or(pod.key.as_ref())?;
        let domain = seen.domain_of(key);
        Some((Candidate::removing(pod, domain), reason.clone()))
    });
    let (candidates, reasons): (Vec<Candidate<'_>>, Vec<DeleteReason>) =
        out_of_date.chain(removals).unzip();
    // The OSD each candidate stands for: its own, or the desired one on its disk.
    let gate_key = |c: &Candidate<'_>| {
        (c.pod.key.clone()).or_else(|| {
            c.pod
                .holds()
                .find_map(|d| seen.osd_on(d).map(|o| o.key.clone()))
        })
    };
    let unready: Vec<&ObservedPod> = current
        .iter()
        .copied()
        .filter(|p| p.class == PodClass::Unready)
        .collect();
    // A removed OSD's pod still terminating keeps its domain down until it is gone.
    let removing = seen
        .pods
        .iter()
        .filter(|p| p.class == PodClass::Terminating)
        .filter(|p| {
            p.device()
                .is_some_and(|d| !seen.desired.disks.contains_key(d))
        })
        .filter_map(|p| Some(seen.domain_of(p.key.as_ref()?)));
    // An open drain's domains count as down from its start: its pods go once Ceph lets them.
    let drain_keys: BTreeSet<&str> = (seen.previous.ceph_step.iter())
        .filter(|s| s.drain.is_some())
        .flat_map(|s| s.keys.iter().map(String::as_str))
        .collect();
    let draining: Vec<String> = (candidates.iter())
        .filter(|c| gate_key(c).is_some_and(|k| drain_keys.contains(k.to_string().as_str())))
        .map(|c| c.domain.clone())
        .collect();
    let step = rollout_step(
        seen.spec,
        &candidates,
        &unready,
        missing,
        removing.chain(draining),
        start_blocked,
        limits,
    );
    let chosen = || {
        step.chosen
            .iter()
            .map(|&i| (candidates[i].pod, &reasons[i]))
    };
    let mut subjects: Vec<GateSubject> = Vec::new();
    for &i in &step.chosen {
        let Some(key) = gate_key(&candidates[i]) else {
            continue;
        };
        if subjects.iter().all(|s| s.key != key) {
            let pod = pod_of(seen, &candidates[i], &key);
            let leaving = !seen.desired.osds.contains_key(&key);
            subjects.push(GateSubject {
                key,
                pod,
                domain: candidates[i].domain.clone(),
                leaving,
            });
        }
    }
    let standing = (candidates.iter())
        .filter(|c| c.pod.ready)
        .filter_map(|c| gate_key(c).map(|k| k.to_string()))
        .collect();
    let out_of_date = (candidates.iter())
        .filter(|c| c.replaces)
        .map(|c| c.domain.clone())
        .collect();
    Rollout {
        out_of_date,
        held: step.held,
        halted_by: step.halted_by,
        waits_for_budget: step.waits_for_budget,
        subjects,
        standing,
        actions: chosen()
            .map(|(pod, reason)| delete(pod, reason.clone()))
            .collect(),
        action_domains: (step.chosen.iter())
            .map(|&i| candidates[i].domain.clone())
            .collect(),
        replacing: chosen().filter_map(|(pod, _)| pod.key.clone()).collect(),
        domains: step.domains,
        halted: step.halted,
        unavailable: step.unavailable,
    }
}

impl Rollout {
    /// Only the deletions of the update domains `allowed` (Ceph let the first go).
    fn keep_domains(&mut self, allowed: &BTreeSet<String>, domain_of: impl Fn(&OsdKey) -> String) {
        let actions = std::mem::take(&mut self.actions);
        let domains = std::mem::take(&mut self.action_domains);
        for (action, domain) in actions.into_iter().zip(domains) {
            if allowed.contains(&domain) {
                self.actions.push(action);
                self.action_domains.push(domain);
            }
        }
        self.domains.retain(|d| allowed.contains(d));
        self.subjects.retain(|s| allowed.contains(&s.domain));
        self.replacing.retain(|k| allowed.contains(&domain_of(k)));
    }

    /// Only the deletions of the keys `allowed` (a drain's, once Ceph let its OSDs go).
    fn keep_keys(&mut self, allowed: &BTreeSet<String>) {
        let kept = |key: Option<&OsdKey>| key.is_some_and(|k| allowed.contains(&k.to_string()));
        let actions = std::mem::take(&mut self.actions);
        let domains = std::mem::take(&mut self.action_domains);
        for (action, domain) in actions.into_iter().zip(domains) {
            let key = match &action {
                Action::Delete { key, .. } | Action::DeleteReplicaSet { key, .. } => key.as_ref(),
                _ => None,
            };
            if kept(key) {
                self.actions.push(action);
                self.action_domains.push(domain);
            }
        }
        let started: BTreeSet<&String> = self.action_domains.iter().collect();
        self.domains.retain(|d| started.contains(d));
        self.subjects.retain(|s| kept(Some(&s.key)));
        self.replacing.retain(|k| kept(Some(k)));
    }
}

/// The Ceph gate on the rollout step `step`.
fn gate_rollout(
    seen: &Seen<'_>,
    ceph: &CephView,
    step: &Rollout,
    now: Timestamp,
) -> ceph_gate::GateOutcome {
    let open = seen.previous.ceph_step.as_ref();
    gate(&GateInput {
        view: ceph,
        skipped: seen.spec.skips_ceph_gate(),
        open,
        proposed: &step.subjects,
        settled: open.is_some_and(|s| step_settled(seen, s)),
        untouched: open.is_some_and(|s| s.keys.iter().all(|k| step.standing.contains(k))),
        returned: open
            .filter(|s| s.drain.is_some())
            .map(|s| {
                (s.keys.iter())
                    .filter(|k| seen.desired.osds.keys().any(|d| d.to_string() == **k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
        now,
    })
}

/// The OSD ids of each key as the status keeps them: those recorded, updated with what Ceph
/// told, for the keys still listed or run.
fn known_osd_ids(seen: &Seen<'_>, ceph: &CephView) -> BTreeMap<String, Vec<u32>> {
    let learned = match &ceph.input {
        ceph_gate::CephInput::Answered(answer) => answer.learned.clone(),
        _ => BTreeMap::new(),
    };
    let kept: BTreeSet<String> = (seen.desired.osds.keys())
        .chain(seen.pods.iter().filter_map(|p| p.key.as_ref()))
        .map(ToString::to_string)
        .collect();
    osd_ids(&seen.previous.osd_ids, &learned, &kept)
}

/// The sooner of two optional delays.
fn earliest(a: Option<SignedDuration>, b: Option<SignedDuration>) -> Option<SignedDuration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The pod a candidate's OSD daemon runs in: the candidate itself, or the pod of its era
/// ReplicaSet.
fn pod_of(seen: &Seen<'_>, candidate: &Candidate<'_>, key: &OsdKey) -> Option<String> {
    match candidate.pod.workload {
        Workload::Pod => Some(candidate.pod.name.clone()),
        Workload::ReplicaSet => (seen.pods.iter())
            .find(|p| p.key.as_ref() == Some(key) && matches!(p.class, PodClass::Foreign(_)))
            .map(|p| p.name.clone()),
    }
}

/// Whether every key of the Ceph step `step` has its replacement Ready and soaked (an
/// up-to-date pod; an admin's `up-to-date` mark counts), or, no longer desired, no pod left.
fn step_settled(seen: &Seen<'_>, step: &crate::crd::CephStep) -> bool {
    step.keys.iter().all(|key| {
        let of_key = |p: &&ObservedPod| p.key.as_ref().is_some_and(|k| k.to_string() == *key);
        let desired = seen.desired.osds.keys().any(|k| k.to_string() == *key);
        if desired {
            seen.pods
                .iter()
                .filter(of_key)
                .any(|p| matches!(p.class, PodClass::UpToDate | PodClass::Ready))
                && !seen.era.iter().any(|p| of_key(&p))
        } else {
            !seen
                .pods
                .iter()
                .chain(&seen.era_superfluous)
                .any(|p| of_key(&p))
        }
    })
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
    let superfluous = seen
        .pods
        .iter()
        .filter(|p| p.is_live() && p.osd.is_none())
        .count()
        + seen.era_superfluous.len();
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
        superfluous,
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
pub(crate) mod tests;
