//! The pre-pull phase, between decide and gate: with `spec.prePull`, the new template's
//! images are pulled onto the nodes of the update domains the rollout steps next (the
//! proposed step's, then the next `domainsAhead` out-of-date ones in rollout order), one
//! pod per node that is not cordoned; a domain's step waits until each of its nodes pulled
//! (up to the deadline from its pod's creation, then goes ahead, said in the `PrePull`
//! condition), and never starts while a pull failed on one of them (nor asks Ceph).
//!
//! A pre-pull pod goes once its domain's step started, when the template changes, when the
//! rollout is done, and when its node no longer has an OSD of the spec.

mod pod;
pub(crate) mod pulled;

use crate::ceph::Release;
use crate::crd::topology::PrePullSpec;
use crate::labels;
use crate::plan::phases::decide::proposal::{Rollout, StepDeletions};
use crate::plan::phases::seen::Seen;
use crate::plan::says::actions::Action;
use crate::plan::says::conditions::{ConditionReason, ConditionType, StatedCondition};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use pod::{pre_pull_pod, PrePullPodInput};
use pulled::{pulled, reported_release, Pulled};
use std::collections::{BTreeMap, BTreeSet};

/// What the pre-pull phase adds to the plan.
#[derive(Debug)]
pub(in crate::plan) struct PrePullOutcome {
    /// Pre-pull pods created and deleted.
    pub(in crate::plan) actions: Vec<Action>,
    /// The `PrePull` condition (None without `spec.prePull`).
    pub(in crate::plan) condition: Option<StatedCondition>,
    /// When a deadline passes.
    pub(in crate::plan) requeue_after: Option<SignedDuration>,
    /// The release the template's OSD image reported on the nodes pulling it (the newest,
    /// should a mutable tag have pulled different images).
    pub(in crate::plan) image_release: Option<Release>,
}

/// One node's pull, as far as it bears on the step.
enum NodePull {
    Pulled,
    /// Not yet, until the deadline (when its pod was created plus the spec's deadline).
    Pulling {
        pod: String,
        until: Timestamp,
    },
    Overdue {
        pod: String,
    },
    Failed {
        image: String,
        why: String,
    },
}

/// Runs the phase on `seen`, the decided `rollout` (its halt said when the whole step waits)
/// and its proposed `step` (trimmed of the domains that wait for their images), with the
/// domains under way (`continuing`), at `now`. None: no pre-pull asked and none left.
pub(in crate::plan) fn pre_pull(
    seen: &Seen<'_>,
    rollout: &mut Rollout,
    continuing: &BTreeSet<&str>,
    step: &mut StepDeletions,
    now: Timestamp,
) -> Option<PrePullOutcome> {
    let spec = seen
        .spec
        .pre_pull
        .as_ref()
        .filter(|_| seen.deletion.is_none());
    let Some(spec) = spec else {
        let actions: Vec<Action> = (seen.pre_pull.iter())
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| delete(p))
            .collect();
        return (!actions.is_empty()).then_some(PrePullOutcome {
            actions,
            condition: None,
            requeue_after: None,
            image_release: None,
        });
    };
    let hash = seen.template_hash.as_str();
    let new_in_step: Vec<String> = (step.domains.iter())
        .filter(|d| !continuing.contains(d.as_str()))
        .cloned()
        .collect();
    let wanted_domains = wanted_domains(rollout, continuing, &new_in_step, spec);
    let hosts = hosts_of(seen, &wanted_domains);
    let (kept, mut actions) = kept_pods(seen, hash, &hosts);
    let pulls = node_pulls(seen, &hosts, &kept, spec, now, &mut actions);
    let held = hold(step, &new_in_step, &hosts, &pulls, |k| seen.domain_of(k));
    if let Some(why) = held.filter(|_| step.domains.is_empty()) {
        rollout.halted.get_or_insert(why);
    }
    let requeue_after = (pulls.values())
        .filter_map(|p| match p {
            NodePull::Pulling { until, .. } => Some(now.duration_until(*until)),
            _ => None,
        })
        .filter(SignedDuration::is_positive)
        .min();
    let condition = condition(seen, &pulls, &new_in_step, &hosts, &wanted_domains);
    Some(PrePullOutcome {
        actions,
        condition: Some(condition),
        requeue_after,
        image_release: kept.values().filter_map(|p| reported_release(p)).max(),
    })
}

/// The pre-pull pods that stay (one per node of `hosts`, of the template `hash`), and the
/// deletions of the others.
fn kept_pods<'s>(
    seen: &'s Seen<'_>,
    hash: &str,
    hosts: &BTreeMap<&str, String>,
) -> (BTreeMap<&'s str, &'s Pod>, Vec<Action>) {
    let mut kept: BTreeMap<&str, &Pod> = BTreeMap::new();
    let mut deletions = Vec::new();
    for pod in &seen.pre_pull {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let annotation = |k: &str| pod.annotations().get(k).map(String::as_str);
        let node = annotation(labels::PRE_PULL_NODE).unwrap_or_default();
        let current = annotation(labels::PRE_PULL_TEMPLATE_HASH) == Some(hash);
        if current && hosts.contains_key(node) && !kept.contains_key(node) {
            kept.insert(node, pod);
        } else {
            deletions.push(delete(pod));
        }
    }
    (kept, deletions)
}

/// How each node of `hosts` pulls: read from its `kept` pod, or a pod created for it (into
/// `actions`); a node without an OSD of the spec pulls nothing.
fn node_pulls<'h>(
    seen: &Seen<'_>,
    hosts: &BTreeMap<&'h str, String>,
    kept: &BTreeMap<&str, &Pod>,
    spec: &PrePullSpec,
    now: Timestamp,
    actions: &mut Vec<Action>,
) -> BTreeMap<&'h str, NodePull> {
    let (command, preflight) = spec.command();
    let mut pulls = BTreeMap::new();
    for host in hosts.keys().copied() {
        let pull = match kept.get(host) {
            Some(pod) => node_pull(pod, preflight, spec, now),
            None => match build(seen, host, &command) {
                Some(pod) => {
                    let name = pod.name_any();
                    actions.push(Action::CreatePrePull {
                        node: host.to_owned(),
                        pod: Box::new(pod),
                    });
                    NodePull::Pulling {
                        pod: name,
                        until: now + spec.deadline(),
                    }
                }
                None => continue,
            },
        };
        pulls.insert(host, pull);
    }
    pulls
}

/// The domains whose nodes pull now: the step's new ones, then the next `domainsAhead` (one
/// more while no step is proposed) out-of-date ones not under way nor held, in rollout order.
fn wanted_domains(
    rollout: &Rollout,
    continuing: &BTreeSet<&str>,
    new_in_step: &[String],
    spec: &PrePullSpec,
) -> Vec<String> {
    let mut pending: Vec<&String> = (rollout.out_of_date.iter())
        .filter(|d| !continuing.contains(d.as_str()))
        .filter(|d| !rollout.held.contains_key(*d) && !new_in_step.contains(d))
        .collect();
    pending.sort_by_key(|d| (d.to_lowercase(), d.as_str()));
    let ahead = spec.domains_ahead() + usize::from(new_in_step.is_empty());
    (new_in_step.iter().cloned())
        .chain(pending.into_iter().take(ahead).cloned())
        .collect()
}

/// The nodes of `domains` that are not cordoned, each with its domain: those of the spec's
/// OSDs and of the pods of desired OSDs standing for them.
fn hosts_of<'s>(seen: &'s Seen<'_>, domains: &[String]) -> BTreeMap<&'s str, String> {
    let keys = (seen.desired.osds.keys()).chain(seen.pods.iter().filter_map(|p| p.key.as_ref()));
    let mut hosts = BTreeMap::new();
    for key in keys {
        let domain = seen.domain_of(key);
        if domains.contains(&domain) && !seen.cordoned.contains(&key.host) {
            hosts.insert(key.host.as_str(), domain);
        }
    }
    hosts
}

/// The pre-pull pod of `host` for the current template, built from the pod of an OSD of the
/// spec there (None: none is there, or its pod cannot be built, which `InvalidSpec` says).
fn build(seen: &Seen<'_>, host: &str, command: &[String]) -> Option<Pod> {
    let osd = (seen.desired.osds.values()).find(|o| o.key.host == host)?;
    let rendered = seen.build(osd, &osd.key.name_prefix()).ok()?;
    let namespace = seen.cr.namespace()?;
    let uid = seen.cr.uid();
    let annotations = seen.spec.pod_template["metadata"]["annotations"]
        .as_object()
        .map(|a| {
            (a.iter())
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        });
    Some(pre_pull_pod(&PrePullPodInput {
        cr_name: &seen.cr_name,
        namespace: &namespace,
        owner_uid: uid.as_deref(),
        node: host,
        template_hash: seen.template_hash.as_str(),
        rendered: &rendered,
        annotations,
        command,
    }))
}

fn node_pull(pod: &Pod, preflight: bool, spec: &PrePullSpec, now: Timestamp) -> NodePull {
    let name = pod.name_any();
    match pulled(pod, preflight) {
        Pulled::Yes => NodePull::Pulled,
        Pulled::Failed { image, why } => NodePull::Failed { image, why },
        Pulled::Pulling => {
            let created = (pod.metadata.creation_timestamp.as_ref()).map_or(now, |t| t.0);
            let until = created + spec.deadline();
            if now >= until {
                NodePull::Overdue { pod: name }
            } else {
                NodePull::Pulling { pod: name, until }
            }
        }
    }
}

/// Trims `step` to the domains whose nodes all pulled (or are past their deadline); why the
/// first domain held waits, if one does.
fn hold(
    step: &mut StepDeletions,
    new_in_step: &[String],
    hosts: &BTreeMap<&str, String>,
    pulls: &BTreeMap<&str, NodePull>,
    domain_of: impl Fn(&crate::crd::osd::OsdKey) -> String,
) -> Option<String> {
    let mut first_why = None;
    let mut waiting: BTreeSet<&str> = BTreeSet::new();
    for domain in new_in_step {
        let of_domain = (hosts.iter())
            .filter(|(_, d)| *d == domain)
            .map(|(h, _)| *h);
        for host in of_domain {
            let why = match pulls.get(host) {
                Some(NodePull::Pulling { pod, until }) => format!(
                    "update domain {domain} waits for the new images on node {host} (pre-pull \
                     pod {pod}; it goes ahead without them at {until})"
                ),
                Some(NodePull::Failed { image, why }) => format!(
                    "{} failed on node {host}: {why}; no OSD of update domain {domain} stops \
                     until the template is fixed",
                    image_words(image)
                ),
                _ => continue,
            };
            waiting.insert(domain);
            first_why.get_or_insert(why);
        }
    }
    if waiting.is_empty() {
        return None;
    }
    let allowed: BTreeSet<String> = (step.domains.iter())
        .filter(|d| !waiting.contains(d.as_str()))
        .cloned()
        .collect();
    step.keep_domains(&allowed, domain_of);
    first_why
}

/// The `PrePull` condition: a failed pull first, then a step that went ahead past its
/// deadline (said while its domains are under way), then a step waiting, then all pulled.
fn condition(
    seen: &Seen<'_>,
    pulls: &BTreeMap<&str, NodePull>,
    new_in_step: &[String],
    hosts: &BTreeMap<&str, String>,
    wanted: &[String],
) -> StatedCondition {
    let failed: Vec<String> = (pulls.iter())
        .filter_map(|(host, p)| match p {
            NodePull::Failed { image, why } => {
                Some(format!("node {host}: {}: {why}", image_words(image)))
            }
            _ => None,
        })
        .collect();
    let in_step = |host: &str| hosts.get(host).is_some_and(|d| new_in_step.contains(d));
    let overdue: Vec<String> = (pulls.iter())
        .filter(|(host, _)| in_step(host))
        .filter_map(|(host, p)| match p {
            NodePull::Overdue { pod } => Some(format!("node {host} (pre-pull pod {pod})")),
            _ => None,
        })
        .collect();
    let pulling = (pulls.iter()).filter(|(_, p)| matches!(p, NodePull::Pulling { .. }));
    let pulling: Vec<&str> = pulling.map(|(host, _)| *host).collect();
    let (holds, reason, message) = if !failed.is_empty() {
        (
            false,
            ConditionReason::PullFailed,
            format!(
                "{}; the rollout holds before any OSD of these nodes stops",
                failed.join("; ")
            ),
        )
    } else if !overdue.is_empty() {
        (
            false,
            ConditionReason::PullDeadlineExceeded,
            format!(
                "the new images were not pulled within {} s on {}; the step went ahead without them",
                seen.spec.pre_pull.as_ref().map_or(0, |s| s.deadline().as_secs()),
                overdue.join(", ")
            ),
        )
    } else if let Some(kept) = kept_deadline(seen) {
        (false, ConditionReason::PullDeadlineExceeded, kept)
    } else if !pulling.is_empty() {
        (
            false,
            ConditionReason::Pulling,
            format!("pulling the new images on node {}", pulling.join(", ")),
        )
    } else if wanted.is_empty() {
        (
            true,
            ConditionReason::NothingToPull,
            "no update domain waits for the template's images".to_owned(),
        )
    } else {
        (
            true,
            ConditionReason::Pulled,
            format!(
                "the new images are on the nodes of update domain {}",
                wanted.join(", ")
            ),
        )
    };
    StatedCondition {
        holds,
        reason,
        message,
    }
}

/// The previous `PrePull` condition's deadline message, while the domains it went ahead for
/// are still under way.
fn kept_deadline(seen: &Seen<'_>) -> Option<String> {
    let reason = ConditionReason::PullDeadlineExceeded.as_str();
    (seen.previous.conditions.iter())
        .find(|c| c.type_ == ConditionType::PrePull.as_str() && c.reason == reason)
        .filter(|_| !seen.previous.current_update.is_empty())
        .map(|c| c.message.clone())
}

/// `image <name>`, or `the pre-pull` when the pod does not say which image.
fn image_words(image: &str) -> String {
    if image.is_empty() {
        "the pre-pull".to_owned()
    } else {
        format!("image {image}")
    }
}

fn delete(pod: &Pod) -> Action {
    Action::DeletePrePull {
        name: pod.name_any(),
        uid: pod.uid(),
    }
}

#[cfg(test)]
mod tests;
