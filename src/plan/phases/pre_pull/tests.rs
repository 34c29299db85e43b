//! The pre-pull phase on the simulated cluster: which nodes pull when, the hold before a
//! domain's step, the deadline, failed pulls and preflights, the cleanup; the pod itself and
//! what its status says.

use super::pulled::{pulled, reported_release, Pulled};
use super::*;
use crate::crd::topology::PrePullSpec;
use crate::crd::{CephOsd, UpdateDomain};
use crate::hash::TemplateHash;
use crate::plan::tests::{
    assert_condition, condition, converged, cr, event_reasons, set_ready, Cluster,
    SimulatedDisruption,
};
use crate::plan::Plan;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, PodStatus,
};
use proptest::prelude::*;
use serde_json::json;

const HOSTS: [&str; 4] = ["h1", "h2", "h3", "h4"];

fn with_pre_pull(marker: &str, spec: PrePullSpec) -> CephOsd {
    let mut cr = cr(UpdateDomain::Host, &HOSTS, &["/dev/sdb"], marker);
    cr.spec.pre_pull = Some(spec);
    cr
}

fn ahead(domains_ahead: i32) -> PrePullSpec {
    PrePullSpec {
        domains_ahead: Some(domains_ahead),
        ..PrePullSpec::default()
    }
}

/// The nodes the plan creates pre-pull pods on.
fn pulls_created(plan: &Plan) -> Vec<String> {
    (plan.actions.iter())
        .filter_map(|a| match a {
            Action::CreatePrePull { node, .. } => Some(node.clone()),
            _ => None,
        })
        .collect()
}

fn pulls_deleted(plan: &Plan) -> usize {
    (plan.actions.iter())
        .filter(|a| matches!(a, Action::DeletePrePull { .. }))
        .count()
}

/// The hosts whose OSD pods the plan takes down.
fn replaced_hosts(plan: &Plan) -> Vec<String> {
    plan.replacing.iter().map(|k| k.host.clone()).collect()
}

fn pre_pull_pods(cluster: &Cluster) -> Vec<&Pod> {
    (cluster.pods.iter())
        .filter(|p| labels::is_pre_pull(p) && p.metadata.deletion_timestamp.is_none())
        .collect()
}

fn node_of(pod: &Pod) -> &str {
    pod.annotations()
        .get(labels::PRE_PULL_NODE)
        .map_or("", String::as_str)
}

/// Plays kubelet for the OSD pods only (the pre-pull pods stay as they are).
fn make_osd_pods_ready(cluster: &mut Cluster) {
    for pod in &mut cluster.pods {
        if !labels::is_pre_pull(pod) {
            set_ready(pod, true);
        }
    }
}

/// Sets the status of the pre-pull pods of `node`.
fn set_pull_status(cluster: &mut Cluster, node: &str, status: &PodStatus) {
    for pod in &mut cluster.pods {
        if labels::is_pre_pull(pod) && node_of(pod) == node {
            pod.status = Some(status.clone());
        }
    }
}

fn waiting(reason: &str) -> PodStatus {
    container_status(ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_owned()),
            message: Some("pull access denied".to_owned()),
        }),
        ..ContainerState::default()
    })
}

fn exited(code: i32) -> PodStatus {
    let mut status = container_status(ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: code,
            reason: Some(if code == 0 { "Completed" } else { "Error" }.to_owned()),
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    });
    status.phase = Some(if code == 0 { "Succeeded" } else { "Failed" }.to_owned());
    status
}

/// The release report of a Pacific image, ended.
fn reported(version: &str) -> ContainerStatus {
    ContainerStatus {
        name: "ceph-release".to_owned(),
        image: "ceph".to_owned(),
        state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 0,
                message: Some(format!("{version}\n")),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        }),
        ..ContainerStatus::default()
    }
}

const PACIFIC: &str = "ceph version 16.2.15 (618f44) pacific (stable)";

fn container_status(state: ContainerState) -> PodStatus {
    PodStatus {
        phase: Some("Pending".to_owned()),
        container_statuses: Some(vec![
            ContainerStatus {
                name: "pull-0".to_owned(),
                image: "ceph".to_owned(),
                state: Some(state),
                ..ContainerStatus::default()
            },
            reported(PACIFIC),
        ]),
        ..PodStatus::default()
    }
}

#[test]
fn without_pre_pull_nothing_changes() {
    let mut cluster = converged(&cr(UpdateDomain::Host, &HOSTS, &["/dev/sdb"], "a"));
    let next = cr(UpdateDomain::Host, &HOSTS, &["/dev/sdb"], "b");
    let plan = cluster.reconcile(&next);
    assert_eq!(replaced_hosts(&plan), ["h1"]);
    assert!(pulls_created(&plan).is_empty());
    assert!(plan.status.conditions.iter().all(|c| c.type_ != "PrePull"));
}

#[test]
fn the_next_domains_pull_before_the_first_stops_and_the_gate_is_not_asked() {
    let mut cluster = converged(&with_pre_pull("a", ahead(1)));
    let next = with_pre_pull("b", ahead(1));
    let plan = cluster.reconcile(&next);
    assert_eq!(
        pulls_created(&plan),
        ["h1", "h2"],
        "the step's and one ahead"
    );
    assert!(
        replaced_hosts(&plan).is_empty(),
        "no OSD stops before its images"
    );
    assert!(plan.gate_question.is_none());
    assert_condition(
        &plan,
        "Progressing",
        "False",
        "Halted",
        "waits for the new images on node h1",
    );
    assert_condition(&plan, "PrePull", "False", "Pulling", "h1, h2");
    // The same plan again: nothing new to create, the pods exist.
    let again = cluster.reconcile(&next);
    assert!(pulls_created(&again).is_empty() && again.replacing.is_empty());
    // Pulled: h1's step goes; its pre-pull pod stays until the step has started.
    cluster.make_all_ready();
    let plan = cluster.reconcile(&next);
    assert_eq!(replaced_hosts(&plan), ["h1"]);
    assert_condition(&plan, "PrePull", "True", "Pulled", "h1, h2");
    cluster.finish_terminations();
    let plan = cluster.reconcile(&next);
    assert_eq!(pulls_deleted(&plan), 1, "h1's step started");
    assert_eq!(pulls_created(&plan), ["h3"], "h2 next, h3 ahead");
}

#[test]
fn a_rollout_pulls_every_node_before_it_stops_and_leaves_no_pre_pull_pod() {
    for domains_ahead in 1..=3 {
        let mut cluster = converged(&with_pre_pull("a", ahead(domains_ahead)));
        let next = with_pre_pull("b", ahead(domains_ahead));
        let hash = TemplateHash::of(&next.spec.pod_template).to_string();
        let mut replaced = Vec::new();
        for _ in 0..60 {
            let ready_pulls: Vec<String> = (pre_pull_pods(&cluster).into_iter())
                .filter(|p| pulled(p, false) == Pulled::Yes)
                .filter(|p| p.annotations().get(labels::PRE_PULL_TEMPLATE_HASH) == Some(&hash))
                .map(|p| node_of(p).to_owned())
                .collect();
            let plan = cluster.reconcile(&next);
            for host in replaced_hosts(&plan) {
                assert!(ready_pulls.contains(&host), "{host} stopped before pulling");
                replaced.push(host);
            }
            let pulling = pre_pull_pods(&cluster).len();
            assert!(pulling <= 1 + usize::try_from(domains_ahead).expect("small"));
            if plan.actions.is_empty() && plan.summary.out_of_date == 0 {
                break;
            }
            cluster.finish_terminations();
            cluster.make_all_ready();
        }
        assert_eq!(replaced, HOSTS, "domainsAhead {domains_ahead}");
        assert!(pre_pull_pods(&cluster).is_empty(), "cleaned up at the end");
        let last = cluster.reconcile(&next);
        assert_condition(
            &last,
            "PrePull",
            "True",
            "NothingToPull",
            "no update domain",
        );
    }
}

#[test]
fn a_cordoned_node_gets_no_pre_pull_pod_and_is_not_waited_for() {
    let mut cluster = converged(&with_pre_pull("a", ahead(2)));
    let mut disruption = SimulatedDisruption::default();
    disruption.cordoned.insert("h2".to_owned());
    cluster.disruption = Some(disruption);
    let next = with_pre_pull("b", ahead(2));
    let plan = cluster.reconcile(&next);
    assert_eq!(pulls_created(&plan), ["h1", "h3"]);
}

#[test]
fn past_the_deadline_the_step_goes_ahead_and_says_so() {
    let spec = PrePullSpec {
        deadline_seconds: Some(60),
        ..ahead(1)
    };
    let mut cluster = converged(&with_pre_pull("a", spec.clone()));
    let next = with_pre_pull("b", spec);
    cluster.clock = 1000;
    let plan = cluster.reconcile(&next);
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(60)));
    cluster.clock = 1059;
    let plan = cluster.reconcile(&next);
    assert!(plan.replacing.is_empty(), "within the deadline");
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(1)));
    cluster.clock = 1060;
    let plan = cluster.reconcile(&next);
    assert_eq!(replaced_hosts(&plan), ["h1"]);
    assert_condition(
        &plan,
        "PrePull",
        "False",
        "PullDeadlineExceeded",
        "within 60 s on node h1",
    );
    assert!(event_reasons(&plan).contains(&"PrePull"), "a Warning event");
    assert!(plan
        .events
        .iter()
        .any(|e| e.warning && e.reason.as_str() == "PrePull"));
    // Said while the step is under way, once.
    cluster.finish_terminations();
    let plan = cluster.reconcile(&next);
    assert_condition(&plan, "PrePull", "False", "PullDeadlineExceeded", "node h1");
    assert!(!event_reasons(&plan).contains(&"PrePull"));
}

#[test]
fn a_failed_pull_holds_the_rollout_past_the_deadline_and_names_node_image_and_reason() {
    for reason in [
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
    ] {
        let mut cluster = converged(&with_pre_pull("a", ahead(1)));
        let next = with_pre_pull("b", ahead(1));
        cluster.reconcile(&next);
        set_pull_status(&mut cluster, "h1", &waiting(reason));
        cluster.clock += 10_000;
        let plan = cluster.reconcile(&next);
        assert!(plan.replacing.is_empty(), "{reason}: nothing stops");
        assert!(plan.gate_question.is_none());
        assert_condition(
            &plan,
            "PrePull",
            "False",
            "PullFailed",
            "node h1: image ceph",
        );
        assert_condition(&plan, "PrePull", "False", "PullFailed", reason);
        assert_condition(
            &plan,
            "Progressing",
            "False",
            "Halted",
            "image ceph failed on node h1",
        );
        assert!(plan
            .events
            .iter()
            .any(|e| e.warning && e.reason.as_str() == "PrePull"));
        // A pull failing ahead is said, and holds nothing yet.
        let mut cluster = converged(&with_pre_pull("a", ahead(1)));
        cluster.reconcile(&next);
        set_pull_status(&mut cluster, "h1", &exited(0));
        set_pull_status(&mut cluster, "h2", &waiting(reason));
        let plan = cluster.reconcile(&next);
        assert_eq!(replaced_hosts(&plan), ["h1"]);
        assert_condition(&plan, "PrePull", "False", "PullFailed", "node h2");
    }
}

#[test]
fn a_given_command_that_fails_holds_the_default_one_does_not() {
    let preflight = PrePullSpec {
        command: Some(vec!["ceph-osd".into(), "--version".into()]),
        ..ahead(1)
    };
    for (spec, holds) in [(preflight, true), (ahead(1), false)] {
        let mut cluster = converged(&with_pre_pull("a", spec.clone()));
        let next = with_pre_pull("b", spec);
        cluster.reconcile(&next);
        set_pull_status(&mut cluster, "h1", &exited(1));
        let plan = cluster.reconcile(&next);
        assert_eq!(plan.replacing.is_empty(), holds);
        if holds {
            assert_condition(
                &plan,
                "PrePull",
                "False",
                "PullFailed",
                "the command exited 1",
            );
        }
    }
}

#[test]
fn a_new_template_or_a_host_leaving_the_spec_deletes_its_pre_pull_pods() {
    let mut cluster = converged(&with_pre_pull("a", ahead(1)));
    cluster.reconcile(&with_pre_pull("b", ahead(1)));
    assert_eq!(pre_pull_pods(&cluster).len(), 2);
    let plan = cluster.reconcile(&with_pre_pull("c", ahead(1)));
    assert_eq!(pulls_deleted(&plan), 2, "the old template's");
    assert_eq!(pulls_created(&plan), ["h1", "h2"]);
    // h2 leaves the spec: its pods go in their turn, its pre-pull pod at once.
    let mut fewer = cr(UpdateDomain::Host, &["h1", "h3", "h4"], &["/dev/sdb"], "c");
    fewer.spec.pre_pull = Some(ahead(1));
    let plan = cluster.reconcile(&fewer);
    assert_eq!(pulls_deleted(&plan), 1);
    assert_eq!(pulls_created(&plan), ["h3"]);
    // prePull removed: every pre-pull pod goes.
    let plan = cluster.reconcile(&cr(UpdateDomain::Host, &HOSTS, &["/dev/sdb"], "c"));
    assert_eq!(pulls_deleted(&plan), 2);
}

#[test]
fn pre_pull_pods_are_no_osd_pods_to_the_planner() {
    let mut cluster = converged(&with_pre_pull("a", ahead(3)));
    let next = with_pre_pull("b", ahead(3));
    cluster.reconcile(&next);
    let plan = cluster.reconcile(&next);
    assert_eq!(pre_pull_pods(&cluster).len(), 4);
    assert_eq!(plan.summary.invalid + plan.summary.unready, 0);
    assert!(plan.pods.iter().all(|p| !p.name.contains("pre-pull")));
    assert!(crate::plan::tests::deletes(&plan).is_empty());
    // A pod labelled pre-pull that names an OSD stays an OSD pod (never hidden).
    let mut disguised = cluster.pods[0].clone();
    (disguised
        .metadata
        .labels
        .get_or_insert_with(Default::default))
    .insert(labels::PRE_PULL.to_owned(), "true".to_owned());
    assert!(!crate::plan::phases::seen::is_own_pre_pull(
        &disguised,
        Some("cr-uid")
    ));
}

#[test]
fn the_pod_pulls_each_image_once_on_its_node_as_the_osd_pod_is_scheduled() {
    let mut next = with_pre_pull("b", ahead(1));
    next.spec.pod_template = json!({
        "metadata": {"labels": {"role": "osd"}, "annotations": {"team": "storage"}},
        "spec": {
            "initContainers": [{"name": "init", "image": "ceph:v2", "imagePullPolicy": "Always"}],
            "containers": [{"name": "osd", "image": "ceph:v2"}, {"name": "log", "image": "busybox"}],
            "tolerations": [{"key": "storage", "operator": "Exists"}],
            "nodeSelector": {"disk": "ssd"},
            "priorityClassName": "storage",
            "imagePullSecrets": [{"name": "registry"}]
        }
    });
    let mut cluster = converged(&with_pre_pull("a", ahead(1)));
    let plan = cluster.reconcile(&next);
    let pod = (plan.actions.iter())
        .find_map(|a| match a {
            Action::CreatePrePull { pod, .. } => Some(pod),
            _ => None,
        })
        .expect("a pre-pull pod");
    let spec = pod.spec.as_ref().expect("spec");
    let images: Vec<_> = spec
        .containers
        .iter()
        .map(|c| c.image.clone().unwrap_or_default())
        .collect();
    assert_eq!(images, ["ceph:v2", "busybox", "ceph:v2"]);
    assert_eq!(
        spec.containers[0].image_pull_policy.as_deref(),
        Some("Always")
    );
    assert!(spec.containers[..2]
        .iter()
        .all(|c| c.command == Some(vec!["true".to_owned()])));
    // The OSD image's release report.
    let report = &spec.containers[2];
    assert_eq!(report.name, "ceph-release");
    assert_eq!(report.image_pull_policy, None, "the OSD container's own");
    let command = report.command.clone().unwrap_or_default().join(" ");
    assert!(command.contains("ceph-osd --version > /dev/termination-log"));
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.priority_class_name.as_deref(), Some("storage"));
    assert_eq!(spec.tolerations.as_ref().map(Vec::len), Some(1));
    assert_eq!(spec.image_pull_secrets.as_ref().map(Vec::len), Some(1));
    assert!(spec
        .node_selector
        .as_ref()
        .is_some_and(|s| s["disk"] == "ssd"));
    let affinity = json!(spec.affinity);
    assert_eq!(
        affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchFields"][0]["values"],
        json!(["h1"])
    );
    let labels = pod.labels();
    assert!(!labels.contains_key(labels::OWNER) && !labels.contains_key(labels::UPDATE_DOMAIN));
    assert!(
        !labels.contains_key("role"),
        "the template's labels select OSD pods"
    );
    assert_eq!(
        pod.annotations().get("team").map(String::as_str),
        Some("storage")
    );
    assert!(!pod.annotations().contains_key(labels::HOST));
    let owner = &pod.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("CephOSD", "cr-uid", Some(true))
    );
}

#[test]
fn names_are_per_cephosd_node_and_template_and_fit_a_dns_label() {
    let name = pod::pre_pull_pod_name("ceph-osds", "node1", "0123456789abcdef");
    assert_eq!(name, "ceph-osds-pre-pull-node1-0123456789");
    let long_host = "rack12-node0042.storage.example.com";
    let long_cr = "a-very-long-cephosd-name-for-the-production-cluster";
    let a = pod::pre_pull_pod_name(long_cr, long_host, "0123456789abcdef");
    let b = pod::pre_pull_pod_name(
        long_cr,
        "rack12-node0043.storage.example.com",
        "0123456789abcdef",
    );
    for name in [&a, &b] {
        assert!(name.len() <= 63, "{name}");
        assert!(name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
        assert!(!name.ends_with('-'));
    }
    assert_ne!(a, b);
    assert_ne!(
        pod::pre_pull_pod_name("x", "Node.1", "h"),
        pod::pre_pull_pod_name("x", "node-1", "h")
    );
}

fn pod_with(status: Option<PodStatus>) -> Pod {
    Pod {
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![k8s_openapi::api::core::v1::Container {
                name: "pull-0".into(),
                image: Some("ceph:v2".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status,
        ..Pod::default()
    }
}

#[test]
fn what_a_pre_pull_pod_status_says() {
    let running = container_status(ContainerState {
        running: Some(ContainerStateRunning::default()),
        ..ContainerState::default()
    });
    let creating = container_status(ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some("ContainerCreating".into()),
            message: None,
        }),
        ..ContainerState::default()
    });
    let mut ready = PodStatus::default();
    set_ready(&mut pod_with(None), true);
    let mut kwok = pod_with(None);
    set_ready(&mut kwok, true);
    ready.clone_from(kwok.status.as_ref().expect("status"));
    let evicted = PodStatus {
        phase: Some("Failed".into()),
        reason: Some("Evicted".into()),
        ..PodStatus::default()
    };
    let cases: [(Option<PodStatus>, bool, &str); 12] = [
        (None, false, "pulling"),
        (Some(creating.clone()), true, "pulling"),
        (Some(running.clone()), false, "yes"),
        (Some(running), true, "yes"),
        (Some(ready), true, "yes"),
        (Some(exited(0)), true, "yes"),
        (Some(exited(1)), false, "yes"),
        (Some(exited(1)), true, "failed"),
        (Some(waiting("ErrImagePull")), false, "failed"),
        (Some(waiting("ImagePullBackOff")), true, "failed"),
        (Some(evicted.clone()), false, "pulling"),
        (Some(evicted), true, "failed"),
    ];
    for (status, preflight, says) in cases {
        let got = pulled(&pod_with(status.clone()), preflight);
        let word = match &got {
            Pulled::Yes => "yes",
            Pulled::Pulling => "pulling",
            Pulled::Failed { image, .. } => {
                assert_eq!(image, "ceph:v2");
                "failed"
            }
        };
        assert_eq!(word, says, "{status:?} preflight {preflight}");
    }
}

#[test]
fn the_release_report_ends_before_the_pull_counts_and_names_the_release() {
    let running = ContainerState {
        running: Some(ContainerStateRunning::default()),
        ..ContainerState::default()
    };
    let mut status = container_status(running.clone());
    let mut pod = pod_with(None);
    let spec = pod.spec.as_mut().expect("spec");
    let mut report = spec.containers[0].clone();
    report.name = "ceph-release".into();
    spec.containers.push(report);
    // The report still runs: not pulled yet, no release.
    if let Some(statuses) = status.container_statuses.as_mut() {
        statuses[1].state = Some(running);
    }
    pod.status = Some(status.clone());
    assert_eq!(pulled(&pod, false), Pulled::Pulling);
    assert_eq!(reported_release(&pod), None);
    // Ended: pulled, and the release read from what it printed.
    pod.status = Some(container_status(ContainerState {
        running: Some(ContainerStateRunning::default()),
        ..ContainerState::default()
    }));
    assert_eq!(pulled(&pod, false), Pulled::Yes);
    assert_eq!(reported_release(&pod), Some(Release::PACIFIC));
    // An image without ceph-osd reports nothing, and fails nothing.
    if let Some(statuses) = pod
        .status
        .as_mut()
        .and_then(|s| s.container_statuses.as_mut())
    {
        statuses[1] = reported("");
    }
    assert_eq!(pulled(&pod, true), Pulled::Yes);
    assert_eq!(reported_release(&pod), None);
}

#[test]
fn the_plan_carries_the_release_the_next_domains_image_reported() {
    let mut cluster = converged(&with_pre_pull("a", ahead(1)));
    let next = with_pre_pull("b", ahead(1));
    let plan = cluster.reconcile(&next);
    assert_eq!(plan.image_release, None, "nothing reported yet");
    set_pull_status(
        &mut cluster,
        "h1",
        &container_status(ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..ContainerState::default()
        }),
    );
    let plan = cluster.reconcile(&next);
    assert_eq!(plan.image_release, Some(Release::PACIFIC));
}

proptest! {
    /// Whatever the number of hosts, domains ahead and pulls that fail or hang: no OSD pod
    /// stops on a node whose pull failed, none before its node pulled or its deadline passed,
    /// and no pre-pull pod is left once the rollout is done.
    #[test]
    fn no_osd_stops_before_its_images(
        hosts in 1usize..=4,
        domains_ahead in 1i32..=3,
        failing in proptest::option::of(0usize..4),
        hanging in proptest::option::of(0usize..4),
    ) {
        let names: Vec<String> = (1..=hosts).map(|i| format!("h{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let spec = PrePullSpec { deadline_seconds: Some(30), ..ahead(domains_ahead) };
        let make = |marker: &str| {
            let mut cr = cr(UpdateDomain::Host, &names, &["/dev/sdb"], marker);
            cr.spec.pre_pull = Some(spec.clone());
            cr
        };
        let mut cluster = converged(&make("a"));
        let failing = failing.and_then(|i| names.get(i)).map(|h| (*h).to_owned());
        let hanging = hanging.and_then(|i| names.get(i)).map(|h| (*h).to_owned());
        let next = make("b");
        for _ in 0..80 {
            let pulls_before: Vec<(String, Pulled, i64)> = (pre_pull_pods(&cluster).into_iter())
                .map(|p| (node_of(p).to_owned(), pulled(p, false),
                          p.metadata.creation_timestamp.as_ref().map_or(0, |t| t.0.as_second())))
                .collect();
            let plan = cluster.reconcile(&next);
            for host in replaced_hosts(&plan) {
                prop_assert!(Some(&host) != failing.as_ref(), "{host} stopped though its pull failed");
                let pull = pulls_before.iter().find(|(n, _, _)| *n == host);
                prop_assert!(pull.is_some(), "{host} stopped without a pre-pull pod");
                let (_, state, created) = pull.expect("checked");
                let overdue = cluster.clock >= created + 30;
                prop_assert!(*state == Pulled::Yes || overdue, "{host} stopped before pulling");
            }
            cluster.finish_terminations();
            make_osd_pods_ready(&mut cluster);
            for pod in &mut cluster.pods {
                if !labels::is_pre_pull(pod) { continue; }
                let node = node_of(pod).to_owned();
                if Some(&node) == failing.as_ref() {
                    pod.status = Some(waiting("ErrImagePull"));
                } else if Some(&node) != hanging.as_ref() {
                    set_ready(pod, true);
                }
            }
            cluster.clock += 7;
        }
        let done = cluster.reconcile(&next);
        if failing.is_none() {
            prop_assert_eq!(done.summary.out_of_date, 0);
            prop_assert!(pre_pull_pods(&cluster).is_empty());
        } else {
            prop_assert!(done.summary.out_of_date > 0, "the failed node's OSD still runs");
            let c = condition(&done, "PrePull");
            prop_assert_eq!(c.reason.as_str(), "PullFailed");
        }
    }
}
