//! What the next rollout will do, without doing it: the planner itself, run against a copy
//! of the CephOSD's pods in which every pod it creates is Ready at once and every pod it
//! deletes is gone, until it has nothing more to do. The batches it starts are the rollout's
//! steps in order; what it holds or leaves at the end is what the rollout leaves.

use crate::crd::osd::CountingSuffix;
use crate::crd::CephOsd;
use crate::labels;
use crate::offline::failure_domains::RecordedDomains;
use crate::plan::says::actions::Action;
use crate::plan::{plan, Hold, Observed};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The rollout as the planner would carry it out from here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RolloutPreview {
    /// The update domains under way now (finishing first).
    pub(crate) under_way: Vec<String>,
    /// The update domains each step starts, in order.
    pub(crate) batches: Vec<Vec<String>>,
    /// The out-of-date update domains left as they are, and why.
    pub(crate) held: BTreeMap<String, String>,
    /// Why the rollout stops where it stops, when it does not finish.
    pub(crate) stops: Option<String>,
    /// What the rollout leaves alone: pods of other controllers, OSDs the spec is ambiguous
    /// about or an older CephOSD claims.
    pub(crate) skipped: Vec<String>,
    /// With `updateDomain: Topology`: each failure domain's hosts, as recorded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) failure_domains: BTreeMap<String, Vec<String>>,
    /// With `updateDomain: Topology`: the hosts in no known failure domain, and why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) unplaced: BTreeMap<String, String>,
}

/// Runs the planner on `cr` (its status as it is) and copies of `pods` and `replica_sets`
/// until it has nothing more to do. Pods not Ready now are taken to become Ready. With
/// `updateDomain: Topology` the hosts are in the failure domains `status.failureDomains`
/// records; while one is not placed there, no step starts, and the preview says why.
pub(crate) fn preview_rollout(
    cr: &CephOsd,
    pods: &[Pod],
    replica_sets: &[ReplicaSet],
    now: Timestamp,
) -> RolloutPreview {
    let mut pods: Vec<Pod> = pods.to_vec();
    let mut replica_sets = replica_sets.to_vec();
    let mut cr = cr.clone();
    let long_ago = now - SignedDuration::from_hours(24);
    // Pods terminating now are gone by the time the rollout goes on.
    pods.retain(|p| p.metadata.deletion_timestamp.is_none());
    for pod in &mut pods {
        set_ready(pod, long_ago);
    }
    let recorded = RecordedDomains::of(&cr);
    let mut preview = RolloutPreview {
        under_way: (cr.status.as_ref())
            .map(|s| s.current_update.clone())
            .unwrap_or_default(),
        failure_domains: recorded.buckets.clone(),
        unplaced: recorded.unplaced.clone(),
        ..RolloutPreview::default()
    };
    let topology = recorded.view();
    let mut suffixes = CountingSuffix::default();
    let rounds = 4 * pods.len().max(replica_sets.len()) + 20;
    for _ in 0..rounds {
        let observed = Observed {
            topology: topology.clone(),
            ..Observed::new(&pods, &replica_sets)
        };
        let planned = plan(&cr, &observed, &mut suffixes, now);
        if !planned.starting.is_empty() {
            preview.batches.push(planned.starting.clone());
        }
        preview.held = (planned.held.iter())
            .map(|(domain, hold)| (domain.clone(), hold_words(*hold).to_owned()))
            .collect();
        preview.stops.clone_from(&planned.halted);
        preview.skipped = (planned.status.foreign_pods.iter())
            .map(|p| format!("pod {p}: controlled by another controller"))
            .chain(planned.spec_problems.iter().map(|p| p.message.clone()))
            .collect();
        let idle = planned.actions.is_empty();
        cr.status = Some(planned.status);
        if idle {
            break;
        }
        apply(&planned.actions, &mut pods, &mut replica_sets, long_ago);
    }
    if let Some(why) = recorded.unknown {
        preview.stops = Some(why);
    }
    preview
}

/// Why a held domain stays, in a word or two.
pub(crate) fn hold_words(hold: Hold) -> &'static str {
    match hold {
        Hold::Partition => "partition",
        Hold::Canary => "canary: waits for promote",
    }
}

/// The cluster after `actions`, as if each were carried out and had its effect at once.
pub(crate) fn apply(
    actions: &[Action],
    pods: &mut Vec<Pod>,
    replica_sets: &mut Vec<ReplicaSet>,
    at: Timestamp,
) {
    for action in actions {
        match action {
            Action::Delete { name, .. } | Action::DeletePrePull { name, .. } => {
                pods.retain(|p| p.name_any() != *name);
            }
            Action::DeleteReplicaSet { name, .. } => {
                let uid = (replica_sets.iter())
                    .find(|rs| rs.name_any() == *name)
                    .and_then(ResourceExt::uid);
                replica_sets.retain(|rs| rs.name_any() != *name);
                pods.retain(|p| {
                    !p.owner_references()
                        .iter()
                        .any(|o| Some(&o.uid) == uid.as_ref())
                });
            }
            // A preview's pulls are instant.
            Action::Create { pod, .. } | Action::CreatePrePull { pod, .. } => {
                let mut pod = (**pod).clone();
                pod.metadata.uid = Some(format!("preview-{}", pod.name_any()));
                pod.metadata.creation_timestamp = Some(Time(at));
                set_ready(&mut pod, at);
                pods.push(pod);
            }
            Action::PatchState { name, state, .. } => {
                if let Some(pod) = pods.iter_mut().find(|p| p.name_any() == *name) {
                    pod.annotations_mut()
                        .insert(labels::POD_STATE.to_owned(), state.as_str().to_owned());
                }
            }
            Action::LabelDomain { name, value } => {
                if let Some(pod) = pods.iter_mut().find(|p| p.name_any() == *name) {
                    pod.labels_mut()
                        .insert(labels::UPDATE_DOMAIN.to_owned(), value.clone());
                }
            }
            Action::RecordCephStep
            | Action::SetNoout { .. }
            | Action::ClearNoout { .. }
            | Action::MarkOut { .. }
            | Action::MarkIn { .. }
            | Action::DestroyOsd { .. }
            | Action::RequireOsdRelease { .. }
            | Action::LetGo { .. }
            | Action::WriteBudget { .. }
            | Action::DeleteBudget { .. } => {}
        }
    }
}

/// Marks `pod` running and Ready since `since`.
pub(crate) fn set_ready(pod: &mut Pod, since: Timestamp) {
    let status = pod.status.get_or_insert_with(PodStatus::default);
    status.phase = Some("Running".to_owned());
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != "Ready");
    conditions.push(PodCondition {
        type_: "Ready".to_owned(),
        status: "True".to_owned(),
        last_transition_time: Some(Time(since)),
        ..PodCondition::default()
    });
}
