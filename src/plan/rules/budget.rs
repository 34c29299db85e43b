//! The disruption budget that node drains and the rollout share, pure: the
//! PodDisruptionBudget a CephOSD should have, whether the rollout may start another update
//! domain, and what the status says.
//!
//! Rules. The budget selects the CephOSD's own OSD pods by their update-domain label, except
//! those of domains already down or being replaced, with an integer `minAvailable` (the only
//! kind the disruption controller evaluates for pods whose controller has no `/scale`): it
//! admits as many evictions as update domains may still go down, and an eviction takes down at
//! most one domain. The rollout starts a domain only on a budget the disruption controller has
//! caught up with and with no eviction under way, and reserves it by a write conditional on the
//! budget's resourceVersion (every admitted eviction changes it, and evictions are refused
//! until the controller has seen the write). While a cordoned node's OSD pods still run, no
//! domain starts (drains go first), and no missing OSD pod is created on a cordoned node. A
//! PodDisruptionBudget of someone else that selects the OSD pods means none of ours: a pod
//! under two cannot be evicted at all; the budget a former CephOSD of the same name left
//! (deleted with `--cascade=orphan`) is not someone else's: it is adopted back. Ceph's PGs not
//! all clean (or no mgr, or no answer) close the budget too.

use crate::ceph::PgStates;
use crate::crd::update_domain::UpdateDomains;
use crate::crd::{BudgetStatus, CephOsd};
use crate::labels;
use crate::plan::observed::classify::{ObservedPod, PodClass, Workload};
use crate::plan::says::actions::Action;
use crate::plan::says::conditions::{ConditionReason, StatedCondition};
use crate::plan::says::events::{EventReason, PlannedEvent};
use crate::pod::owner_reference::is_cephosd;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::core::{Selector, SelectorExt};
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Why the disruption budget closes for Ceph's PGs (`pgs`, as Ceph answered or why it did
/// not): some are not clean, no mgr knows, or Ceph could not tell (fail closed); none when
/// every PG is clean.
pub(crate) fn closed_for_pgs(pgs: Result<Option<&PgStates>, &dyn fmt::Display>) -> Option<String> {
    match pgs {
        Ok(None) => Some("Ceph has no mgr to tell whether its PGs are clean".to_owned()),
        Ok(Some(pgs)) if pgs.all_clean() => None,
        Ok(Some(pgs)) if !pgs.ready => {
            Some("Ceph's mgr does not know the PG states yet".to_owned())
        }
        Ok(Some(pgs)) => Some(format!(
            "Ceph's PGs are not all clean ({})",
            pgs.describe_not_clean()
        )),
        Err(error) => Some(format!(
            "Ceph did not tell whether its PGs are clean: {error}"
        )),
    }
}

/// What the runtime observed for the disruption budget of one CephOSD.
#[derive(Clone, Debug, Default)]
pub struct DisruptionView<'a> {
    /// Every PodDisruptionBudget in the CephOSD's namespace.
    pub budgets: Vec<&'a PodDisruptionBudget>,
    /// The names of the cordoned nodes (`spec.unschedulable`).
    pub cordoned: BTreeSet<String>,
}

/// The name of a CephOSD's PodDisruptionBudget.
pub(crate) fn budget_name(cr_name: &str) -> String {
    format!("{cr_name}-osds")
}

/// Whether and how the operator keeps a CephOSD's budget.
pub(crate) enum Keeping<'a> {
    /// No view of budgets (offline): nothing is done or said about them.
    Unwatched,
    /// `spec.disruptionBudget: Off`; ours, if one is left, goes.
    Off {
        ours: Option<&'a PodDisruptionBudget>,
    },
    /// PodDisruptionBudgets of someone else select the OSD pods; ours, if one is left, goes.
    Foreign {
        names: Vec<String>,
        ours: Option<&'a PodDisruptionBudget>,
    },
    Managed {
        ours: Option<&'a PodDisruptionBudget>,
        cordoned: &'a BTreeSet<String>,
    },
}

impl<'a> Keeping<'a> {
    /// How `cr`'s budget is kept, given `view` and the pods it owns (`pods`).
    pub(crate) fn of(cr: &CephOsd, view: Option<&'a DisruptionView<'a>>, pods: &[&Pod]) -> Self {
        let Some(view) = view else {
            return Self::Unwatched;
        };
        let (mut ours, others): (Vec<&PodDisruptionBudget>, Vec<&PodDisruptionBudget>) =
            (view.budgets.iter()).partition(|b| is_ours(cr, b) || is_former(cr, b));
        ours.sort_by_key(|b| !is_ours(cr, b));
        let ours = ours.first().copied();
        if !cr.spec.manages_disruption_budget() {
            return Self::Off { ours };
        }
        let mut names: Vec<String> = others
            .iter()
            .filter(|b| pod_selector(b).is_some_and(|s| pods.iter().any(|p| s.matches(p.labels()))))
            .map(|b| b.name_any())
            .collect();
        names.sort();
        if names.is_empty() {
            Self::Managed {
                ours,
                cordoned: &view.cordoned,
            }
        } else {
            Self::Foreign { names, ours }
        }
    }

    /// The cordoned nodes that matter: none unless the budget is managed.
    pub(crate) fn cordoned(&self) -> Option<&'a BTreeSet<String>> {
        match self {
            Self::Managed { cordoned, .. } => Some(*cordoned),
            _ => None,
        }
    }
}

/// Whether `budget` is this CephOSD's: controlled by it (or, for a CephOSD not yet stored,
/// carrying its name).
fn is_ours(cr: &CephOsd, budget: &PodDisruptionBudget) -> bool {
    match cr.uid() {
        Some(uid) => budget
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.uid == uid),
        None => budget.name_any() == budget_name(&cr.name_any()),
    }
}

/// Whether `budget` is the one a former CephOSD of this name left (deleted with
/// `--cascade=orphan`): the name and owner label this CephOSD gives its budget, and no owner
/// but a CephOSD of this name with another uid (names are unique in a namespace: that one is
/// gone). A budget of a CephOSD that exists, or with any other owner, is not; and a CephOSD
/// being deleted adopts nothing (its own orphaning strips the budget's owner reference).
fn is_former(cr: &CephOsd, budget: &PodDisruptionBudget) -> bool {
    let (Some(uid), name) = (cr.uid(), cr.name_any()) else {
        return false;
    };
    cr.metadata.deletion_timestamp.is_none()
        && budget.metadata.deletion_timestamp.is_none()
        && budget.name_any() == budget_name(&name)
        && budget.labels().get(labels::OWNER) == Some(&labels::owner_label_value(&name))
        && (budget.owner_references().iter())
            .all(|o| is_cephosd(o) && o.name == name && o.uid != uid)
}

/// A budget's pod selector: policy/v1's, where `{}` selects every pod of the namespace and no
/// selector (or one the API would not accept) selects none.
pub(crate) fn pod_selector(budget: &PodDisruptionBudget) -> Option<Selector> {
    let selector = budget.spec.as_ref()?.selector.clone()?;
    Selector::try_from(selector).ok()
}

/// Cordoned hosts where OSD pods of ours still run, with how many: their drains wait.
pub(crate) fn drains_waiting(
    cordoned: &BTreeSet<String>,
    pods: &[ObservedPod],
) -> BTreeMap<String, usize> {
    let mut waiting = BTreeMap::new();
    for pod in pods
        .iter()
        .filter(|p| p.is_live() && p.workload == Workload::Pod)
    {
        if let Some(key) = pod.key.as_ref().filter(|k| cordoned.contains(&k.host)) {
            *waiting.entry(key.host.clone()).or_insert(0) += 1;
        }
    }
    waiting
}

/// Why the rollout may start no update domain now, if it may not: a cordoned node's pods wait
/// for their drain, or the budget is not one the disruption controller has caught up with and
/// shows no eviction under way.
pub(crate) fn start_blocked(
    keeping: &Keeping<'_>,
    cr_name: &str,
    waiting: &BTreeMap<String, usize>,
) -> Option<String> {
    let Keeping::Managed { ours, .. } = keeping else {
        return None;
    };
    if let Some((host, count)) = waiting.iter().next() {
        return Some(format!(
            "node {host} is cordoned and {count} OSD pod(s) still run there: its drain goes \
             first (uncordon the node to let the rollout go on)"
        ));
    }
    let name = budget_name(cr_name);
    let Some(ours) = ours else {
        return Some(format!(
            "waiting for the disruption budget: PodDisruptionBudget {name} is being created"
        ));
    };
    let generation = ours.metadata.generation.unwrap_or(0);
    let status = ours.status.as_ref();
    let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
    if observed < generation {
        return Some(format!(
            "waiting for the disruption budget: the disruption controller has not yet observed \
             generation {generation} of PodDisruptionBudget {name}"
        ));
    }
    if let Some(pod) = status
        .and_then(|s| s.disrupted_pods.as_ref())
        .and_then(|d| d.keys().next())
    {
        return Some(format!(
            "waiting for the disruption budget: the eviction of pod {pod} is under way"
        ));
    }
    let (healthy, expected) = status.map_or((0, 0), |s| {
        (s.current_healthy.unwrap_or(0), s.expected_pods.unwrap_or(0))
    });
    if healthy < expected {
        return Some(format!(
            "waiting for the disruption budget: the disruption controller counts {healthy} of \
             the {expected} OSD pods PodDisruptionBudget {name} selects healthy"
        ));
    }
    None
}

/// What the budget plan is made from, after the rollout step.
pub(crate) struct BudgetInput<'a> {
    pub cr: &'a CephOsd,
    /// How the CephOSD's OSDs group into update domains.
    pub domains: UpdateDomains<'a>,
    pub keeping: &'a Keeping<'a>,
    /// Update domains down now (a missing, unready, terminating or not-Ready pod).
    pub unavailable: &'a BTreeSet<String>,
    /// Update domains the rollout starts in this plan (besides those down already).
    pub starting: &'a [String],
    pub pods: &'a [ObservedPod],
    pub waiting: &'a BTreeMap<String, usize>,
    /// Why the budget admits nothing whatever the domains (Ceph's PGs are not clean).
    pub closed: Option<&'a str>,
}

/// The budget's writes, its status, the `DisruptionBudget` condition and events.
#[derive(Default)]
pub(crate) struct BudgetPlan {
    /// Writes of the PodDisruptionBudget: before any deletion of the rollout step.
    pub actions: Vec<Action>,
    pub status: Option<BudgetStatus>,
    pub condition: Option<StatedCondition>,
    pub events: Vec<PlannedEvent>,
    /// When to look at Ceph again while it keeps the budget closed.
    pub reopens_after: Option<k8s_openapi::jiff::SignedDuration>,
}

/// How soon Ceph is looked at again while its PGs keep the budget closed.
const CLOSED_LOOKS: k8s_openapi::jiff::SignedDuration =
    k8s_openapi::jiff::SignedDuration::from_secs(2);

/// The budget for `input`: a PodDisruptionBudget admitting `maxUnavailable` minus the domains
/// down or started update domains, over the pods of the others.
pub(crate) fn plan_budget(input: &BudgetInput<'_>, previous: Option<&BudgetStatus>) -> BudgetPlan {
    let cr = input.cr;
    let name = budget_name(&cr.name_any());
    let (ours, cordoned) = match input.keeping {
        Keeping::Unwatched => return BudgetPlan::default(),
        Keeping::Off { ours } => {
            return not_kept(*ours, ConditionReason::BudgetOff, OFF.to_owned())
        }
        Keeping::Foreign { names, ours } => {
            let message = format!(
                "PodDisruptionBudget {} of someone else selects the OSD pods: the operator keeps \
                 none (a pod under two budgets cannot be evicted at all)",
                names.join(", ")
            );
            return not_kept(*ours, ConditionReason::ForeignBudget, message);
        }
        Keeping::Managed { ours, cordoned } => (*ours, *cordoned),
    };
    let spec = &cr.spec;
    let (excluded, down_units) = outside_the_budget(input, cordoned);
    let free = spec.max_unavailable().saturating_sub(down_units);
    let allowed = if input.closed.is_some() { 0 } else { free };
    let excluded_labels: BTreeSet<String> = excluded
        .iter()
        .map(|d| labels::update_domain_label_value(d))
        .collect();
    // The pods the budget selects that the disruption controller counts healthy.
    let healthy = (input.pods.iter())
        .filter(|p| p.ready && p.deleted.is_none() && p.class != PodClass::Terminating)
        .filter(|p| {
            p.domain_label
                .as_ref()
                .is_some_and(|l| !excluded_labels.contains(l))
        })
        .count();
    let min_available = healthy - allowed.min(healthy);
    let desired = desired_budget(cr, &name, &excluded_labels, min_available);
    let (actions, mut events) = budget_writes(input, ours, desired, &name);
    let drains: Vec<String> = input.waiting.keys().cloned().collect();
    let status = BudgetStatus {
        allowed_domains: i64::try_from(allowed).unwrap_or(i64::MAX),
        unavailable_domains: excluded.iter().cloned().collect(),
        drains_waiting: drains,
    };
    let down = if excluded.is_empty() {
        "none".to_owned()
    } else {
        excluded.iter().cloned().collect::<Vec<_>>().join(", ")
    };
    let message = managed_message(input, &name, allowed, &down);
    events.extend(drain_events(&status, previous, &down));
    BudgetPlan {
        actions,
        status: Some(status),
        condition: Some(StatedCondition {
            holds: true,
            reason: ConditionReason::BudgetManaged,
            message,
        }),
        events,
        reopens_after: input.closed.map(|_| CLOSED_LOOKS),
    }
}

/// The write of the `desired` budget where ours differs or is missing, and the Event of a
/// former CephOSD's budget taken over.
fn budget_writes(
    input: &BudgetInput<'_>,
    ours: Option<&PodDisruptionBudget>,
    desired: PodDisruptionBudget,
    name: &str,
) -> (Vec<Action>, Vec<PlannedEvent>) {
    let cr = input.cr;
    // (whether it exists, the version the write is conditional on), and the events
    let (write, events) = match ours {
        None => (Some((false, None)), Vec::new()),
        // A former CephOSD's budget: its owner reference is rewritten, conditional on the
        // version it was read at (no one else's write is overwritten).
        Some(ours) if !is_ours(cr, ours) => (
            Some((true, ours.resource_version())),
            vec![adopted_event(name, &cr.name_any())],
        ),
        Some(ours) if ours.spec != desired.spec => {
            let version = (!input.starting.is_empty())
                .then(|| ours.resource_version())
                .flatten();
            (Some((true, version)), Vec::new())
        }
        Some(_) => (None, Vec::new()),
    };
    let writes = write.map(|(exists, resource_version)| Action::WriteBudget {
        budget: Box::new(desired),
        exists,
        resource_version,
    });
    (writes.into_iter().collect(), events)
}

/// The `DisruptionBudget` condition's words for a budget the operator keeps.
fn managed_message(input: &BudgetInput<'_>, name: &str, allowed: usize, down: &str) -> String {
    let mut message = format!(
        "PodDisruptionBudget {name} admits {allowed} more update domain(s) down \
         (maxUnavailable {}; down or being replaced: {down})",
        input.cr.spec.max_unavailable()
    );
    if let Some(closed) = input.closed {
        message.push_str(&format!("; closed: {closed}"));
    }
    if !input.waiting.is_empty() {
        let drains: Vec<&str> = input.waiting.keys().map(String::as_str).collect();
        message.push_str(&format!("; drains waiting: {}", drains.join(", ")));
    }
    message
}

const OFF: &str = "spec.disruptionBudget is Off: no PodDisruptionBudget is kept and node drains \
                   are not counted against maxUnavailable";

/// No budget kept: ours, if one is left, goes; the condition says why.
fn not_kept(
    ours: Option<&PodDisruptionBudget>,
    reason: ConditionReason,
    message: String,
) -> BudgetPlan {
    BudgetPlan {
        actions: (ours.into_iter())
            .map(|b| Action::DeleteBudget {
                name: b.name_any(),
                uid: b.uid(),
            })
            .collect(),
        condition: Some(StatedCondition {
            holds: false,
            reason,
            message,
        }),
        ..BudgetPlan::default()
    }
}

/// The event of adopting the budget `name` a former CephOSD `cr_name` left.
fn adopted_event(name: &str, cr_name: &str) -> PlannedEvent {
    PlannedEvent {
        warning: false,
        reason: EventReason::Adopted,
        note: format!(
            "adopted PodDisruptionBudget {name}, left by a former CephOSD {cr_name} (deleted \
             with --cascade=orphan)"
        ),
        pod: None,
    }
}

/// The update domains outside the budget (down, starting, and every domain of a drained host)
/// and how many units of the budget they use: a domain each, a drained host one in all. A
/// node drain takes its whole host down: once a cordoned host has a domain down, all of its
/// domains are outside the budget (its other pods may go) and count as one.
fn outside_the_budget(
    input: &BudgetInput<'_>,
    cordoned: &BTreeSet<String>,
) -> (BTreeSet<String>, usize) {
    let mut excluded: BTreeSet<String> = input.unavailable.clone();
    excluded.extend(input.starting.iter().cloned());
    let on = |host: &str, domain: &str| input.domains.has_host(domain, host);
    let drained: BTreeSet<&String> = (cordoned.iter())
        .filter(|h| excluded.iter().any(|d| on(h, d)))
        .collect();
    let units = drained.len()
        + (excluded.iter())
            .filter(|d| !drained.iter().any(|h| on(h, d)))
            .count();
    for pod in input.pods {
        if let Some(key) = pod.key.as_ref().filter(|k| drained.contains(&k.host)) {
            excluded.insert(input.domains.id(key));
        }
    }
    (excluded, units)
}

/// A `DrainAdmitted` or `DrainHeld` event for each cordoned host whose drain is newly waiting,
/// or whose admission changed since the previous status.
fn drain_events(
    status: &BudgetStatus,
    previous: Option<&BudgetStatus>,
    down: &str,
) -> Vec<PlannedEvent> {
    let admits = status.allowed_domains > 0;
    let admitted_before = previous.is_some_and(|p| p.allowed_domains > 0);
    status
        .drains_waiting
        .iter()
        .filter(|host| {
            let waited = previous.is_some_and(|p| p.drains_waiting.contains(host));
            !waited || admits != admitted_before
        })
        .map(|host| {
            let (reason, note) = if admits {
                (
                    EventReason::DrainAdmitted,
                    format!(
                        "node {host} is cordoned: the disruption budget admits the eviction of \
                         its OSD pods ({} update domain(s) may go down)",
                        status.allowed_domains
                    ),
                )
            } else {
                (
                    EventReason::DrainHeld,
                    format!(
                        "node {host} is cordoned: its OSD pods wait for the disruption budget \
                         (down or being replaced: {down})"
                    ),
                )
            };
            PlannedEvent {
                warning: false,
                reason,
                note,
                pod: None,
            }
        })
        .collect()
}

/// The PodDisruptionBudget `name` for `cr`: its own OSD pods outside the domains labelled
/// `excluded`, `minAvailable` of them.
fn desired_budget(
    cr: &CephOsd,
    name: &str,
    excluded: &BTreeSet<String>,
    min_available: usize,
) -> PodDisruptionBudget {
    let owner = labels::owner_label_value(&cr.name_any());
    let mut expressions = vec![LabelSelectorRequirement {
        key: labels::UPDATE_DOMAIN.to_owned(),
        operator: "Exists".to_owned(),
        values: None,
    }];
    if !excluded.is_empty() {
        expressions.push(LabelSelectorRequirement {
            key: labels::UPDATE_DOMAIN.to_owned(),
            operator: "NotIn".to_owned(),
            values: Some(excluded.iter().cloned().collect()),
        });
    }
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: cr.namespace(),
            labels: Some(BTreeMap::from([(labels::OWNER.to_owned(), owner.clone())])),
            owner_references: cr.uid().map(|uid| {
                vec![OwnerReference {
                    api_version: "ceph.elemental.net/v1alpha1".to_owned(),
                    kind: "CephOSD".to_owned(),
                    name: cr.name_any(),
                    uid,
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]
            }),
            ..ObjectMeta::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(
                i32::try_from(min_available).unwrap_or(i32::MAX),
            )),
            max_unavailable: None,
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(labels::OWNER.to_owned(), owner)])),
                match_expressions: Some(expressions),
            }),
            unhealthy_pod_eviction_policy: Some("AlwaysAllow".to_owned()),
        }),
        status: None,
    }
}

/// The update-domain label each of our pods should carry where it does not: the budget
/// selects pods by it. Only live pods this CephOSD runs (not another controller's).
pub(crate) fn label_patches(
    domains: UpdateDomains<'_>,
    pods: &[&ObservedPod],
    skip: impl Fn(&ObservedPod) -> bool,
) -> Vec<Action> {
    pods.iter()
        .filter(|p| p.workload == Workload::Pod && p.is_live() && !skip(p))
        .filter_map(|pod| {
            let key = pod.key.as_ref()?;
            let domain = domains.id(key);
            let value = labels::update_domain_label_value(&domain);
            (pod.domain_label.as_deref() != Some(value.as_str())).then(|| Action::LabelDomain {
                name: pod.name.clone(),
                value,
            })
        })
        .collect()
}
