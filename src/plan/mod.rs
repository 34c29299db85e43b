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

pub mod gate;
pub(crate) mod observed;
pub(crate) mod phases;
pub(crate) mod rules;
pub(crate) mod says;
pub(crate) mod topology;

use crate::crd::osd::{OsdKey, SuffixSource};
use crate::crd::{CephOsd, CephOsdStatus};
use crate::hash::TemplateHash;
use crate::plan::gate::GateSubject;
pub(crate) use crate::plan::observed::classify::ObservedPod;
use crate::plan::phases::budget::budget;
pub use crate::plan::phases::decide::creations::MAX_CREATIONS_PER_PLAN;
use crate::plan::phases::decide::decide;
use crate::plan::phases::gate_step::gate_step;
use crate::plan::phases::order::order;
use crate::plan::phases::pre_pull::pre_pull;
use crate::plan::phases::replacing::replacing;
use crate::plan::phases::report::status::Summary;
use crate::plan::phases::report::{report, CephSaid, Phases};
pub use crate::plan::phases::seen::Observed;
use crate::plan::phases::seen::Seen;
pub(crate) use crate::plan::rules::deletion::{Deletion, FinalizerWrite};
use crate::plan::rules::expanded_spec::ExpandedSpec;
use crate::plan::rules::finalize::{condition_of, finalize_request, Finalize};
use crate::plan::rules::out_osds::{marked_in_by, out_osds, OutInput, OutOutcome};
pub use crate::plan::rules::rollout::Hold;
use crate::plan::says::actions::Action;
use crate::plan::says::conditions::SpecProblem;
use crate::plan::says::events::PlannedEvent;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::BTreeMap;

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
    /// The release the template's OSD image reported (its pre-pull pods), for Ceph's release
    /// rules on the step asked about.
    pub image_release: Option<crate::ceph::Release>,
    /// The out-of-date update domains `partition` or a canary hold, and which.
    pub held: BTreeMap<String, Hold>,
    /// The update domains started now, in rollout order.
    pub starting: Vec<String>,
    /// Seconds each update domain that finished in this plan took.
    pub finished_domain_seconds: Vec<i64>,
    /// A disk replacement waits for its OSD's id: the runtime learns the ids from Ceph and
    /// plans again.
    pub wants_osd_ids: bool,
    /// How the CephOSD is being deleted, if it is.
    pub(crate) deletion: Option<Deletion>,
    /// The operator's finalizer to add or remove, after the actions went through.
    pub(crate) finalizer: Option<FinalizerWrite>,
}

impl Plan {
    /// Whether the plan takes down a pod that may run an OSD daemon in its domain's turn, or
    /// removes the finalizer of a deleted CephOSD (the garbage collector then deletes every
    /// pod still naming it, one the cache does not show yet too): such a plan must be decided
    /// on a view of the cluster no older than the decision.
    pub fn disrupts(&self) -> bool {
        !self.replacing.is_empty() || self.finalizer == Some(FinalizerWrite::Remove)
    }
}

/// Plans one reconcile of `cr` given what carries its owner label, at time `now`. Total: a
/// spec nothing can be built from yields a plan without writes whose status says why.
pub fn plan(
    cr: &CephOsd,
    observed: &Observed<'_>,
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Plan {
    plan_expanded(cr, &ExpandedSpec::of(&cr.spec), observed, suffixes, now)
}

/// [`plan`] with `cr`'s spec already expanded (`expanded` must be `ExpandedSpec::of(&cr.spec)`).
///
/// In phases, each with its own outcome: observe (`Seen`), decide (`Decided`: the deletions
/// that go at once, the creations, the proposed rollout step), pre-pull (the next domains'
/// images onto their nodes; a domain whose images are not there yet leaves the step), gate
/// (Ceph's say on that step), budget (`Budgeted`: the step trimmed to what the gate lets go, the
/// domains it starts and the disruption budget reserving them), order (`Ordered`: every write
/// in the order it applies, none when a pod it needs cannot be built), report (`Report`:
/// summary, status, events).
pub fn plan_expanded(
    cr: &CephOsd,
    expanded: &ExpandedSpec,
    observed: &Observed<'_>,
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Plan {
    let replaced = replacing(cr, expanded, observed, now);
    let withheld;
    let expanded = if replaced.withheld.is_empty() {
        expanded
    } else {
        withheld = expanded.without(&replaced.withheld);
        &withheld
    };
    let mut seen = Seen::new(cr, expanded, observed, now);
    seen.prepare_ids.clone_from(&replaced.preparing);
    seen.replacing = replaced.withheld.iter().map(ToString::to_string).collect();
    seen.replacement_hold.clone_from(&replaced.holds_rollout);
    let (mut decided, mut proposed) = decide(&seen, suffixes);
    let continuing = &decided.previous_update;
    let rollout = &mut decided.rollout;
    let pre_pull = pre_pull(&seen, rollout, continuing, &mut proposed.step, now);
    let mut gated = gate_step(
        &seen,
        &observed.ceph,
        &decided,
        &proposed.step.subjects,
        now,
    );
    let out = out_osds_of(&seen, &observed.ceph, &gated, now);
    let replacement_marks_in = marked_in_by(&replaced.actions);
    let mark_in: Vec<_> = (out.mark_in.iter())
        .filter(|id| !replacement_marks_in.contains(&id.0))
        .copied()
        .collect();
    if !mark_in.is_empty() {
        gated.first.push(Action::MarkIn { ids: mark_in });
    }
    // A replacement's Ceph writes go first: a destroy is made at the epoch it was asked at.
    gated.first.splice(0..0, replaced.actions.iter().cloned());
    let finalize = finalize_request(cr, &observed.ceph, now);
    // Last: a raise Ceph refuses fails the reconcile after the rollout's own writes.
    gated
        .last
        .extend(finalize.as_ref().and_then(Finalize::action));
    let finalized = finalize.as_ref().map(condition_of);
    let closed = observed.ceph.pgs_unclean.as_deref();
    let mut budgeted = budget(&seen, &decided, &gated, &mut proposed.step, closed);
    let budget_writes = std::mem::take(&mut budgeted.plan.actions);
    let ordered = order(
        &seen,
        &decided,
        &gated,
        proposed,
        budget_writes,
        pre_pull.as_ref(),
    );
    let report = report(
        &seen,
        &Phases {
            decided: &decided,
            pre_pull: pre_pull.as_ref(),
            gated: &gated,
            budgeted: &budgeted,
            ordered: &ordered,
        },
        &CephSaid {
            view: &observed.ceph,
            out: &out,
            finalized: finalized.as_ref(),
            replaced: &replaced,
        },
        now,
    );
    let held = decided.rollout.held;
    Plan {
        template_hash: seen.template_hash.clone(),
        pods: seen.pods,
        actions: ordered.actions,
        summary: report.summary,
        replacing: ordered.replacing,
        halted: report.halted,
        spec_problems: report.spec_problems,
        stalled: report.stalled,
        events: report.events,
        status: report.status,
        status_changed: report.status_changed,
        requeue_after: report.requeue_after,
        gate_question: ordered.question,
        image_release: pre_pull.as_ref().and_then(|p| p.image_release),
        held,
        starting: budgeted.starting,
        finished_domain_seconds: report.finished_domain_seconds,
        wants_osd_ids: replaced.wants_osd_ids && observed.ceph.learned_ids.is_none(),
        deletion: seen.deletion,
        finalizer: report.finalizer,
    }
}

/// The out OSDs after the gate's outcome `gated` (see `out_osds`).
fn out_osds_of(
    seen: &Seen<'_>,
    ceph: &gate::CephView,
    gated: &gate::GateOutcome,
    now: Timestamp,
) -> OutOutcome {
    let desired = seen.desired.osds.keys().map(ToString::to_string).collect();
    out_osds(&OutInput {
        previous: &seen.previous.osds_out,
        osds: ceph.osds.as_ref(),
        desired: &desired,
        known: &seen.previous.osd_ids,
        step: gated.step.as_ref(),
        gate_marks_in: &marked_in_by(&gated.first),
        now,
    })
}

#[cfg(test)]
pub(crate) mod tests;
