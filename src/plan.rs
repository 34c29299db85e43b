//! The planner: a pure function from (CR, observed pods, suffixes) to the actions that move the
//! cluster one safe step towards the CR. No I/O happens here; every rule is unit-testable.
//!
//! Safety rules beyond the reference operator: a pod for an OSD is created only when no pod of
//! that OSD exists any more (terminating ones included), so two pods never share a device; and a
//! rollout step starts only when every desired OSD has a live pod and none is waiting for Ready.

use crate::crd::{CephOsd, CephOsdStatus, UpdateDomain};
use crate::desired::{desired_osds, DesiredOsd};
use crate::hash::TemplateHash;
use crate::labels::{self, PodState};
use crate::osd::{OsdKey, SuffixSource};
use crate::render::{render_pod, PodIdentity, RenderError};
use crate::status::{compute_status, StatusInput};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};

/// How the planner sees one observed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodClass {
    /// Has a deletionTimestamp: ignored, but still holds its OSD's device until gone.
    Terminating,
    /// Not a pod we could have made (or a duplicate): deleted.
    Invalid(String),
    /// Ended (`Failed`/`Succeeded`, e.g. evicted): deleted, then recreated once gone.
    Ended(String),
    /// Current template and devices.
    UpToDate,
    /// Older template or changed db/wal devices: replaced in its turn.
    OutOfDate,
    /// Created by us and now Ready: becomes up-to-date.
    Ready,
    /// Created by us and not yet Ready: halts the rollout.
    Unready,
}

/// One observed pod and what the planner made of it.
#[derive(Clone, Debug)]
pub struct ObservedPod {
    pub name: String,
    pub uid: Option<String>,
    /// The OSD it belongs to, when its annotations say so.
    pub key: Option<OsdKey>,
    pub class: PodClass,
    pub ready: bool,
    pub state: Option<String>,
    /// When the pod was created (deadline of a replacement).
    pub created: Option<Timestamp>,
    /// Ready since then, but not yet for minReadySeconds.
    pub soaking_since: Option<Timestamp>,
    /// The pod's deletionTimestamp (when its graceful termination should have ended).
    pub deleted: Option<Timestamp>,
    /// Whether a controller ownerReference points at the CR (false: adopted from elsewhere).
    pub controlled: bool,
}

impl ObservedPod {
    /// `name (host:data)`, for messages.
    pub fn describe(&self) -> String {
        match &self.key {
            Some(key) => format!("{} ({key})", self.name),
            None => self.name.clone(),
        }
    }

    /// A live pod (one that counts as the OSD's pod).
    pub fn is_live(&self) -> bool {
        matches!(
            self.class,
            PodClass::UpToDate | PodClass::OutOfDate | PodClass::Ready | PodClass::Unready
        )
    }
}

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
    pub reason: &'static str,
    pub note: String,
    /// The pod the event is about (its `related` object), if one.
    pub pod: Option<String>,
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
    /// Messages about the spec that deserve a condition (e.g. conflicting duplicates).
    pub spec_warnings: Vec<String>,
    /// A replacement past its progress deadline, described.
    pub stalled: Option<String>,
    /// Events that are not tied to one action (halts, stalls, overrides, adoptions).
    pub events: Vec<PlannedEvent>,
    /// The status to write (only when it differs from the CR's current one).
    pub status: CephOsdStatus,
    /// When to look again at the latest (a soak or a deadline ends), if sooner than resync.
    pub requeue_after: Option<SignedDuration>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot build the pod for OSD {key}: {source}")]
    Render {
        key: OsdKey,
        #[source]
        source: RenderError,
    },
    #[error("the CephOSD has no namespace")]
    NoNamespace,
}

/// Plans one reconcile of `cr` given every pod carrying its owner label, at time `now`.
pub fn plan(
    cr: &CephOsd,
    pods: &[Pod],
    suffixes: &mut dyn SuffixSource,
    now: Timestamp,
) -> Result<Plan, PlanError> {
    let spec = &cr.spec;
    let template_hash = TemplateHash::of(&spec.pod_template);
    let (desired, conflicts) = desired_osds(spec);
    let timing = Timing {
        now,
        min_ready: spec.min_ready(),
    };
    let observed = classify(pods, &template_hash, &desired, &timing);
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

    // 3: missing OSDs, created only once no pod of theirs exists at all (never two per device).
    let occupied: BTreeSet<&OsdKey> = observed.iter().filter_map(|p| p.key.as_ref()).collect();
    let live: BTreeSet<&OsdKey> = observed
        .iter()
        .filter(|p| p.is_live())
        .filter_map(|p| p.key.as_ref())
        .collect();
    let namespace = cr.namespace().ok_or(PlanError::NoNamespace)?;
    let cr_name = cr.name_any();
    let owner_uid = cr.uid();
    let mut missing = Vec::new();
    for osd in desired.values().filter(|o| !live.contains(&o.key)) {
        missing.push(osd.key.clone());
        if occupied.contains(&osd.key) {
            continue;
        }
        let name = format!("{}{}", osd.key.name_prefix(), suffixes.next_suffix());
        let identity = PodIdentity {
            cr_name: &cr_name,
            namespace: &namespace,
            owner_uid: owner_uid.as_deref(),
            name: &name,
            template_hash: &template_hash,
            // Every pod we create gates the rollout until it is Ready.
            pod_state: PodState::WaitForReady,
        };
        let pod =
            render_pod(&spec.pod_template, osd, &identity).map_err(|source| PlanError::Render {
                key: osd.key.clone(),
                source,
            })?;
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

    // 4: record states (only where the annotation differs: adoption writes nothing).
    let current: Vec<&ObservedPod> = observed
        .iter()
        .filter(|p| p.is_live() && p.key.as_ref().is_some_and(|k| desired.contains_key(k)))
        .collect();
    for pod in &current {
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

    // 5: rolling update: at most `maxUnavailable` update domains unavailable at once.
    let out_of_date: Vec<&ObservedPod> = current
        .iter()
        .copied()
        .filter(|p| p.class == PodClass::OutOfDate)
        .collect();
    let unready: Vec<&ObservedPod> = current
        .iter()
        .copied()
        .filter(|p| p.class == PodClass::Unready)
        .collect();
    let unavailable: BTreeSet<String> = missing
        .iter()
        .chain(unready.iter().filter_map(|p| p.key.as_ref()))
        .map(domain_of)
        .collect();
    let mut replacing = Vec::new();
    let mut halted = None;
    if !out_of_date.is_empty() {
        let free = spec.max_unavailable().saturating_sub(unavailable.len());
        if spec.is_paused() {
            halted = Some("the rollout is paused (spec.paused)".to_owned());
        } else if free == 0 {
            halted = Some(halt_reason(&unready, &missing));
        } else {
            for pod in next_update_domains(&out_of_date, spec.update_domain, &unavailable, free) {
                actions.push(delete(pod, DeleteReason::Replace));
                replacing.extend(pod.key.clone());
            }
        }
    }

    // Deadlines and soaks: what is stalled now, and when to look again.
    let deadline = spec.progress_deadline();
    let mut requeue_after: Option<SignedDuration> = None;
    let mut wake_at = |at: Timestamp| {
        let wait = at.duration_since(now).max(SignedDuration::from_secs(1));
        requeue_after = Some(requeue_after.map_or(wait, |r| r.min(wait)));
    };
    let mut stalled = None;
    for pod in &unready {
        if let Some(created) = pod.created {
            let waited = now.duration_since(created);
            if waited >= deadline {
                stalled.get_or_insert_with(|| {
                    format!(
                        "pod {} has not become Ready within the progress deadline of {}s (waiting {}s)",
                        pod.describe(),
                        deadline.as_secs(),
                        waited.as_secs()
                    )
                });
            } else {
                wake_at(created + deadline);
            }
        }
        if let Some(since) = pod.soaking_since {
            wake_at(since + timing.min_ready);
        }
    }
    // An old pod that never finishes terminating blocks its successor just as surely.
    for pod in observed.iter().filter(|p| {
        p.class == PodClass::Terminating && p.key.as_ref().is_some_and(|k| missing.contains(k))
    }) {
        let Some(deleted) = pod.deleted else { continue };
        let waited = now.duration_since(deleted);
        if waited >= deadline {
            stalled.get_or_insert_with(|| {
                format!(
                    "pod {} has not finished terminating within the progress deadline of {}s \
                     (terminating {}s); its successor starts once it is gone",
                    pod.describe(),
                    deadline.as_secs(),
                    waited.as_secs()
                )
            });
        } else {
            wake_at(deleted + deadline);
        }
    }

    let mut current_update: BTreeSet<String> = unavailable
        .iter()
        .filter(|d| previous_update.contains(d.as_str()))
        .cloned()
        .collect();
    current_update.extend(replacing.iter().map(domain_of));

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
        out_of_date: out_of_date.len(),
        unready: unready.len(),
        invalid: observed
            .iter()
            .filter(|p| matches!(p.class, PodClass::Invalid(_) | PodClass::Ended(_)))
            .count(),
        terminating: observed
            .iter()
            .filter(|p| p.class == PodClass::Terminating)
            .count(),
    };
    let spec_warnings: Vec<String> = conflicts.into_iter().map(|c| c.message).collect();
    let status = compute_status(&StatusInput {
        previous: &previous,
        generation: cr.metadata.generation,
        now,
        template_hash: &template_hash,
        summary: &summary,
        paused: spec.is_paused(),
        halted: halted.as_deref(),
        stalled: stalled.as_deref(),
        spec_errors: &spec_warnings,
        pending_actions: !actions.is_empty(),
        current_update: current_update.into_iter().collect(),
    });
    let mut events = transition_events(&previous, &status);
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
                reason: "Overridden",
                note: format!(
                    "pod {} was marked up-to-date before it became Ready; the rollout continues",
                    pod.describe(),
                ),
                pod: Some(pod.name.clone()),
            });
        }
        if cr.status.is_none() && !pod.controlled {
            events.push(PlannedEvent {
                warning: false,
                reason: "Adopted",
                note: format!(
                    "adopted pod {} as it is, without restarting it",
                    pod.describe(),
                ),
                pod: Some(pod.name.clone()),
            });
        }
    }
    Ok(Plan {
        template_hash,
        pods: observed,
        actions,
        summary,
        replacing,
        halted,
        spec_warnings,
        stalled,
        events,
        status,
        requeue_after,
    })
}

/// The id of the update domain an OSD belongs to: its key, or its host.
pub fn domain_id(key: &OsdKey, domain: UpdateDomain) -> String {
    match domain {
        UpdateDomain::Osd => key.to_string(),
        UpdateDomain::Host => key.host.clone(),
    }
}

fn halt_reason(unready: &[&ObservedPod], missing: &[OsdKey]) -> String {
    if let Some(pod) = unready.first() {
        format!("waiting for pod {} to become Ready", pod.describe(),)
    } else if let Some(key) = missing.first() {
        format!("waiting for OSD {key} to have a running pod")
    } else {
        "waiting for unavailable OSDs".to_owned()
    }
}

/// Events for state changes between the previous and the new status (so a steady state,
/// or a halt that persists, publishes nothing).
fn transition_events(previous: &CephOsdStatus, status: &CephOsdStatus) -> Vec<PlannedEvent> {
    let condition = |s: &CephOsdStatus, t: &str| {
        s.conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    };
    let mut events = Vec::new();
    let (before, after) = (condition(previous, "Stalled"), condition(status, "Stalled"));
    if let Some((state, _, message)) = &after {
        if state == "True" && before.as_ref().is_none_or(|b| b.0 != "True") {
            events.push(PlannedEvent {
                warning: true,
                reason: "Stalled",
                note: message.clone(),
                pod: None,
            });
        }
    }
    let (before, after) = (
        condition(previous, "Progressing"),
        condition(status, "Progressing"),
    );
    if let Some((_, reason, message)) = &after {
        let halted = matches!(reason.as_str(), "Halted" | "Paused");
        if halted
            && before
                .as_ref()
                .is_none_or(|b| (&b.1, &b.2) != (reason, message))
        {
            events.push(PlannedEvent {
                warning: false,
                reason: "Halted",
                note: message.clone(),
                pod: None,
            });
        }
    }
    events
}

fn delete(pod: &ObservedPod, reason: DeleteReason) -> Action {
    Action::Delete {
        name: pod.name.clone(),
        uid: pod.uid.clone(),
        key: pod.key.clone(),
        reason,
    }
}

/// The out-of-date pods of the first `count` update domains (in case-insensitive key order)
/// that are not unavailable already.
fn next_update_domains<'a>(
    out_of_date: &[&'a ObservedPod],
    domain: UpdateDomain,
    unavailable: &BTreeSet<String>,
    count: usize,
) -> Vec<&'a ObservedPod> {
    let mut by_key: BTreeMap<&OsdKey, &ObservedPod> = BTreeMap::new();
    for pod in out_of_date {
        if let Some(key) = &pod.key {
            by_key.insert(key, pod);
        }
    }
    // Hosts sort the same case-insensitive way keys do.
    let mut domains: BTreeMap<(String, String), Vec<&ObservedPod>> = BTreeMap::new();
    for (key, pod) in by_key {
        let id = domain_id(key, domain);
        if unavailable.contains(&id) {
            continue;
        }
        domains
            .entry((id.to_lowercase(), id))
            .or_default()
            .push(pod);
    }
    domains.into_values().take(count).flatten().collect()
}

/// Time facts classification needs.
struct Timing {
    now: Timestamp,
    min_ready: SignedDuration,
}

/// Classifies pods in list order (section 5 of the reference, plus our fixes).
fn classify(
    pods: &[Pod],
    template_hash: &TemplateHash,
    desired: &BTreeMap<OsdKey, DesiredOsd>,
    timing: &Timing,
) -> Vec<ObservedPod> {
    let mut seen = BTreeSet::new();
    pods.iter()
        .map(|pod| {
            let annotations = pod.metadata.annotations.as_ref();
            let annotation = |k: &str| annotations.and_then(|a| a.get(k)).map(String::as_str);
            let key = match (annotation(labels::HOST), annotation(labels::DATA)) {
                (Some(host), Some(data)) => Some(OsdKey::new(host, data)),
                _ => None,
            };
            let name = pod.name_any();
            let state = annotation(labels::POD_STATE).map(str::to_owned);
            let ready = ready_since(pod).is_some();
            let class = if pod.metadata.deletion_timestamp.is_some() {
                PodClass::Terminating
            } else {
                classify_live(
                    pod,
                    &name,
                    key.as_ref(),
                    &mut seen,
                    template_hash,
                    desired,
                    timing,
                )
            };
            // A Ready replacement still soaking for minReadySeconds.
            let soaking_since = (class == PodClass::Unready)
                .then(|| ready_since(pod))
                .flatten();
            ObservedPod {
                uid: pod.metadata.uid.clone(),
                name,
                key,
                class,
                ready,
                state,
                created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
                deleted: pod.metadata.deletion_timestamp.as_ref().map(|t| t.0),
                soaking_since,
                controlled: pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.controller == Some(true) && o.kind == "CephOSD"),
            }
        })
        .collect()
}

fn classify_live(
    pod: &Pod,
    name: &str,
    key: Option<&OsdKey>,
    seen: &mut BTreeSet<OsdKey>,
    template_hash: &TemplateHash,
    desired: &BTreeMap<OsdKey, DesiredOsd>,
    timing: &Timing,
) -> PodClass {
    let annotations = pod.metadata.annotations.as_ref();
    let annotation = |k: &str| {
        annotations
            .and_then(|a| a.get(k))
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    let (Some(key), Some(hash)) = (key, annotation(labels::TEMPLATE_HASH)) else {
        return PodClass::Invalid("it lacks the host, data or pod-template-hash annotation".into());
    };
    if !seen.insert(key.clone()) {
        return PodClass::Invalid(format!("another pod already runs OSD {key}"));
    }
    let prefix = key.name_prefix();
    if !name.starts_with(&prefix) {
        return PodClass::Invalid(format!("its name does not start with {prefix}"));
    }
    if let Some(phase) = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .filter(|p| matches!(*p, "Failed" | "Succeeded"))
    {
        return PodClass::Ended(phase.to_owned());
    }
    let devices_changed = desired.get(key).is_some_and(|osd| {
        osd.db.as_deref() != annotation(labels::DB) || osd.wal.as_deref() != annotation(labels::WAL)
    });
    if template_hash != hash || devices_changed {
        PodClass::OutOfDate
    } else if annotation(labels::POD_STATE) == Some(PodState::WaitForReady.as_str()) {
        let soaked = ready_since(pod).is_some_and(|since| {
            timing.min_ready.is_zero() || timing.now.duration_since(since) >= timing.min_ready
        });
        if soaked {
            PodClass::Ready
        } else {
            PodClass::Unready
        }
    } else {
        PodClass::UpToDate
    }
}

/// When the pod's `Ready` condition turned `True` (its creation time when the kubelet did not
/// say), or None while it is not Ready.
pub fn ready_since(pod: &Pod) -> Option<Timestamp> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?;
    condition
        .last_transition_time
        .as_ref()
        .or(pod.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
        .or(Some(Timestamp::UNIX_EPOCH))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
