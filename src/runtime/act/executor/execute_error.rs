//! What can go wrong while a plan's writes are carried out, and what each failure is called.

use crate::ceph::{osd_list, CephError, OsdId, Release};
use crate::plan::says::failure::Failure;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ExecuteError {
    #[error("failed to create pod {name} for OSD {key}: {source}")]
    Create {
        name: String,
        key: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to create pre-pull pod {name} on node {node}: {source}")]
    CreatePrePull {
        name: String,
        node: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to delete pod {name}: {source}")]
    Delete {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to delete ReplicaSet {name}: {source}")]
    DeleteReplicaSet {
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
    #[error("failed to take this CephOSD's ownerReference off pod {name}: {source}")]
    LetGo {
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
    #[error("failed to {what} PodDisruptionBudget {name}: {source}")]
    Budget {
        what: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("require_osd_release was raised to {release} but `ceph osd dump` shows {}", now.map_or_else(|| "none".to_owned(), |r| r.to_string()))]
    ReleaseNotRaised {
        release: Release,
        now: Option<Release>,
    },
    #[error(
        "osd.{} was not destroyed: Ceph's OSD map moved from epoch {asked_at} (where \
         safe-to-destroy passed) to {now}; Ceph is asked again",
        id.0
    )]
    EpochMoved { id: OsdId, asked_at: u64, now: u64 },
    #[error("osd.{} was destroyed but `ceph osd dump` does not show it destroyed", id.0)]
    DestroyNotConfirmed { id: OsdId },
    #[error("the plan needs Ceph (to {what}) but the operator has no Ceph configured")]
    NoCeph { what: &'static str },
    #[error("failed to {what} on {}: {source}", osd_list(ids))]
    Ceph {
        what: &'static str,
        ids: Vec<OsdId>,
        #[source]
        source: CephError,
    },
    #[error(
        "noout was set on {} but `ceph osd dump` shows it missing on {}: no pod is taken down",
        osd_list(asked),
        osd_list(missing)
    )]
    NooutNotSet {
        asked: Vec<OsdId>,
        missing: Vec<OsdId>,
    },
    #[error(
        "noout was cleared on {} but `ceph osd dump` still shows it on {}",
        osd_list(asked),
        osd_list(left)
    )]
    NooutNotCleared { asked: Vec<OsdId>, left: Vec<OsdId> },
    #[error(
        "another step opened on this Ceph cluster meanwhile: `ceph osd dump` shows noout on {}, \
         which the question before this step did not cover; the noout just set on {} was cleared \
         again and no pod is taken down (Ceph is asked again, about both)",
        osd_list(others),
        osd_list(set)
    )]
    StepsCrossed { set: Vec<OsdId>, others: Vec<OsdId> },
    #[error(
        "{} was marked {} but `ceph osd dump` does not show {} so",
        osd_list(asked),
        if *out { "out" } else { "in" },
        osd_list(left)
    )]
    MarkNotConfirmed {
        out: bool,
        asked: Vec<OsdId>,
        left: Vec<OsdId>,
    },
}

impl ExecuteError {
    /// Whether the write may have happened all the same: anything but a definite refusal
    /// (a 4xx other than 409 Conflict and 429 Too Many Requests) leaves it unknown.
    pub(crate) fn may_have_applied(&self) -> bool {
        let source = match self {
            Self::Create { source, .. }
            | Self::CreatePrePull { source, .. }
            | Self::Delete { source, .. }
            | Self::DeleteReplicaSet { source, .. }
            | Self::Patch { source, .. }
            | Self::LetGo { source, .. }
            | Self::Budget { source, .. }
            | Self::Status { source, .. } => source,
            Self::NoCeph { .. } => return false,
            Self::Ceph { .. }
            | Self::NooutNotSet { .. }
            | Self::NooutNotCleared { .. }
            | Self::StepsCrossed { .. }
            | Self::MarkNotConfirmed { .. }
            | Self::EpochMoved { .. }
            | Self::DestroyNotConfirmed { .. }
            | Self::ReleaseNotRaised { .. } => return true,
        };
        !matches!(source, kube::Error::Api(status)
            if (400..500).contains(&status.code) && status.code != 409 && status.code != 429)
    }

    /// What users read in the event and the condition: stable from one attempt to the next
    /// (no generated pod name), the API server's own words where it gave some.
    pub(crate) fn summary(&self) -> String {
        let (what, name, source) = match self {
            Self::Create { key, name, source } => {
                (format!("create the pod of OSD {key}"), name, source)
            }
            Self::CreatePrePull { node, name, source } => (
                format!("create the pre-pull pod of node {node}"),
                name,
                source,
            ),
            Self::Delete { name, source } => (format!("delete pod {name}"), name, source),
            Self::DeleteReplicaSet { name, source } => {
                (format!("delete ReplicaSet {name}"), name, source)
            }
            Self::Patch { name, source } => {
                (format!("set the pod-state of pod {name}"), name, source)
            }
            Self::LetGo { name, source } => (
                format!("take this CephOSD's ownerReference off pod {name}"),
                name,
                source,
            ),
            Self::Status { name, source } => {
                (format!("write the status of CephOSD {name}"), name, source)
            }
            Self::Budget { what, name, source } => {
                (format!("{what} PodDisruptionBudget {name}"), name, source)
            }
            Self::NoCeph { .. }
            | Self::Ceph { .. }
            | Self::NooutNotSet { .. }
            | Self::NooutNotCleared { .. }
            | Self::StepsCrossed { .. }
            | Self::MarkNotConfirmed { .. }
            | Self::EpochMoved { .. }
            | Self::DestroyNotConfirmed { .. }
            | Self::ReleaseNotRaised { .. } => return self.to_string(),
        };
        let why = match source {
            kube::Error::Api(status) => {
                let causes: Vec<String> = status
                    .details
                    .iter()
                    .flat_map(|d| &d.causes)
                    .map(|c| format!("{}: {}", c.field, c.message))
                    .collect();
                if causes.is_empty() {
                    status.message.replace(name.as_str(), "…")
                } else {
                    causes.join("; ")
                }
            }
            other => other.to_string(),
        };
        format!("cannot {what}: {why}")
    }

    /// What kind of call failed: Event and condition reason, metric label.
    pub(crate) fn category(&self) -> Failure {
        match self {
            Self::Create { .. } | Self::CreatePrePull { .. } => Failure::Create,
            Self::Delete { .. } | Self::DeleteReplicaSet { .. } => Failure::Delete,
            Self::Patch { .. } | Self::LetGo { .. } => Failure::Patch,
            Self::Status { .. } => Failure::Status,
            Self::Budget { .. } => Failure::Budget,
            Self::NoCeph { .. }
            | Self::Ceph { .. }
            | Self::MarkNotConfirmed { .. }
            | Self::EpochMoved { .. }
            | Self::DestroyNotConfirmed { .. }
            | Self::ReleaseNotRaised { .. } => Failure::Ceph,
            Self::NooutNotSet { .. } | Self::NooutNotCleared { .. } => Failure::NooutNotConfirmed,
            Self::StepsCrossed { .. } => Failure::StepsCrossed,
        }
    }
}
