//! Rollout controls, status and events: the status counts and phase through a rollout,
//! `paused`, `maxUnavailable`, `minReadySeconds` and the deadline, and what is told in
//! events.

use super::*;

fn replaced(plan: &Plan) -> Vec<String> {
    plan.replacing.iter().map(ToString::to_string).collect()
}

#[test]
fn status_counts_and_phase_follow_a_rollout() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = Cluster::default();
    let plan = cluster.reconcile(&old);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Progressing));
    assert_eq!((plan.status.desired, plan.status.current), (2, 0));
    cluster.make_all_ready();
    cluster.reconcile(&old);
    let plan = cluster.reconcile(&old);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Ready));
    assert_eq!(
        (
            plan.status.ready,
            plan.status.updated,
            plan.status.out_of_date
        ),
        (2, 2, 0)
    );
    assert_eq!(condition(&plan, "Ready").status, "True");
    assert_eq!(condition(&plan, "Progressing").reason, "Complete");
    assert_eq!(
        plan.status.template_hash.as_deref(),
        Some(plan.template_hash.as_str())
    );

    let new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    let plan = cluster.reconcile(&new);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Progressing));
    assert_eq!(plan.status.out_of_date, 2);
    assert_eq!(plan.status.current_update, ["h1:/dev/sdb"]);
    assert_eq!(condition(&plan, "Progressing").reason, "RollingUpdate");
    cluster.finish_terminations();
    let plan = cluster.reconcile(&new);
    assert_eq!(
        plan.status.current_update,
        ["h1:/dev/sdb"],
        "stays until the successor is Ready"
    );
}

#[test]
fn an_unchanged_cluster_yields_an_identical_status() {
    let cr = cr(UpdateDomain::Host, &["h1", "h2"], &["/dev/sdb"], "a");
    let mut cluster = converged(&cr);
    let first = cluster.reconcile(&cr).status;
    cluster.clock += 3600;
    let second = cluster.reconcile(&cr);
    assert_eq!(first, second.status);
    assert!(second.actions.is_empty() && second.events.is_empty());
}

#[test]
fn paused_stops_replacements_but_not_recreation() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    new.spec.paused = Some(true);
    let plan = cluster.reconcile(&new);
    assert!(replaced(&plan).is_empty());
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Paused));
    assert_eq!(condition(&plan, "Progressing").reason, "Paused");
    assert_eq!(event_reasons(&plan), ["Halted"]);
    assert!(
        cluster.reconcile(&new).events.is_empty(),
        "a persisting halt is told once"
    );
    // Self-healing continues while paused.
    cluster.pods[0].metadata.deletion_timestamp = Some(Time(at(0)));
    cluster.finish_terminations();
    let plan = cluster.reconcile(&new);
    assert_eq!(creates(&plan), ["h1:/dev/sdb"]);
    assert!(replaced(&plan).is_empty());
    // Resume.
    cluster.make_all_ready();
    new.spec.paused = Some(false);
    let plan = cluster.reconcile(&new);
    assert_eq!(replaced(&plan), ["h1:/dev/sdc"]);
}

#[test]
fn max_unavailable_two_replaces_two_domains_at_a_time_never_three() {
    let hosts = ["h1", "h2", "h3", "h4", "h5"];
    let old = cr(UpdateDomain::Osd, &hosts, &["/dev/sdb"], "a");
    let mut cluster = converged(&old);
    let mut new = cr(UpdateDomain::Osd, &hosts, &["/dev/sdb"], "b");
    new.spec.max_unavailable = Some(2);
    let plan = cluster.reconcile(&new);
    assert_eq!(replaced(&plan), ["h1:/dev/sdb", "h2:/dev/sdb"]);
    // One successor Ready: exactly one more domain may start.
    cluster.finish_terminations();
    cluster.reconcile(&new);
    let first_new = cluster
        .live()
        .into_iter()
        .find(|p| annotation(p, labels::HOST) == Some("h1"))
        .map(ResourceExt::name_any)
        .expect("pod");
    set_ready(cluster.pod_mut(&first_new).expect("pod"), true);
    let plan = cluster.reconcile(&new);
    assert_eq!(replaced(&plan), ["h3:/dev/sdb"]);
    let mut max_seen = 0;
    for plan in cluster.settle(&new) {
        max_seen = max_seen.max(plan.status.current_update.len());
    }
    assert!(max_seen <= 2, "{max_seen}");
}

#[test]
fn min_ready_seconds_soaks_a_replacement_before_the_next_step() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    new.spec.min_ready_seconds = Some(30);
    cluster.reconcile(&new);
    cluster.finish_terminations();
    cluster.reconcile(&new);
    // Ready now (lastTransitionTime = now): soaking, so no next step yet.
    for pod in &mut cluster.pods {
        set_ready(pod, true);
        if let Some(c) = pod.status.as_mut().and_then(|s| s.conditions.as_mut()) {
            c[0].last_transition_time = Some(Time(at(cluster.clock)));
        }
    }
    let plan = cluster.reconcile(&new);
    assert!(replaced(&plan).is_empty());
    assert_eq!(plan.summary.unready, 1);
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(30)));
    cluster.clock += 30;
    let plan = cluster.reconcile(&new);
    assert_eq!(replaced(&plan), ["h1:/dev/sdc"]);
}

#[test]
fn a_replacement_past_its_deadline_stalls_visibly_and_recovers_after_the_fix() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut broken = cr(
        UpdateDomain::Osd,
        &["h1"],
        &["/dev/sdb", "/dev/sdc"],
        "broken",
    );
    broken.spec.progress_deadline_seconds = Some(60);
    cluster.reconcile(&broken);
    cluster.finish_terminations();
    cluster.reconcile(&broken); // creates the replacement
    let plan = cluster.reconcile(&broken);
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(60)));
    cluster.clock += 59;
    assert!(cluster.reconcile(&broken).stalled.is_none());
    cluster.clock += 1;
    let plan = cluster.reconcile(&broken);
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Stalled));
    let stalled = condition(&plan, "Stalled");
    assert_eq!(
        (stalled.status.as_str(), stalled.reason.as_str()),
        ("True", "ProgressDeadlineExceeded")
    );
    assert!(
        stalled.message.contains("osd-h1-sdb-") && stalled.message.contains("60s"),
        "{}",
        stalled.message
    );
    assert_eq!(event_reasons(&plan), ["Stalled"]);
    assert!(plan.events[0].warning);
    assert!(cluster.reconcile(&broken).events.is_empty(), "told once");
    cluster.clock += 100;
    let later = cluster.reconcile(&broken);
    assert_eq!(
        condition(&later, "Stalled").message,
        stalled.message,
        "the message does not change while it stays true (no status write per reconcile)"
    );
    assert!(
        stalled
            .message
            .contains("waiting since 1970-01-01T00:00:00Z"),
        "{}",
        stalled.message
    );
    // The fix: the stuck pod becomes out-of-date and is replaced; Stalled clears.
    let mut fixed = broken.clone();
    fixed.spec.pod_template = template("fixed");
    let plan = cluster.reconcile(&fixed);
    assert_eq!(condition(&plan, "Stalled").status, "False");
    assert_eq!(replaced(&plan), ["h1:/dev/sdb"]);
}

#[test]
fn overrides_and_adoptions_are_told() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    cluster.reconcile(&new);
    cluster.finish_terminations();
    cluster.reconcile(&new);
    let stuck = cluster
        .live()
        .into_iter()
        .find(|p| annotation(p, labels::POD_STATE) == Some("wait-for-ready"))
        .map(ResourceExt::name_any)
        .expect("stuck");
    annotate(
        cluster.pod_mut(&stuck).expect("pod"),
        labels::POD_STATE,
        "up-to-date",
    );
    let plan = cluster.reconcile(&new);
    assert!(
        event_reasons(&plan).contains(&"Overridden"),
        "{:?}",
        plan.events
    );

    // Pods without a controller ownerReference, seen by a CR we never reconciled: adopted.
    let mut fresh = Cluster {
        pods: converged(&old).pods,
        ..Cluster::default()
    };
    for pod in &mut fresh.pods {
        pod.metadata.owner_references = None;
    }
    let plan = fresh.reconcile(&old);
    assert_eq!(event_reasons(&plan), ["Adopted", "Adopted"]);
    assert!(plan.actions.is_empty());
    assert!(fresh.reconcile(&old).events.is_empty(), "only once");
}

#[test]
fn conflicting_devices_set_invalid_spec_and_phase_error() {
    let mut cr = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut entry = cr.spec.storage[0].clone();
    entry.osds[0].db = Some("/dev/nvme0n1".into());
    cr.spec.storage.push(entry);
    let plan = plan(
        &cr,
        &Observed::pods(&[]),
        &mut CountingSuffix::default(),
        at(0),
    );
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Error));
    let invalid = condition(&plan, "InvalidSpec");
    assert_eq!(
        (invalid.status.as_str(), invalid.reason.as_str()),
        ("True", "ConflictingDevices")
    );
    assert!(invalid.message.contains("h1:/dev/sdb"));
}

#[test]
fn an_old_pod_stuck_terminating_past_the_deadline_stalls() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "a");
    let mut cluster = converged(&old);
    let mut new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb", "/dev/sdc"], "b");
    new.spec.progress_deadline_seconds = Some(60);
    cluster.clock = 1000;
    cluster.reconcile(&new);
    // The simulated API stamps deletions at the epoch; put it at "now" like a real one.
    for pod in &mut cluster.pods {
        if pod.metadata.deletion_timestamp.is_some() {
            pod.metadata.deletion_timestamp = Some(Time(at(1000)));
        }
    }
    let plan = cluster.reconcile(&new);
    assert!(plan.stalled.is_none());
    assert_eq!(plan.requeue_after, Some(SignedDuration::from_secs(60)));
    cluster.clock += 60;
    let plan = cluster.reconcile(&new);
    let stalled = plan.stalled.expect("stalled");
    assert!(
        stalled.contains("osd-h1-sdb-") && stalled.contains("terminating"),
        "{stalled}"
    );
    assert_eq!(plan.status.phase, Some(crate::crd::Phase::Stalled));
}

#[test]
fn the_last_replacement_still_reads_as_a_rolling_update() {
    let old = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "a");
    let mut cluster = converged(&old);
    let new = cr(UpdateDomain::Osd, &["h1"], &["/dev/sdb"], "b");
    cluster.reconcile(&new);
    cluster.finish_terminations();
    cluster.reconcile(&new);
    let plan = cluster.reconcile(&new);
    assert_eq!((plan.status.out_of_date, plan.status.unready), (0, 1));
    assert_eq!(condition(&plan, "Progressing").reason, "RollingUpdate");
    assert_eq!(plan.status.current_update, ["h1:/dev/sdb"]);
}

#[test]
fn a_pod_the_scheduler_cannot_place_is_told_once_with_its_node() {
    let cr = cr(UpdateDomain::Osd, &["w1", "w9"], &["/dev/sdb"], "a");
    let mut cluster = Cluster::default();
    cluster.reconcile(&cr);
    let message = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.";
    for pod in &mut cluster.pods {
        let scheduled = annotation(pod, labels::HOST) == Some("w1");
        set_ready(pod, scheduled);
        if !scheduled {
            let status = pod.status.get_or_insert_with(Default::default);
            status.phase = Some("Pending".into());
            status.conditions = Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "False".into(),
                reason: Some("Unschedulable".into()),
                message: Some(message.into()),
                ..Default::default()
            }]);
        }
    }
    let waiting = format!("w9:/dev/sdb waits for node w9: {message}");

    let plan = cluster.reconcile(&cr);
    assert_eq!(plan.status.unschedulable, std::slice::from_ref(&waiting));
    let progressing = condition(&plan, "Progressing");
    assert_eq!(progressing.reason, "WaitingForNodes");
    assert_eq!(progressing.message, format!("OSD {waiting}"));
    let told: Vec<&PlannedEvent> = plan
        .events
        .iter()
        .filter(|e| e.reason == EventReason::Unschedulable)
        .collect();
    assert_eq!(told.len(), 1);
    assert!(told[0].warning && told[0].note == format!("OSD {waiting}"));
    assert!(told[0]
        .pod
        .as_deref()
        .is_some_and(|p| p.starts_with("osd-w9-sdb-")));

    // Told once, not at every reconcile; gone from the status once the pod is placed.
    let again = cluster.reconcile(&cr);
    assert!(!event_reasons(&again).contains(&"Unschedulable"));
    assert_eq!(again.status.unschedulable, [waiting]);
    for pod in &mut cluster.pods {
        set_ready(pod, true);
    }
    let placed = cluster.reconcile(&cr);
    assert!(placed.status.unschedulable.is_empty());
}
