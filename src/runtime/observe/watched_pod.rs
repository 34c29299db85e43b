//! What the pod watch decodes of a pod: its metadata without the managed fields; of its spec
//! what binds it to its disk (`pod_record`: the node, the hostname node affinity, the data
//! device recorded in the first container's env) and its containers' names and images; of
//! its status the phase and conditions, and for an image pre-pull pod its containers' names
//! and images and their states (what its pull came to: every container started is a pull
//! done, which the planner can only tell knowing how many containers there are).
//! The rest of the spec, the managed fields and the rest of the status are skipped while
//! decoding, never allocated: at 10,000 OSDs the watch decodes every write the scheduler and
//! the kubelets make to every pod.

use crate::pod::pod_record::DATA_ENV;
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerState, ContainerStatus, EnvVar, Pod, PodCondition, PodSpec,
    PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::runtime::watcher;
use kube::Resource;
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A pod as the watch decodes it; [`WatchedPod::into_pod`] makes the `Pod` the cache keeps.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct WatchedPod {
    #[serde(deserialize_with = "metadata_without_managed_fields")]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<WatchedSpec>,
    #[serde(default)]
    status: Option<WatchedStatus>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WatchedSpec {
    #[serde(default)]
    node_name: Option<String>,
    #[serde(default)]
    affinity: Option<Affinity>,
    #[serde(default, deserialize_with = "watched_containers")]
    containers: WatchedContainers,
}

/// Of the containers: the data device the first one's env records (if a plain value), and
/// each one's name and image.
#[derive(Clone, Debug, Default)]
struct WatchedContainers {
    data: Option<String>,
    named: Vec<NamedContainer>,
}

/// The first container, as far as `watched_containers` reads it.
#[derive(Deserialize)]
struct FirstContainer {
    #[serde(default)]
    name: String,
    #[serde(default)]
    image: Option<String>,
    #[serde(default)]
    env: Vec<EnvEntry>,
}

/// A container's name and image.
#[derive(Clone, Debug, Deserialize)]
struct NamedContainer {
    #[serde(default)]
    name: String,
    #[serde(default)]
    image: Option<String>,
}

#[derive(Deserialize)]
struct EnvEntry {
    name: String,
    #[serde(default)]
    value: Option<String>,
}

/// The plain value of `OSD_DEVICE` in the first container, and every container's name and
/// image; the rest of each container is skipped.
fn watched_containers<'de, D>(deserializer: D) -> Result<WatchedContainers, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Containers;
    impl<'de> serde::de::Visitor<'de> for Containers {
        type Value = WatchedContainers;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of containers")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let Some(first) = seq.next_element::<FirstContainer>()? else {
                return Ok(WatchedContainers::default());
            };
            let data = (first.env.into_iter())
                .find(|e| e.name == DATA_ENV)
                .and_then(|e| e.value);
            let mut named = vec![NamedContainer {
                name: first.name,
                image: first.image,
            }];
            while let Some(next) = seq.next_element::<NamedContainer>()? {
                named.push(next);
            }
            Ok(WatchedContainers { data, named })
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(WatchedContainers::default())
        }
    }
    deserializer.deserialize_any(Containers)
}

#[derive(Clone, Debug, Default, Deserialize)]
struct WatchedStatus {
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    conditions: Option<Vec<PodCondition>>,
    #[serde(default, rename = "containerStatuses")]
    container_statuses: Option<Vec<WatchedContainerStatus>>,
    #[serde(default, rename = "initContainerStatuses")]
    init_container_statuses: Option<Vec<WatchedContainerStatus>>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// A container's name, image and states (kept for pre-pull pods, and for OSD pods that
/// prepare a new disk: whether their prepare failed).
#[derive(Clone, Debug, Deserialize)]
struct WatchedContainerStatus {
    name: String,
    #[serde(default)]
    image: String,
    #[serde(default)]
    state: Option<ContainerState>,
    #[serde(default, rename = "lastState")]
    last_state: Option<ContainerState>,
}

impl WatchedContainerStatus {
    fn into_status(self) -> ContainerStatus {
        ContainerStatus {
            name: self.name,
            image: self.image,
            state: self.state,
            last_state: self.last_state,
            ..ContainerStatus::default()
        }
    }
}

/// Every field of `ObjectMeta` but `managedFields` (which serde then skips unread).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetadataFields {
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    creation_timestamp: Option<Time>,
    #[serde(default)]
    deletion_grace_period_seconds: Option<i64>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
    #[serde(default)]
    generate_name: Option<String>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    owner_references: Option<Vec<OwnerReference>>,
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    self_link: Option<String>,
    #[serde(default)]
    uid: Option<String>,
}

fn metadata_without_managed_fields<'de, D>(deserializer: D) -> Result<ObjectMeta, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let m = MetadataFields::deserialize(deserializer)?;
    Ok(ObjectMeta {
        annotations: m.annotations,
        creation_timestamp: m.creation_timestamp,
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        deletion_timestamp: m.deletion_timestamp,
        finalizers: m.finalizers,
        generate_name: m.generate_name,
        generation: m.generation,
        labels: m.labels,
        managed_fields: None,
        name: m.name,
        namespace: m.namespace,
        owner_references: m.owner_references,
        resource_version: m.resource_version,
        self_link: m.self_link,
        uid: m.uid,
    })
}

impl WatchedPod {
    /// The pod the cache keeps: metadata, phase, and of the conditions only Ready (True) and
    /// PodScheduled (False), without probe times; an OSD pod's data device (as its first
    /// container's env); a pre-pull pod's containers (names and images) and their states; an
    /// OSD pod that prepares a new disk: its containers' states, its reason and message.
    pub(crate) fn into_pod(self) -> Pod {
        let pre_pull = (self.metadata.labels.as_ref())
            .is_some_and(|l| l.get(crate::labels::PRE_PULL).is_some_and(|v| v == "true"));
        let prepares = (self.metadata.annotations.as_ref())
            .is_some_and(|a| a.contains_key(crate::labels::PREPARE_OSD_ID));
        let states = |all: Option<Vec<WatchedContainerStatus>>| {
            all.map(|all| {
                all.into_iter()
                    .map(WatchedContainerStatus::into_status)
                    .collect()
            })
        };
        let status = self.status.map(|status| PodStatus {
            container_statuses: states(status.container_statuses.filter(|_| pre_pull || prepares)),
            init_container_statuses: states(status.init_container_statuses.filter(|_| prepares)),
            reason: status.reason.filter(|_| prepares),
            message: status.message.filter(|_| prepares),
            phase: status.phase,
            conditions: status.conditions.map(|conditions| {
                conditions
                    .into_iter()
                    .filter(|c| {
                        matches!(
                            (c.type_.as_str(), c.status.as_str()),
                            ("Ready", "True") | ("PodScheduled", "False")
                        )
                    })
                    .map(|c| PodCondition {
                        last_probe_time: None,
                        observed_generation: None,
                        ..c
                    })
                    .collect()
            }),
            ..PodStatus::default()
        });
        let spec = self.spec.map(|spec| {
            let WatchedContainers { data, named } = spec.containers;
            let containers = if pre_pull {
                (named.into_iter())
                    .map(|c| Container {
                        name: c.name,
                        image: c.image,
                        ..Container::default()
                    })
                    .collect()
            } else {
                (data.into_iter())
                    .map(|data| Container {
                        env: Some(vec![EnvVar {
                            name: DATA_ENV.to_owned(),
                            value: Some(data),
                            value_from: None,
                        }]),
                        ..Container::default()
                    })
                    .collect()
            };
            PodSpec {
                node_name: spec.node_name,
                affinity: spec.affinity,
                containers,
                ..PodSpec::default()
            }
        });
        Pod {
            metadata: self.metadata,
            spec,
            status,
        }
    }
}

/// A watch event of [`WatchedPod`]s as one of the `Pod`s the cache keeps.
pub(crate) fn into_pod_event(event: watcher::Event<WatchedPod>) -> watcher::Event<Pod> {
    match event {
        watcher::Event::Apply(pod) => watcher::Event::Apply(pod.into_pod()),
        watcher::Event::Delete(pod) => watcher::Event::Delete(pod.into_pod()),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(pod) => watcher::Event::InitApply(pod.into_pod()),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// The API of pods, for a watch that decodes [`WatchedPod`]s.
impl Resource for WatchedPod {
    type DynamicType = ();
    type Scope = <Pod as Resource>::Scope;

    fn kind((): &()) -> Cow<'_, str> {
        Pod::kind(&())
    }

    fn group((): &()) -> Cow<'_, str> {
        Pod::group(&())
    }

    fn version((): &()) -> Cow<'_, str> {
        Pod::version(&())
    }

    fn plural((): &()) -> Cow<'_, str> {
        Pod::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests;
