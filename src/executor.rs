//! The executor: applies a plan through the API — actions in order (stopping at the first
//! failure), one Event per applied action, then the status if it changed. It decides nothing;
//! the next reconcile re-plans from fresh observations.

use crate::crd::{CephOsd, CephOsdStatus};
use crate::events::{describe, event_for};
use crate::labels;
use crate::plan::{Action, PlannedEvent};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Resource, ResourceExt};
use serde_json::json;
use tracing::{info, warn};

/// Field manager of our server-side-applied status.
pub const FIELD_MANAGER: &str = "ceph-osd-operator";

#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error("failed to create pod {name} for OSD {key}: {source}")]
    Create {
        name: String,
        key: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to delete pod {name}: {source}")]
    Delete {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to set pod-state of pod {name}: {source}")]
    Patch {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to write the status of CephOSD {name}: {source}")]
    Status {
        name: String,
        #[source]
        source: kube::Error,
    },
}

impl ExecuteError {
    /// Short category: Event reason and metric label.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Create { .. } => "CreateFailed",
            Self::Delete { .. } => "DeleteFailed",
            Self::Patch { .. } => "PatchFailed",
            Self::Status { .. } => "StatusFailed",
        }
    }
}

/// Talks to the API on behalf of one CephOSD.
pub struct Executor<'a> {
    pub pods: Api<Pod>,
    pub crs: Api<CephOsd>,
    pub recorder: &'a Recorder,
    pub cr: &'a CephOsd,
}

impl Executor<'_> {
    /// Applies `actions` in order, publishing an Event for each; stops at the first failure.
    pub async fn apply_actions(&self, actions: &[Action]) -> Result<(), ExecuteError> {
        for action in actions {
            if apply(&self.pods, action).await? {
                if let Some(event) = event_for(action) {
                    self.publish(&event).await;
                }
            }
        }
        Ok(())
    }

    /// Publishes an Event on the CephOSD; failures are logged, never fatal.
    pub async fn publish(&self, event: &PlannedEvent) {
        let reference: ObjectReference = self.cr.object_ref(&());
        let event = Event {
            type_: if event.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: event.reason.to_owned(),
            note: Some(event.note.clone()),
            action: event.reason.to_owned(),
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

    /// Writes `status` with server-side apply, only when it differs from the CR's.
    pub async fn write_status(&self, status: &CephOsdStatus) -> Result<bool, ExecuteError> {
        if self.cr.status.as_ref() == Some(status) {
            return Ok(false);
        }
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
        Ok(true)
    }
}

/// Applies one action; false when there was nothing to do (a delete that found nothing).
async fn apply(pods: &Api<Pod>, action: &Action) -> Result<bool, ExecuteError> {
    match action {
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
        Action::Delete {
            name, uid, reason, ..
        } => {
            // The uid precondition makes sure we delete the pod we planned for, never a
            // newer pod that happens to reuse the name.
            let params = DeleteParams {
                preconditions: uid.as_ref().map(|uid| Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match pods.delete(name, &params).await {
                Ok(_) => {
                    info!(pod = %name, reason = %describe(reason), "deleted pod");
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
                Err(source) => Err(ExecuteError::Delete {
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
    }
}
