use super::*;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("time")
}

#[test]
fn a_step_the_failed_plan_ended_stays_recorded() {
    let step = CephStep {
        keys: vec!["h:/dev/sdb".into()],
        osds: Vec::new(),
        noout: vec![3],
        started: Time(at(0)),
        drain: None,
        domains: std::collections::BTreeMap::new(),
    };
    let previous = CephOsdStatus {
        ceph_step: Some(step.clone()),
        ..CephOsdStatus::default()
    };
    let deadline = SignedDuration::from_secs(600);
    let ended = CephOsdStatus::default();
    let failed = failed_status(&ended, &previous, at(10), Failure::Ceph, "x", deadline);
    assert_eq!(failed.and_then(|s| s.ceph_step), Some(step.clone()));
    // A plan that opened a step of its own keeps that one.
    let mut next = step.clone();
    next.keys = vec!["i:/dev/sdb".into()];
    let opened = CephOsdStatus {
        ceph_step: Some(next.clone()),
        ..CephOsdStatus::default()
    };
    let failed = failed_status(&opened, &previous, at(10), Failure::Ceph, "x", deadline);
    assert_eq!(failed.and_then(|s| s.ceph_step), Some(next));
}

#[test]
fn a_failure_is_a_condition_that_keeps_its_transition_time() {
    let planned = CephOsdStatus {
        observed_generation: Some(3),
        ..CephOsdStatus::default()
    };
    let deadline = SignedDuration::from_secs(600);
    let first = failed_status(
        &planned,
        &CephOsdStatus::default(),
        at(10),
        Failure::Create,
        "quota",
        deadline,
    )
    .expect("a new condition");
    let failed = first
        .conditions
        .iter()
        .find(|c| c.type_ == "ReconcileFailed")
        .expect("condition");
    assert_eq!(
        (
            failed.status.as_str(),
            failed.reason.as_str(),
            failed.message.as_str()
        ),
        ("True", "CreateFailed", "quota")
    );
    assert_eq!(failed.observed_generation, Some(3));
    // Failing again later: the same status, so nothing is written.
    assert_eq!(
        failed_status(&planned, &first, at(20), Failure::Create, "quota", deadline),
        None
    );
    // Another failure is.
    let other = failed_status(
        &planned,
        &first,
        at(30),
        Failure::Delete,
        "webhook",
        deadline,
    )
    .expect("a changed condition");
    let failed = other
        .conditions
        .iter()
        .find(|c| c.type_ == "ReconcileFailed")
        .expect("condition");
    assert_eq!(failed.reason, "DeleteFailed");
    // Still True since 10: the transition time stays.
    assert_eq!(failed.last_transition_time, Time(at(10)));
    assert_ne!(other.phase, Some(Phase::Stalled));
}

#[test]
fn failing_past_the_progress_deadline_is_stalled() {
    let planned = CephOsdStatus {
        phase: Some(Phase::Progressing),
        ..CephOsdStatus::default()
    };
    let deadline = SignedDuration::from_secs(600);
    let first = failed_status(
        &planned,
        &CephOsdStatus::default(),
        at(10),
        Failure::Create,
        "too long",
        deadline,
    )
    .expect("failed");
    assert_eq!(first.phase, Some(Phase::Progressing));
    let early = failed_status(
        &planned,
        &first,
        at(609),
        Failure::Create,
        "too long",
        deadline,
    );
    assert_eq!(early, None, "nothing new before the deadline");
    let late = failed_status(
        &planned,
        &first,
        at(610),
        Failure::Create,
        "too long",
        deadline,
    )
    .expect("stalled");
    assert_eq!(late.phase, Some(Phase::Stalled));
    assert_eq!(
        of(&late, "Stalled"),
        pair("True", "ProgressDeadlineExceeded")
    );
    let message = &late
        .conditions
        .iter()
        .find(|c| c.type_ == "Stalled")
        .expect("stalled")
        .message;
    assert!(
        message.contains("too long") && message.contains("1970-01-01T00:00:10Z"),
        "{message}"
    );
    // Still failing later: the same status, no write.
    assert_eq!(
        failed_status(
            &planned,
            &late,
            at(900),
            Failure::Create,
            "too long",
            deadline
        ),
        None
    );
    // An invalid spec stays the phase that says so.
    let error = CephOsdStatus {
        phase: Some(Phase::Error),
        ..planned
    };
    let late = failed_status(
        &error,
        &first,
        at(610),
        Failure::Create,
        "too long",
        deadline,
    )
    .expect("stalled");
    assert_eq!(late.phase, Some(Phase::Error));
}

fn input<'a>(
    previous: &'a CephOsdStatus,
    hash: &'a TemplateHash,
    summary: &'a Summary,
) -> StatusInput<'a> {
    StatusInput {
        previous,
        generation: Some(2),
        now: at(100),
        template_hash: hash,
        summary,
        paused: false,
        halted: None,
        halted_by_budget: false,
        held_by: None,
        stalled: None,
        spec_problems: &[],
        pending_actions: false,
        current_update: Vec::new(),
        foreign_pods: Vec::new(),
        unschedulable: Vec::new(),
        ceph_gate: &GATE_OFF,
        osd_ids: BTreeMap::new(),
        ceph_step: None,
        disruption_budget: None,
        pre_pull: None,
        budget: None,
        osds_in: None,
        finalized: None,
        marking_in: None,
    }
}

static GATE_OFF: std::sync::LazyLock<GateCondition> = std::sync::LazyLock::new(|| GateCondition {
    holds: false,
    reason: Reason::NotConfigured,
    message: "off".to_owned(),
});

fn settled(n: usize) -> Summary {
    Summary {
        desired: n,
        current: n,
        ready: n,
        updated: n,
        ..Summary::default()
    }
}

fn of(status: &CephOsdStatus, type_: &str) -> (String, String) {
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .expect("condition");
    (c.status.clone(), c.reason.clone())
}

fn pair(status: &str, reason: &str) -> (String, String) {
    (status.to_owned(), reason.to_owned())
}

#[test]
fn a_settled_cephosd_is_ready_and_complete() {
    let (hash, summary, previous) = (
        TemplateHash::of(&serde_json::json!({})),
        settled(3),
        CephOsdStatus::default(),
    );
    let status = compute_status(&input(&previous, &hash, &summary));
    assert_eq!(status.phase, Some(Phase::Ready));
    assert_eq!(of(&status, "Ready"), pair("True", "AllOsdsReady"));
    assert_eq!(of(&status, "Progressing"), pair("False", "Complete"));
    assert_eq!(of(&status, "Stalled"), pair("False", "WithinDeadline"));
    assert_eq!(of(&status, "InvalidSpec"), pair("False", "SpecValid"));
    assert_eq!(of(&status, "Migrating"), pair("False", "NoReplicaSets"));
    assert_eq!(
        (status.desired, status.ready, status.observed_generation),
        (3, 3, Some(2))
    );
    // Pending writes: not converged yet, though every pod is Ready.
    let mut busy = input(&previous, &hash, &summary);
    busy.pending_actions = true;
    let busy = compute_status(&busy);
    assert_eq!(busy.phase, Some(Phase::Progressing));
    assert_eq!(of(&busy, "Progressing"), pair("True", "Reconciling"));
}

#[test]
fn the_phase_follows_spec_problems_then_stalls_then_pause() {
    let (hash, previous) = (
        TemplateHash::of(&serde_json::json!({})),
        CephOsdStatus::default(),
    );
    let summary = Summary {
        out_of_date: 1,
        ..settled(2)
    };
    let problems = [SpecProblem {
        reason: Reason::ConflictingDevices,
        message: "h:/dev/sdb twice".into(),
    }];
    let mut all = input(&previous, &hash, &summary);
    all.spec_problems = &problems;
    all.stalled = Some(Stall {
        reason: Reason::ProgressDeadlineExceeded,
        message: "late",
    });
    all.paused = true;
    let status = compute_status(&all);
    assert_eq!(status.phase, Some(Phase::Error));
    assert_eq!(
        of(&status, "InvalidSpec"),
        pair("True", "ConflictingDevices")
    );
    all.spec_problems = &[];
    let status = compute_status(&all);
    assert_eq!(status.phase, Some(Phase::Stalled));
    assert_eq!(
        of(&status, "Progressing"),
        pair("False", "ProgressDeadlineExceeded")
    );
    assert_eq!(
        of(&status, "Stalled"),
        pair("True", "ProgressDeadlineExceeded")
    );
    // A new daemon's crash: its own reason on both.
    all.stalled = Some(Stall {
        reason: Reason::OsdCrashed,
        message: "osd.3 crashed",
    });
    let status = compute_status(&all);
    assert_eq!(of(&status, "Stalled"), pair("True", "OsdCrashed"));
    assert_eq!(of(&status, "Progressing"), pair("False", "OsdCrashed"));
    all.stalled = None;
    let status = compute_status(&all);
    assert_eq!(status.phase, Some(Phase::Paused));
    assert_eq!(of(&status, "Progressing"), pair("False", "Paused"));
}

#[test]
fn a_halt_is_told_only_when_no_replacement_of_ours_is_under_way() {
    let (hash, previous) = (
        TemplateHash::of(&serde_json::json!({})),
        CephOsdStatus::default(),
    );
    let summary = Summary {
        out_of_date: 1,
        ready: 1,
        ..settled(2)
    };
    let mut halted = input(&previous, &hash, &summary);
    halted.halted = Some("waiting for pod x to become Ready");
    let status = compute_status(&halted);
    assert_eq!(of(&status, "Progressing"), pair("False", "Halted"));
    assert_eq!(of(&status, "Ready"), pair("False", "OsdsNotReady"));
    halted.current_update = vec!["h1".into()];
    let status = compute_status(&halted);
    assert_eq!(of(&status, "Progressing"), pair("True", "RollingUpdate"));
    assert_eq!(status.current_update, ["h1"]);
}

#[test]
fn transition_times_are_kept_while_a_condition_keeps_its_status() {
    let (hash, summary) = (TemplateHash::of(&serde_json::json!({})), settled(1));
    let first = compute_status(&input(&CephOsdStatus::default(), &hash, &summary));
    let mut later = input(&first, &hash, &summary);
    later.now = at(500);
    let again = compute_status(&later);
    assert_eq!(
        again, first,
        "an unchanged cluster yields an identical status"
    );
    let unready = Summary {
        ready: 0,
        ..settled(1)
    };
    let mut changed = input(&first, &hash, &unready);
    changed.now = at(600);
    let changed = compute_status(&changed);
    let time = |s: &CephOsdStatus, t: &str| {
        s.conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| c.last_transition_time.clone())
    };
    assert_eq!(time(&changed, "Ready"), Some(Time(at(600))));
    assert_eq!(time(&changed, "Stalled"), Some(Time(at(100))));
}

/// The gate following the step on `h:/dev/sdb`: `holds` as Ceph finishes it normally.
fn gate_on(holds: bool) -> GateCondition {
    GateCondition {
        holds,
        reason: if holds {
            Reason::StepInProgress
        } else {
            Reason::CephBlocked("CephUnavailable")
        },
        message: "a step is under way on h:/dev/sdb: the new daemon of osd.3 is not up yet"
            .to_owned(),
    }
}

fn open_step() -> CephStep {
    CephStep {
        keys: vec!["h:/dev/sdb".into()],
        osds: vec![crate::crd::StepOsd { id: 3, up_from: 5 }],
        noout: vec![3],
        started: Time(at(0)),
        drain: None,
        domains: std::collections::BTreeMap::new(),
    }
}

#[test]
fn complete_waits_for_the_last_ceph_step_to_end() {
    let (hash, summary, previous) = (
        TemplateHash::of(&serde_json::json!({})),
        settled(3),
        CephOsdStatus::default(),
    );
    let gate = gate_on(true);
    let mut ending = input(&previous, &hash, &summary);
    ending.ceph_step = Some(open_step());
    ending.ceph_gate = &gate;
    let status = compute_status(&ending);
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert_eq!(of(&status, "Progressing"), pair("True", "CephStepEnding"));
    assert_eq!(of(&status, "Ready"), pair("True", "AllOsdsReady"));
    let progressing = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .expect("Progressing");
    assert!(
        progressing
            .message
            .starts_with("the last Ceph step (on h:/dev/sdb) has not ended: a step is under way"),
        "{}",
        progressing.message
    );
    // Ceph away while the step is open: a halt, said as one.
    let blocked = gate_on(false);
    ending.ceph_gate = &blocked;
    let status = compute_status(&ending);
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert_eq!(of(&status, "Progressing"), pair("False", "Halted"));
    // The step ended: complete.
    ending.ceph_step = None;
    ending.ceph_gate = &gate;
    let status = compute_status(&ending);
    assert_eq!(status.phase, Some(Phase::Ready));
    assert_eq!(of(&status, "Progressing"), pair("False", "Complete"));
    // A step kept only to be said (the operator has no Ceph to end it): not followed.
    ending.ceph_step = Some(open_step());
    ending.ceph_gate = &GATE_OFF;
    assert_eq!(compute_status(&ending).phase, Some(Phase::Ready));
}

#[test]
fn a_step_ending_mid_rollout_is_progress_not_a_halt() {
    let (hash, previous) = (
        TemplateHash::of(&serde_json::json!({})),
        CephOsdStatus::default(),
    );
    let summary = Summary {
        out_of_date: 1,
        updated: 1,
        ..settled(2)
    };
    let gate = gate_on(true);
    let mut ending = input(&previous, &hash, &summary);
    ending.halted =
        Some("the step on h:/dev/sdb has not ended: the new daemon of osd.3 is not up yet");
    ending.ceph_step = Some(open_step());
    ending.ceph_gate = &gate;
    let status = compute_status(&ending);
    assert_eq!(of(&status, "Progressing"), pair("True", "CephStepEnding"));
    let blocked = gate_on(false);
    ending.ceph_gate = &blocked;
    let status = compute_status(&ending);
    assert_eq!(of(&status, "Progressing"), pair("False", "Halted"));
    // Ceph being asked about the next step: progress too.
    let asking = GateCondition {
        holds: true,
        reason: Reason::Asking,
        message: "asking Ceph whether i:/dev/sdb may stop".to_owned(),
    };
    ending.ceph_step = None;
    ending.halted = Some("asking Ceph whether i:/dev/sdb may stop");
    ending.ceph_gate = &asking;
    let status = compute_status(&ending);
    assert_eq!(of(&status, "Progressing"), pair("True", "AskingCeph"));
}

/// An OSD the operator marks in once its daemon is up keeps the CephOSD from converging; an
/// OSD someone else has out does not, but `Complete` names it and `OsdsIn` says why.
#[test]
fn out_osds_are_never_complete_silently() {
    let previous = CephOsdStatus::default();
    let hash = TemplateHash::of(&serde_json::json!({}));
    let summary = settled(3);
    let marking = "osd.2 (h3:/dev/sdb) back in the spec: marked in once its daemon is up";
    let out = StatedCondition {
        holds: false,
        reason: Reason::OsdsOut,
        message: marking.to_owned(),
    };
    let mut waiting = input(&previous, &hash, &summary);
    waiting.osds_in = Some(&out);
    waiting.marking_in = Some(marking);
    let status = compute_status(&waiting);
    assert_eq!(status.phase, Some(Phase::Progressing));
    let progressing = find(&status, "Progressing");
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("True", "MarkingIn")
    );
    assert_eq!(progressing.message, marking);
    let osds_in = find(&status, "OsdsIn");
    assert_eq!(
        (osds_in.status.as_str(), osds_in.reason.as_str()),
        ("False", "OsdsOut")
    );

    let admins = StatedCondition {
        holds: false,
        reason: Reason::OsdsOut,
        message: "osd.1 (h2:/dev/sdb) out in Ceph, not marked out by the operator".to_owned(),
    };
    let mut admin = input(&previous, &hash, &summary);
    admin.osds_in = Some(&admins);
    let status = compute_status(&admin);
    assert_eq!(status.phase, Some(Phase::Ready));
    let progressing = find(&status, "Progressing");
    assert_eq!(progressing.reason, "Complete");
    assert!(
        progressing
            .message
            .contains("osd.1 (h2:/dev/sdb) out in Ceph"),
        "{}",
        progressing.message
    );

    // Without Ceph's map: no OsdsIn at all.
    let status = compute_status(&input(&previous, &hash, &summary));
    assert!(status.conditions.iter().all(|c| c.type_ != "OsdsIn"));
}

fn find<'s>(status: &'s CephOsdStatus, type_: &str) -> &'s Condition {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .expect("condition")
}
