//! What the pod watch decodes of a pod: its metadata without the managed fields; of its spec
//! what binds it to its disk (`pod_record`: the node, the hostname node affinity, the data
//! device recorded in the first container's env); of its status the phase and conditions.
//! The rest of the spec, the managed fields and the rest of the status are skipped while
//! decoding, never allocated: at 10,000 OSDs the watch decodes every write the scheduler and
//! the kubelets make to every pod.

use crate::pod::pod_record::DATA_ENV;
use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvVar, Pod, PodCondition, PodSpec, PodStatus,
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
    /// The data device the first container's env records, if it is a plain value.
    #[serde(default, rename = "containers", deserialize_with = "recorded_data")]
    data: Option<String>,
}

/// The first container's env, as far as `recorded_data` reads it.
#[derive(Deserialize)]
struct ContainerEnv {
    #[serde(default)]
    env: Vec<EnvEntry>,
}

#[derive(Deserialize)]
struct EnvEntry {
    name: String,
    #[serde(default)]
    value: Option<String>,
}

/// The plain value of `OSD_DEVICE` in the first container; the other containers are skipped.
fn recorded_data<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct FirstContainer;
    impl<'de> serde::de::Visitor<'de> for FirstContainer {
        type Value = Option<String>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of containers")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let first: Option<ContainerEnv> = seq.next_element()?;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(first.and_then(|c| {
                c.env
                    .into_iter()
                    .find(|e| e.name == DATA_ENV)
                    .and_then(|e| e.value)
            }))
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    deserializer.deserialize_any(FirstContainer)
}

#[derive(Clone, Debug, Default, Deserialize)]
struct WatchedStatus {
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    conditions: Option<Vec<PodCondition>>,
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
    /// PodScheduled (False), without probe times.
    pub(crate) fn into_pod(self) -> Pod {
        let status = self.status.map(|status| PodStatus {
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
        let spec = self.spec.map(|spec| PodSpec {
            node_name: spec.node_name,
            affinity: spec.affinity,
            containers: spec
                .data
                .map(|data| Container {
                    env: Some(vec![EnvVar {
                        name: DATA_ENV.to_owned(),
                        value: Some(data),
                        value_from: None,
                    }]),
                    ..Container::default()
                })
                .into_iter()
                .collect(),
            ..PodSpec::default()
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
mod tests {
    use super::*;
    use crate::pod::pod_status::{ready_since, unschedulable};
    use serde_json::json;

    fn decoded(value: &serde_json::Value) -> (Pod, Pod) {
        let full: Pod = serde_json::from_value(value.clone()).expect("pod");
        let watched: WatchedPod = serde_json::from_value(value.clone()).expect("watched pod");
        (full, watched.into_pod())
    }

    #[test]
    fn a_watched_pod_keeps_what_the_planner_reads_and_nothing_else() {
        let (full, pod) = decoded(&json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "osd-h1-sdb-abcde",
                "namespace": "ceph",
                "uid": "u1",
                "resourceVersion": "42",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "deletionTimestamp": "2026-01-01T00:01:00Z",
                "deletionGracePeriodSeconds": 30,
                "finalizers": ["f"],
                "generateName": "osd-h1-sdb-",
                "generation": 1,
                "labels": {"ceph.elemental.net/owner": "x"},
                "annotations": {"ceph.elemental.net/host": "h1"},
                "ownerReferences": [{"apiVersion": "ceph.elemental.net/v1alpha1",
                    "kind": "CephOSD", "name": "x", "uid": "cr", "controller": true}],
                "managedFields": [{"manager": "kubelet", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}],
            },
            "spec": {"containers": [{"name": "osd", "image": "ceph"}], "nodeName": "h1"},
            "status": {
                "phase": "Running",
                "podIP": "10.0.0.7",
                "conditions": [
                    {"type": "Ready", "status": "True",
                     "lastTransitionTime": "2026-01-01T00:00:00Z",
                     "lastProbeTime": "2026-01-01T00:00:05Z"},
                    {"type": "PodScheduled", "status": "True"},
                ],
                "containerStatuses": [{"name": "osd", "image": "ceph", "imageID": "x",
                                       "ready": true, "restartCount": 0}],
            },
        }));
        let mut expected_meta = full.metadata.clone();
        expected_meta.managed_fields = None;
        assert_eq!(pod.metadata, expected_meta);
        assert!(full.metadata.managed_fields.is_some());
        assert_eq!(ready_since(&pod), ready_since(&full));
        assert!(ready_since(&pod).is_some());
        let status = pod.status.as_ref().expect("status");
        assert_eq!(status.phase.as_deref(), Some("Running"));
        // Of the conditions, the Ready one (PodScheduled only while False), without its
        // probe time.
        let conditions = status.conditions.as_ref().expect("conditions");
        assert_eq!(conditions.len(), 1);
        assert!(conditions[0].last_probe_time.is_none());
        assert!(status.container_statuses.is_none() && status.pod_ip.is_none());
        // Of the spec, only what binds the pod to its disk.
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.node_name.as_deref(), Some("h1"));
        assert!(spec.containers.is_empty() && spec.affinity.is_none());
        assert_eq!(
            crate::pod::pod_record::bound_host(&pod),
            crate::pod::pod_record::bound_host(&full)
        );
    }

    #[test]
    fn a_watched_pod_keeps_its_record_of_host_and_data() {
        let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["h1"]}]}]}}});
        let (full, pod) = decoded(&json!({
            "metadata": {"name": "osd-h1-sdb-abcde"},
            "spec": {
                "affinity": affinity,
                "containers": [
                    {"name": "osd", "image": "ceph", "env": [
                        {"name": "TEST", "value": "x"},
                        {"name": "OSD_DEVICE", "value": "/dev/sdb"},
                        {"name": "OSD_DB_DEVICE", "value": ""},
                    ]},
                    {"name": "sidecar", "env": [{"name": "OSD_DEVICE", "value": "/dev/other"}]},
                ],
            },
        }));
        assert_eq!(crate::pod::pod_record::bound_host(&pod), Some("h1"));
        assert_eq!(
            crate::pod::pod_record::recorded_data(&pod),
            Some("/dev/sdb")
        );
        assert_eq!(
            crate::pod::pod_record::recorded_data(&pod),
            crate::pod::pod_record::recorded_data(&full)
        );
        // The reference operator's downward-API env records nothing.
        let (_, legacy) = decoded(&json!({
            "metadata": {"name": "osd-h1-sdb-abcde"},
            "spec": {"containers": [{"name": "osd", "env": [{"name": "OSD_DEVICE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['ceph.elemental.net/data']"}}}]}]},
        }));
        assert_eq!(crate::pod::pod_record::recorded_data(&legacy), None);
    }

    #[test]
    fn a_watched_pending_pod_keeps_why_it_cannot_be_scheduled() {
        let (full, pod) = decoded(&json!({
            "metadata": {"name": "osd-h1-sdb-abcde"},
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/3 nodes are available: node(s) didn't match node affinity",
                "lastProbeTime": null,
            }]},
        }));
        assert!(unschedulable(&full).is_some());
        assert_eq!(unschedulable(&pod), unschedulable(&full));
    }

    #[test]
    fn a_watched_pod_without_status_or_metadata_fields_decodes() {
        let (_, pod) = decoded(&json!({"metadata": {}}));
        assert_eq!(pod.metadata, ObjectMeta::default());
        assert!(pod.status.is_none());
    }

    #[test]
    fn the_watch_asks_for_pods() {
        assert_eq!(
            WatchedPod::url_path(&(), Some("ceph")),
            Pod::url_path(&(), Some("ceph"))
        );
        assert_eq!(WatchedPod::kind(&()), "Pod");
        assert_eq!(WatchedPod::api_version(&()), "v1");
    }
}
