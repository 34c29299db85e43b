//! What the Ceph gate is given and what it makes of a plan, as data: the runtime's view of
//! Ceph (`CephView`, `CephInput`, `GateAnswer`), the keys a step would take down
//! (`GateSubject`), and the gate's outcome (`GateOutcome`). Its rules live beside it: `gate`
//! (stops), `drain` (removals), `verdict` (Ceph's answers read as Proceed / Wait / Halt).

use super::crashes::CrashHalt;
use super::release::ReleaseLook;
use super::step_end::StepProgress;
use super::verdict::{Blocker, GateDecision};
use crate::ceph::{CrashReport, OsdDump, OsdId, Release};
use crate::crd::osd::OsdKey;
use crate::crd::{CephStep, StepOsd};
use crate::plan::says::actions::Action;
use crate::plan::says::events::PlannedEvent;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// Default of `CephView::max_noout`: past it `noout` is cleared so Ceph re-replicates.
pub(crate) const DEFAULT_MAX_NOOUT: SignedDuration = SignedDuration::from_secs(30 * 60);

/// Default of `CephView::look_every`: when each question starts a `ceph` process.
pub(crate) const SLOW_LOOKS: SignedDuration = SignedDuration::from_secs(1);
/// `CephView::look_every` over a long-lived connection (a look costs a few milliseconds).
pub(crate) const QUICK_LOOKS: SignedDuration = SignedDuration::from_millis(250);

/// Why the gate is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateOff {
    /// The operator has no Ceph configured (`--ceph-conf`).
    NotConfigured,
    /// The CephOSD opts out (`spec.cephGate: Skipped`).
    Skipped,
}

/// What the runtime learnt of Ceph for this plan.
#[derive(Clone, Debug, PartialEq, Eq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per reconcile, read in place: a box would only add an indirection"
)]
pub enum CephInput {
    Off {
        why: GateOff,
    },
    /// The gate is on; Ceph was not asked in this reconcile.
    NotAsked,
    /// Ceph's answer for the keys the planner proposed.
    Answered(GateAnswer),
}

/// The gate's answer for one proposal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateAnswer {
    /// The keys asked about, each with the ids it was mapped to (empty: unknown).
    pub keys: BTreeMap<OsdKey, BTreeSet<OsdId>>,
    pub decision: GateDecision,
    /// `up_from` of each id before the stop.
    pub up_from: BTreeMap<OsdId, u64>,
    /// Ids learnt from up daemons' metadata, for every key the operator runs.
    pub learned: BTreeMap<OsdKey, BTreeSet<OsdId>>,
    /// Ids to stop whose `noout` was already set when Ceph was asked.
    pub noout_before: BTreeSet<OsdId>,
    /// The OSDs outside the step that carried `noout` when Ceph was asked (another step on
    /// this Ceph cluster, or an admin's): asked about together with the step's
    /// (`asked_together`); the step's `noout` is set only while no other flag shows.
    pub asked_with: BTreeSet<OsdId>,
    /// Pods whose `osd-ids` annotation is not a list of ids (pod name → the value): ignored,
    /// and said in a Warning event.
    pub unreadable_statements: BTreeMap<String, String>,
    /// The ids asked about that Ceph has out already (a drain marks only the others out).
    pub out: BTreeSet<OsdId>,
    /// Ceph's verdict on the whole first update domain, when it refused it and was asked
    /// about a part of it next.
    pub refused_whole: Option<Box<RefusedWhole>>,
    /// The release each OSD of the Ceph cluster last reported (`osd metadata`), when the
    /// answer read it.
    pub releases: Option<BTreeMap<OsdId, Release>>,
    /// Ceph's crash reports not archived yet, read again with a `Proceed` (the view's may be
    /// seconds old).
    pub crashes: Option<Vec<CrashReport>>,
}

/// An update domain Ceph did not let stop as a whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedWhole {
    pub domain: String,
    pub decision: GateDecision,
}

impl GateAnswer {
    /// The answer about `question` while `blocker` keeps it from being asked: its keys without
    /// ids, a `Wait` that says why.
    pub(crate) fn waiting(question: &[GateSubject], blocker: Blocker) -> Self {
        Self {
            keys: question
                .iter()
                .map(|s| (s.key.clone(), BTreeSet::new()))
                .collect(),
            decision: GateDecision::Wait {
                blockers: vec![blocker],
            },
            ..Self::default()
        }
    }
}

impl GateAnswer {
    /// The OSDs `ids` a step stops, each with its `up_from` before the stop (0: not known).
    pub(crate) fn step_osds(&self, ids: &BTreeSet<OsdId>) -> Vec<StepOsd> {
        ids.iter()
            .map(|id| StepOsd {
                id: id.0,
                up_from: self.up_from.get(id).copied().unwrap_or(0),
            })
            .collect()
    }
}

impl Default for GateAnswer {
    /// Nothing asked yet: a `Wait` (never a `Proceed` on no answer).
    fn default() -> Self {
        Self {
            keys: BTreeMap::new(),
            decision: GateDecision::no_answer(&"not asked yet"),
            up_from: BTreeMap::new(),
            learned: BTreeMap::new(),
            noout_before: BTreeSet::new(),
            asked_with: BTreeSet::new(),
            unreadable_statements: BTreeMap::new(),
            out: BTreeSet::new(),
            refused_whole: None,
            releases: None,
            crashes: None,
        }
    }
}

/// The planner's view of Ceph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CephView {
    pub input: CephInput,
    /// Where the open step stands (`status.cephStep`), when Ceph was looked at.
    pub step: Option<StepProgress>,
    /// How long `noout` may be held.
    pub max_noout: SignedDuration,
    /// Look at Ceph again this soon while a step is open or a question waits (Ceph's changes
    /// trigger no watch).
    pub look_every: SignedDuration,
    /// Why Ceph's PGs are not all clean (or Ceph could not tell), when it was looked at for
    /// the disruption budget: the budget admits no drain then.
    pub pgs_unclean: Option<String>,
    /// The OSDs that look showed with `noout`, when one was taken: a step's `noout` already
    /// gone is not cleared again.
    pub noout_now: Option<BTreeSet<OsdId>>,
    /// While a step is open: the Ceph cluster's step lock was found gone or another's on
    /// this look (what happened, said in the condition and a Warning event).
    pub lock_lost: Option<String>,
    /// Ceph's OSD map of this reconcile (each OSD up or down, in or out), when read.
    pub osds: Option<OsdDump>,
    /// The releases Ceph reports, looked at for a finalize request (Err: why not answered).
    pub release_look: Option<Result<ReleaseLook, String>>,
    /// Ceph's crash reports not archived yet, read while a rollout is under way.
    pub crashes: Option<Vec<CrashReport>>,
    /// Ceph's PG states of this reconcile, when read and not trailing a placement change.
    pub pgs: Option<crate::ceph::PgStates>,
    /// `safe-to-destroy` of the OSDs a disk replacement destroys next, asked in this
    /// reconcile after the OSD map was read.
    pub destroy_look: Option<crate::ceph::DestroyLook>,
    /// The PGs of a disk replacement's new daemon, looked at while it backfills.
    pub backfill_look: Option<crate::ceph::BackfillLook>,
    /// Ids learnt from Ceph's metadata for every key the operator runs, asked outside a
    /// question (a disk replacement of a key whose id was never learnt).
    pub learned_ids: Option<BTreeMap<OsdKey, BTreeSet<OsdId>>>,
}

impl Default for CephView {
    fn default() -> Self {
        Self {
            input: CephInput::Off {
                why: GateOff::NotConfigured,
            },
            step: None,
            max_noout: DEFAULT_MAX_NOOUT,
            look_every: SLOW_LOOKS,
            pgs_unclean: None,
            noout_now: None,
            lock_lost: None,
            osds: None,
            release_look: None,
            crashes: None,
            pgs: None,
            destroy_look: None,
            backfill_look: None,
            learned_ids: None,
        }
    }
}

/// A key whose pods the rollout would take down, its pod (if one runs) and its update domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateSubject {
    pub key: OsdKey,
    pub pod: Option<String>,
    pub domain: String,
    /// Its key left the spec: its OSDs are drained before its pod stops.
    pub leaving: bool,
}

/// The `CephGate` condition.
pub(crate) type GateCondition = crate::plan::says::conditions::StatedCondition;

/// What the gate is given.
pub(crate) struct GateInput<'a> {
    pub view: &'a CephView,
    /// `spec.cephGate: Skipped`.
    pub skipped: bool,
    /// The open step (`status.cephStep`).
    pub open: Option<&'a CephStep>,
    /// The keys of the deletions the rollout chose, in order.
    pub proposed: &'a [GateSubject],
    /// The open step's keys all have their replacements Ready (and soaked), or are gone.
    pub settled: bool,
    /// None of the open step's pods was taken down.
    pub untouched: bool,
    /// The open step's keys that the spec lists (again).
    pub returned: BTreeSet<String>,
    /// A new daemon's crash that halts the rollout: no rollout step starts.
    pub crashed: Option<&'a CrashHalt>,
    /// The keys withheld for a disk replacement: their drain ends in a destroy, not a purge.
    pub replacing: &'a BTreeSet<String>,
    pub now: Timestamp,
}

/// What the gate makes of the plan.
#[derive(Debug)]
pub(crate) struct GateOutcome {
    /// Actions before all others.
    pub first: Vec<Action>,
    /// Actions after all others: the `noout` of a step that ended, cleared once the next
    /// step's pods are on their way down (it holds nothing up).
    pub last: Vec<Action>,
    /// Whether the rollout's deletions go ahead (after `first`).
    pub deletions_allowed: bool,
    /// Only these update domains' deletions go ahead (Ceph allowed the first of several
    /// domains proposed together); None: all of them.
    pub allowed_domains: Option<BTreeSet<String>>,
    /// Only the deletions of these keys go ahead (a drain's); None: all of them.
    pub allowed_keys: Option<BTreeSet<String>>,
    /// `status.cephStep` after this plan.
    pub step: Option<CephStep>,
    /// Keys to ask Ceph about before planning again.
    pub question: Option<Vec<GateSubject>>,
    /// Why the rollout does not move, if the gate holds it.
    pub halted: Option<String>,
    /// A new daemon's crash that halts the rollout (the `Stalled` condition says it).
    pub crashed: Option<CrashHalt>,
    pub condition: GateCondition,
    pub events: Vec<PlannedEvent>,
    pub requeue_after: Option<SignedDuration>,
}

impl GateOutcome {
    pub(crate) fn new(condition: GateCondition) -> Self {
        Self {
            first: Vec::new(),
            last: Vec::new(),
            deletions_allowed: false,
            allowed_domains: None,
            allowed_keys: None,
            step: None,
            question: None,
            halted: None,
            crashed: None,
            condition,
            events: Vec::new(),
            requeue_after: None,
        }
    }
}
