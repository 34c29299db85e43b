//! The executor: applies a plan's actions through the API, in order, and stops at the first
//! failure. It decides nothing; the next reconcile re-plans from fresh observations.

use crate::labels;
use crate::plan::{Action, DeleteReason};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;
use tracing::info;

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
}

impl ExecuteError {
    /// Short category: Event reason and metric label.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Create { .. } => "CreateFailed",
            Self::Delete { .. } => "DeleteFailed",
            Self::Patch { .. } => "PatchFailed",
        }
    }
}

/// What happened to one action, for events and logs.
#[derive(Clone, Debug)]
pub struct Applied {
    pub action: Action,
    /// False when the target was already gone (a delete that found nothing).
    pub changed: bool,
}

/// Applies `actions` in order; returns what was applied, or the first error.
pub async fn execute(pods: &Api<Pod>, actions: &[Action]) -> Result<Vec<Applied>, ExecuteError> {
    let mut applied = Vec::with_capacity(actions.len());
    for action in actions {
        let changed = apply(pods, action).await?;
        applied.push(Applied {
            action: action.clone(),
            changed,
        });
    }
    Ok(applied)
}

async fn apply(pods: &Api<Pod>, action: &Action) -> Result<bool, ExecuteError> {
    match action {
        Action::Create { key, pod } => {
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

/// Human wording of a delete reason (logs and events).
pub fn describe(reason: &DeleteReason) -> String {
    match reason {
        DeleteReason::Invalid(why) => format!("invalid: {why}"),
        DeleteReason::Ended(phase) => format!("pod ended in phase {phase}"),
        DeleteReason::Superfluous => "its OSD is no longer in the CephOSD".to_owned(),
        DeleteReason::Replace => "rolling update: out of date".to_owned(),
    }
}
