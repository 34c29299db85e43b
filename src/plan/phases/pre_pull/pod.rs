//! A pre-pull pod: the images of the new template's containers and initContainers, each
//! running the spec's command once on one node, as the OSD pods there would be scheduled
//! (the template's tolerations, nodeSelector, priorityClassName, imagePullSecrets and
//! annotations), with tiny requests. It carries no owner label and no OSD annotation: only
//! its CephOSD, which controls it, counts it, and nothing that selects OSD pods selects it.
//! One more container, on the image of the template's first container (the OSD's), reports
//! that image's `ceph-osd --version` as its termination message: the release the template
//! runs, known before any OSD stops.

use crate::labels;
use k8s_openapi::api::core::v1::{
    Affinity, Container, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    Pod, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use std::collections::BTreeMap;

/// The container that reports the OSD image's release.
pub(crate) const RELEASE_CONTAINER: &str = "ceph-release";
/// Its command: the version into the termination message; an image without `ceph-osd`
/// reports nothing (and fails nothing).
const RELEASE_COMMAND: &str = "ceph-osd --version > /dev/termination-log || true";

/// A pod name's longest length here (a DNS label, so it is also a valid hostname).
const MAX_NAME: usize = 63;

/// What a pre-pull pod is made of.
pub(crate) struct PrePullPodInput<'a> {
    pub cr_name: &'a str,
    pub namespace: &'a str,
    pub owner_uid: Option<&'a str>,
    pub node: &'a str,
    pub template_hash: &'a str,
    /// The new template's pod as rendered for an OSD of `node`.
    pub rendered: &'a Pod,
    /// The template's own annotations (not the operator's OSD annotations).
    pub annotations: Option<BTreeMap<String, String>>,
    pub command: &'a [String],
}

/// The pre-pull pod of `input`.
pub(crate) fn pre_pull_pod(input: &PrePullPodInput<'_>) -> Pod {
    let spec = input.rendered.spec.clone().unwrap_or_default();
    let containers = pull_containers(&spec, input.command);
    let affinity = on_node(input.node);
    Pod {
        metadata: ObjectMeta {
            name: Some(pre_pull_pod_name(
                input.cr_name,
                input.node,
                input.template_hash,
            )),
            namespace: Some(input.namespace.to_owned()),
            labels: Some(BTreeMap::from([(
                labels::PRE_PULL.to_owned(),
                "true".to_owned(),
            )])),
            annotations: Some(
                (input.annotations.clone().unwrap_or_default().into_iter())
                    .chain([
                        (labels::PRE_PULL_NODE.to_owned(), input.node.to_owned()),
                        (
                            labels::PRE_PULL_TEMPLATE_HASH.to_owned(),
                            input.template_hash.to_owned(),
                        ),
                    ])
                    .collect(),
            ),
            owner_references: input.owner_uid.map(|uid| {
                vec![OwnerReference {
                    api_version: format!("{}/v1alpha1", crate::crd::GROUP),
                    kind: "CephOSD".to_owned(),
                    name: input.cr_name.to_owned(),
                    uid: uid.to_owned(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]
            }),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers,
            restart_policy: Some("Never".to_owned()),
            affinity: Some(affinity),
            tolerations: spec.tolerations,
            node_selector: spec.node_selector,
            priority_class_name: spec.priority_class_name,
            image_pull_secrets: spec.image_pull_secrets,
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            termination_grace_period_seconds: Some(1),
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// One container per image of `spec` (init containers first), each pulling its image with
/// its pull policy and running `command`, with the least resources a pod may request.
fn pull_containers(spec: &PodSpec, command: &[String]) -> Vec<Container> {
    let mut images: Vec<(String, Option<String>)> = Vec::new();
    for c in (spec.init_containers.iter().flatten()).chain(&spec.containers) {
        if let Some(image) = &c.image {
            if images.iter().all(|(i, _)| i != image) {
                images.push((image.clone(), c.image_pull_policy.clone()));
            }
        }
    }
    let requests = BTreeMap::from([
        ("cpu".to_owned(), Quantity("1m".to_owned())),
        ("memory".to_owned(), Quantity("16Mi".to_owned())),
    ]);
    let osd = spec.containers.first().filter(|c| c.image.is_some());
    let release = osd.map(|osd| Container {
        name: RELEASE_CONTAINER.to_owned(),
        image: osd.image.clone(),
        image_pull_policy: osd.image_pull_policy.clone(),
        command: Some(vec!["sh".into(), "-c".into(), RELEASE_COMMAND.into()]),
        resources: Some(ResourceRequirements {
            requests: Some(requests.clone()),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    });
    (images.into_iter().enumerate())
        .map(|(i, (image, policy))| Container {
            name: format!("pull-{i}"),
            image: Some(image),
            image_pull_policy: policy,
            command: Some(command.to_vec()),
            resources: Some(ResourceRequirements {
                requests: Some(requests.clone()),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        })
        .chain(release)
        .collect()
}

/// Required affinity to the node's name, as DaemonSet pods are placed: the scheduler still
/// honours taints, cordons, resources and priority, as for the OSD pod.
fn on_node(node: &str) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".to_owned(),
                        operator: "In".to_owned(),
                        values: Some(vec![node.to_owned()]),
                    }]),
                    ..NodeSelectorTerm::default()
                }],
            }),
            ..NodeAffinity::default()
        }),
        ..Affinity::default()
    }
}

/// `<cr>-pre-pull-<node>-<hash>`: one name per CephOSD, node and template. Within 63
/// characters: a longer one keeps its start and ends with a digest of the whole.
pub(crate) fn pre_pull_pod_name(cr_name: &str, node: &str, template_hash: &str) -> String {
    let hash: String = template_hash.chars().take(10).collect();
    let full = format!("{cr_name}-pre-pull-{node}-{hash}");
    let clean: String = (full.chars())
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-') => c,
            _ => '-',
        })
        .collect();
    if clean.len() <= MAX_NAME && clean == full {
        return clean;
    }
    let digest = crate::labels::update_domain_label_value(&full);
    let keep: String = clean.chars().take(MAX_NAME - digest.len() - 1).collect();
    format!("{}-{digest}", keep.trim_end_matches('-'))
}
