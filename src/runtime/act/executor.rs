//! The executor: applies a plan through the API — runs of one kind of action in plan order,
//! each concurrently with a slow-start window (nothing more started after the first failure),
//! the Events of the applied actions, then the status if it changed. It decides nothing; the next reconcile re-plans from fresh
//! observations.

use crate::ceph::CephClient;
use crate::crd::{CephOsd, CephOsdStatus};
use crate::labels;
use crate::plan::phases::report::status::failed_status;
use crate::plan::says::actions::Action;
use crate::plan::says::events::EventReason;
use crate::plan::says::events::PlannedEvent;
use crate::plan::says::events::{describe, event_for, fold_mass_events, newly_stalled};
use crate::plan::Plan;
use futures::stream::FuturesUnordered;
use futures::{stream, StreamExt};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Resource, ResourceExt};
use serde_json::json;
use tracing::{info, warn};

mod execute_error;
mod osd_writes;
pub(crate) use execute_error::ExecuteError;
use osd_writes::{destroy, mark, noout, open_noout, raise_release};

/// Field manager of our server-side-applied status.
pub(crate) const FIELD_MANAGER: &str = "ceph-osd-operator";

/// What carrying out a plan did.
#[derive(Default)]
pub(crate) struct Outcome {
    /// The status written, if one was.
    pub(crate) status: Option<CephOsdStatus>,
    /// The write that failed, if one did (the plan's later writes were not made).
    pub(crate) failed: Option<ExecuteError>,
}

/// Talks to the API on behalf of one CephOSD.
pub(crate) struct Executor<'a> {
    pub pods: Api<Pod>,
    pub budgets: Api<PodDisruptionBudget>,
    pub replica_sets: Api<ReplicaSet>,
    pub crs: Api<CephOsd>,
    pub recorder: &'a Recorder,
    pub cr: &'a CephOsd,
    /// Ceph, when the operator has it configured.
    pub ceph: Option<&'a dyn CephClient>,
}

/// The most writes in flight at once for one CephOSD.
pub(crate) const MAX_CONCURRENT_WRITES: usize = 64;

impl Executor<'_> {
    /// Applies `actions`, then publishes the Events of the applied ones (a mass of one reason
    /// folded into one, see `fold_mass_events`). Runs of one kind of action go in plan order,
    /// each concurrently: at most one more in flight than have succeeded so far (slow start:
    /// 1, 2, 4, … per round trip) and at most `MAX_CONCURRENT_WRITES`; after the first failure
    /// nothing more is started, so a failure that hits every write costs one request, not a
    /// thousand. `written` is told of every action that reached the API or may have (see
    /// [`ExecuteError::may_have_applied`]).
    /// `status` is the planned status, written by `RecordCephStep`.
    pub(crate) async fn apply_actions(
        &self,
        actions: &[Action],
        status: &CephOsdStatus,
        written: &(dyn Fn(&Action) + Sync),
    ) -> Result<(), ExecuteError> {
        let mut events = Vec::new();
        let mut outcome = Ok(());
        for run in runs(actions) {
            outcome = self
                .apply_run(&actions[run], status, written, &mut events)
                .await;
            if outcome.is_err() {
                break;
            }
        }
        // The events of the applied writes, once the writes are out: they never hold up the
        // next write.
        stream::iter(&fold_mass_events(events))
            .for_each_concurrent(MAX_CONCURRENT_WRITES, |event| self.publish(event))
            .await;
        outcome
    }

    /// Applies `run` (actions of one kind) in a slow-start window; see `apply_actions`.
    async fn apply_run(
        &self,
        run: &[Action],
        status: &CephOsdStatus,
        written: &(dyn Fn(&Action) + Sync),
        events: &mut Vec<PlannedEvent>,
    ) -> Result<(), ExecuteError> {
        let mut waiting = run.iter();
        let mut in_flight = FuturesUnordered::new();
        let (mut succeeded, mut outcome) = (0, Ok(()));
        loop {
            while outcome.is_ok() && in_flight.len() < (succeeded + 1).min(MAX_CONCURRENT_WRITES) {
                let Some(action) = waiting.next() else { break };
                in_flight.push(async move {
                    let applied = apply(self, action, status).await;
                    if applied
                        .as_ref()
                        .map_or_else(ExecuteError::may_have_applied, |_| true)
                    {
                        written(action);
                    }
                    applied.map(|applied| event_for(action).filter(|_| applied))
                });
            }
            match in_flight.next().await {
                None => return outcome,
                Some(Ok(event)) => {
                    succeeded += 1;
                    events.extend(event);
                }
                Some(Err(error)) => {
                    if outcome.is_ok() {
                        outcome = Err(error);
                    }
                }
            }
        }
    }

    /// Carries out `plan`: its actions, its events, then its status. A failed write stops
    /// the actions and is told where users look: a Warning event and a `ReconcileFailed`
    /// condition on the status the plan computed (gone with the next successful reconcile).
    pub(crate) async fn carry_out(
        &self,
        plan: &Plan,
        now: Timestamp,
        written: &(dyn Fn(&Action) + Sync),
    ) -> Outcome {
        let applied = self
            .apply_actions(&plan.actions, &plan.status, written)
            .await;
        for event in &plan.events {
            self.publish(event).await;
        }
        // `RecordCephStep` comes first: any later failure finds the planned status written.
        let recorded = matches!(plan.actions.first(), Some(Action::RecordCephStep))
            && !matches!(applied, Err(ExecuteError::Status { .. }));
        let error = match applied {
            Err(error) if recorded => {
                let mut outcome = self.report_failure(plan, now, error).await;
                outcome.status.get_or_insert_with(|| plan.status.clone());
                return outcome;
            }
            Err(error) => error,
            Ok(()) if recorded => {
                return Outcome {
                    status: Some(plan.status.clone()),
                    failed: None,
                }
            }
            Ok(()) if !plan.status_changed => return Outcome::default(),
            Ok(()) => match self.write_status(&plan.status).await {
                Ok(()) => {
                    return Outcome {
                        status: Some(plan.status.clone()),
                        failed: None,
                    }
                }
                Err(error) => error,
            },
        };
        self.report_failure(plan, now, error).await
    }

    /// Tells a failed write where users look: a Warning event, and the planned status with a
    /// `ReconcileFailed` condition (unless the CephOSD already shows exactly that).
    async fn report_failure(&self, plan: &Plan, now: Timestamp, error: ExecuteError) -> Outcome {
        let (failure, message) = (error.category(), error.summary());
        self.publish(&PlannedEvent {
            warning: true,
            reason: EventReason::Failed(failure),
            note: message.clone(),
            pod: None,
        })
        .await;
        let previous = self.cr.status.clone().unwrap_or_default();
        let mut status = None;
        let deadline = self.cr.spec.progress_deadline();
        if let Some(failed) =
            failed_status(&plan.status, &previous, now, failure, &message, deadline)
        {
            if let Some(event) = newly_stalled(&plan.status, &failed) {
                self.publish(&event).await;
            }
            match self.write_status(&failed).await {
                Ok(()) => status = Some(failed),
                Err(status_error) => {
                    warn!(cephosd = %self.cr.object_key(), error = %status_error, "could not report the failure in the status");
                }
            }
        }
        Outcome {
            status,
            failed: Some(error),
        }
    }

    /// Publishes an Event on the CephOSD; failures are logged, never fatal.
    pub(crate) async fn publish(&self, event: &PlannedEvent) {
        let reference: ObjectReference = self.cr.object_ref(&());
        let event = Event {
            type_: if event.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: event.reason.as_str().to_owned(),
            note: Some(event.note.clone()),
            action: action_of(event),
            // The pod as `related` object also keeps the recorder from folding events about
            // different pods into one series.
            secondary: event.pod.as_ref().map(|name| ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(name.clone()),
                namespace: self.cr.namespace(),
                ..ObjectReference::default()
            }),
        };
        if let Err(error) = self.recorder.publish(&event, &reference).await {
            warn!(%error, reason = %event.reason, "failed to publish event");
        }
    }

    /// Writes `status` with server-side apply.
    pub(crate) async fn write_status(&self, status: &CephOsdStatus) -> Result<(), ExecuteError> {
        let name = self.cr.name_any();
        let patch = json!({
            "apiVersion": CephOsd::api_version(&()),
            "kind": CephOsd::kind(&()),
            "status": status,
        });
        self.crs
            .patch_status(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await
            .map_err(|source| ExecuteError::Status { name, source })?;
        Ok(())
    }
}

/// The runs of one kind of action in `actions`, in order.
fn runs(actions: &[Action]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < actions.len() {
        let kind = std::mem::discriminant(&actions[start]);
        let end = actions[start..]
            .iter()
            .position(|a| std::mem::discriminant(a) != kind)
            .map_or(actions.len(), |n| start + n);
        out.push(start..end);
        start = end;
    }
    out
}

/// Longest `action` the events API takes.
const MAX_ACTION_LEN: usize = 128;

/// The event's `action`: its note, cut to what the API takes. The recorder folds events of
/// one (type, reason, action, regarding, related) into a series that keeps the first note, so
/// the action carries the note: the same note again is a series, another note a new event.
fn action_of(event: &PlannedEvent) -> String {
    if event.note.is_empty() {
        return event.reason.as_str().to_owned();
    }
    let mut end = event.note.len().min(MAX_ACTION_LEN);
    while !event.note.is_char_boundary(end) {
        end -= 1;
    }
    event.note[..end].to_owned()
}

/// Deletes only the object planned for (the uid precondition): never a newer one that reuses
/// the name.
fn delete_params(uid: Option<&String>) -> DeleteParams {
    DeleteParams {
        preconditions: uid.map(|uid| Preconditions {
            uid: Some(uid.clone()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    }
}

/// Applies one action; false when there was nothing to do (a delete that found nothing).
async fn apply(
    executor: &Executor<'_>,
    action: &Action,
    status: &CephOsdStatus,
) -> Result<bool, ExecuteError> {
    let pods = &executor.pods;
    match action {
        Action::RecordCephStep => {
            executor.write_status(status).await?;
            info!(cephosd = %executor.cr.object_key(), "recorded the Ceph step in the status");
            Ok(true)
        }
        Action::SetNoout { ids, covered } => open_noout((executor.ceph, executor.cr), ids, covered)
            .await
            .map(|()| true),
        Action::ClearNoout { ids } => noout((executor.ceph, executor.cr), ids, false)
            .await
            .map(|_| true),
        Action::MarkOut { ids } => mark((executor.ceph, executor.cr), ids, true)
            .await
            .map(|()| true),
        Action::MarkIn { ids } => mark((executor.ceph, executor.cr), ids, false)
            .await
            .map(|()| true),
        Action::DestroyOsd { id, epoch } => destroy((executor.ceph, executor.cr), *id, *epoch)
            .await
            .map(|()| true),
        Action::RequireOsdRelease { release } => {
            raise_release((executor.ceph, executor.cr), *release)
                .await
                .map(|()| true)
        }
        Action::Create { key, pod, .. } => {
            let name = pod.metadata.name.clone().unwrap_or_default();
            pods.create(&PostParams::default(), pod)
                .await
                .map_err(|source| ExecuteError::Create {
                    name: name.clone(),
                    key: key.to_string(),
                    source,
                })?;
            info!(pod = %name, osd = %key, "created pod");
            Ok(true)
        }
        Action::CreatePrePull { node, pod } => create_pre_pull(pods, node, pod).await,
        Action::DeletePrePull { name, uid } => delete_pre_pull(pods, name, uid.as_ref()).await,
        Action::Delete {
            name, uid, reason, ..
        } => match pods.delete(name, &delete_params(uid.as_ref())).await {
            Ok(_) => {
                info!(pod = %name, reason = %describe(reason), "deleted pod");
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(source) => Err(ExecuteError::Delete {
                name: name.clone(),
                source,
            }),
        },
        Action::DeleteReplicaSet {
            name, uid, reason, ..
        } => {
            // Foreground: the ReplicaSet stays (creating nothing) until its pod is gone.
            let params = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Foreground),
                ..delete_params(uid.as_ref())
            };
            match executor.replica_sets.delete(name, &params).await {
                Ok(_) => {
                    info!(replicaset = %name, reason = %describe(reason), "deleted ReplicaSet");
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
                Err(source) => Err(ExecuteError::DeleteReplicaSet {
                    name: name.clone(),
                    source,
                }),
            }
        }
        Action::PatchState { name, state, .. } => {
            let patch = json!({"metadata": {"annotations": {labels::POD_STATE: state.as_str()}}});
            pods.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|source| ExecuteError::Patch {
                    name: name.clone(),
                    source,
                })?;
            info!(pod = %name, state = %state, "set pod-state");
            Ok(true)
        }
        Action::LabelDomain { name, value } => label_domain(pods, name, value).await,
        Action::LetGo {
            name,
            uid,
            owner_uid,
        } => let_go(pods, name, uid.as_deref(), owner_uid).await,
        Action::WriteBudget {
            budget,
            exists,
            resource_version,
        } => write_budget(executor, budget, *exists, resource_version.as_deref()).await,
        Action::DeleteBudget { name, uid } => delete_budget(executor, name, uid.as_ref()).await,
    }
}

/// Creates a pre-pull pod (one that exists already: a write the cache has yet to show).
async fn create_pre_pull(pods: &Api<Pod>, node: &str, pod: &Pod) -> Result<bool, ExecuteError> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    match pods.create(&PostParams::default(), pod).await {
        Ok(_) => {
            info!(pod = %name, node = %node, "created pre-pull pod");
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(source) => Err(ExecuteError::CreatePrePull {
            name,
            node: node.to_owned(),
            source,
        }),
    }
}

/// Deletes a pre-pull pod (the one with `uid`; one gone already needs nothing).
async fn delete_pre_pull(
    pods: &Api<Pod>,
    name: &str,
    uid: Option<&String>,
) -> Result<bool, ExecuteError> {
    match pods.delete(name, &delete_params(uid)).await {
        Ok(_) => {
            info!(pod = %name, "deleted pre-pull pod");
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(source) => Err(ExecuteError::Delete {
            name: name.to_owned(),
            source,
        }),
    }
}

/// Sets a pod's update-domain label (a pod gone meanwhile needs none).
async fn label_domain(pods: &Api<Pod>, name: &str, value: &str) -> Result<bool, ExecuteError> {
    let patch = json!({"metadata": {"labels": {labels::UPDATE_DOMAIN: value}}});
    match pods
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(source) => Err(ExecuteError::Patch {
            name: name.to_owned(),
            source,
        }),
    }
}

/// Takes the ownerReference to `owner_uid` off pod `name` (the one with `uid`, when given:
/// a newer namesake is not touched), as the garbage collector orphans a dependent: a
/// strategic merge patch deleting that one reference. A pod gone needs nothing.
async fn let_go(
    pods: &Api<Pod>,
    name: &str,
    uid: Option<&str>,
    owner_uid: &str,
) -> Result<bool, ExecuteError> {
    let mut metadata = json!({"ownerReferences": [{"$patch": "delete", "uid": owner_uid}]});
    if let Some(uid) = uid {
        metadata["uid"] = json!(uid);
    }
    let patch = json!({ "metadata": metadata });
    match pods
        .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
    {
        Ok(_) => {
            info!(pod = %name, "let go of the pod: its OSD keeps running without this CephOSD");
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(source) => Err(ExecuteError::LetGo {
            name: name.to_owned(),
            source,
        }),
    }
}

/// Deletes the PodDisruptionBudget (the one with `uid`, when given).
async fn delete_budget(
    executor: &Executor<'_>,
    name: &str,
    uid: Option<&String>,
) -> Result<bool, ExecuteError> {
    match executor.budgets.delete(name, &delete_params(uid)).await {
        Ok(_) => {
            info!(budget = %name, "deleted PodDisruptionBudget");
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(source) => Err(ExecuteError::Budget {
            what: "delete",
            name: name.to_owned(),
            source,
        }),
    }
}

/// Creates the PodDisruptionBudget, or writes its labels, owner and spec (only if still at
/// `resource_version`, when given: a reservation).
async fn write_budget(
    executor: &Executor<'_>,
    budget: &PodDisruptionBudget,
    exists: bool,
    resource_version: Option<&str>,
) -> Result<bool, ExecuteError> {
    let name = budget.metadata.name.clone().unwrap_or_default();
    let failed = |what| {
        let name = name.clone();
        move |source| ExecuteError::Budget { what, name, source }
    };
    if !exists {
        executor
            .budgets
            .create(&PostParams::default(), budget)
            .await
            .map_err(failed("create"))?;
        info!(budget = %name, "created PodDisruptionBudget");
        return Ok(true);
    }
    let mut metadata = json!({
        "labels": budget.metadata.labels,
        "ownerReferences": budget.metadata.owner_references,
    });
    if let Some(version) = resource_version {
        metadata["resourceVersion"] = json!(version);
    }
    let patch = json!({"metadata": metadata, "spec": budget.spec});
    executor
        .budgets
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(failed(if resource_version.is_some() {
            "reserve update domains in"
        } else {
            "update"
        }))?;
    info!(budget = %name, reserved = resource_version.is_some(), "wrote PodDisruptionBudget");
    Ok(true)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod glue_tests;
