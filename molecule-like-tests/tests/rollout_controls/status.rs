//! What the status says: counts, phase and conditions at each step, `Stalled` past the
//! progress deadline, refused creations reported and cleared.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::{CephOsdStatus, Phase};
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{
    describe_events, hold, Converged, Scenario, CONVERGE, ROLLOUT,
};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, never_ready_revision, ready_again_revision, storage, CR,
};
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::paths::kubectl;
use molecule_like_tests::recording::pods::WatchRecorder;
use serde_json::json;

use crate::common::{
    check_converged_status, check_rolled_out, cond, condition, counts, create_osds, pod_on,
    uid_map, untouched, wait_status,
};

// 1 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c1_status_counts_phase_and_conditions_at_each_step_of_a_rollout() -> anyhow::Result<()> {
    let s = Scenario::converge("status").await?;
    let data = ["/dev/sdb", "/dev/sdc", "/dev/sdd"];
    let w1 = s.host("w1");
    let [k1, k2, k3] = data.map(|d| OsdKey::new(&w1, d));
    let Converged {
        want, cr, hash: h1, ..
    } = create_osds(&s, &[&w1], &data, "OSD", json!({})).await?;
    let st = wait_status(&s, "phase Ready", CONVERGE, |st| {
        st.phase == Some(Phase::Ready)
    })
    .await?;
    check_converged_status(&st, 3, &h1, cr.metadata.generation)?;

    // Every status write from here on.
    let by_name = format!("metadata.name={CR}");
    let watch = WatchRecorder::start(
        s.crs.clone(),
        ListParams::default().fields(&by_name),
        WatchParams::default().fields(&by_name),
    )
    .await?;
    let (cr, h2) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let gen2 = cr.metadata.generation;
    anyhow::ensure!(h2 != h1, "the template edit did not change the hash");
    s.wait_converged(CR, &want, &h2, ROLLOUT).await?;
    let last = wait_status(&s, "Ready on the new template", CONVERGE, |st| {
        st.phase == Some(Phase::Ready)
            && st.template_hash.as_deref() == Some(h2.as_str())
            && st.observed_generation == gen2
    })
    .await?;
    check_converged_status(&last, 3, &h2, gen2)?;

    // The statuses the operator wrote for the new generation, in order (the recorder caught
    // up with the final status read above).
    let mut snaps: Vec<CephOsdStatus> = Vec::new();
    for e in watch.caught_up_events().await? {
        let Some(st) = e.object.status else { continue };
        if st.observed_generation == gen2 && snaps.last() != Some(&st) {
            snaps.push(st);
        }
    }
    let shown = snaps
        .iter()
        .map(|st| {
            format!(
                "  phase={:?} counts={:?} currentUpdate={:?} Ready={:?} Progressing={:?}",
                st.phase,
                counts(st),
                st.current_update,
                cond(st, "Ready"),
                cond(st, "Progressing")
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let ctx = || format!("status writes of generation {gen2:?}:\n{shown}");
    anyhow::ensure!(snaps.len() >= 4, "too few status writes\n{}", ctx());
    anyhow::ensure!(
        snaps.last() == Some(&last),
        "the last write is not the final status\n{}",
        ctx()
    );
    let (seen_out_of_date, updates) = check_status_writes(&snaps, &h2, gen2, &ctx)?;
    anyhow::ensure!(
        [0, 1, 2, 3].iter().all(|n| seen_out_of_date.contains(n)),
        "outOfDate did not step 3 → 2 → 1 → 0: {seen_out_of_date:?}\n{}",
        ctx()
    );
    let expected: Vec<Vec<String>> = [&k1, &k2, &k3]
        .iter()
        .map(|k| vec![k.to_string()])
        .collect();
    anyhow::ensure!(
        updates == expected,
        "currentUpdate went {updates:?}, expected {expected:?}\n{}",
        ctx()
    );

    // Printer columns, in the CRD and through kubectl.
    check_printer_columns(&s).await?;
    s.assert_one_pod_per_key().await?;
    s.destroy().await
}

/// Each status write of the rollout to generation `generation` (template `hash`): consistent
/// counts (at most one OSD down), outOfDate never up and updated never down, conditions of
/// that generation, phase Progressing and one OSD in `currentUpdate` until the last write.
/// Returns the outOfDate counts seen and the `currentUpdate`s in order; `ctx` describes the
/// writes for an error.
fn check_status_writes(
    snaps: &[CephOsdStatus],
    hash: &str,
    generation: Option<i64>,
    ctx: &impl Fn() -> String,
) -> anyhow::Result<(BTreeSet<i64>, Vec<Vec<String>>)> {
    let mut seen_out_of_date = BTreeSet::new();
    let mut updates: Vec<Vec<String>> = Vec::new();
    for (i, st) in snaps.iter().enumerate() {
        let [desired, current, ready, updated, out_of_date, unready, invalid] = counts(st);
        anyhow::ensure!(
            st.template_hash.as_deref() == Some(hash),
            "write #{i}: templateHash {:?}\n{}",
            st.template_hash,
            ctx()
        );
        anyhow::ensure!(
            desired == 3
                && invalid == 0
                && updated + out_of_date == current
                && (2..=3).contains(&current)
                && ready <= current
                && unready <= 1,
            "write #{i}: inconsistent counts {:?} (maxUnavailable 1: at most one OSD down)\n{}",
            counts(st),
            ctx()
        );
        if let Some(prev) = i.checked_sub(1).map(|j| &snaps[j]) {
            anyhow::ensure!(
                st.out_of_date <= prev.out_of_date && st.updated >= prev.updated,
                "write #{i}: outOfDate went up or updated went down\n{}",
                ctx()
            );
        }
        for c in &st.conditions {
            anyhow::ensure!(
                c.observed_generation == generation,
                "write #{i}: condition {} at generation {:?}\n{}",
                c.type_,
                c.observed_generation,
                ctx()
            );
        }
        seen_out_of_date.insert(out_of_date);
        if i + 1 < snaps.len() {
            anyhow::ensure!(
                st.phase == Some(Phase::Progressing),
                "write #{i}: phase {:?} during the rollout\n{}",
                st.phase,
                ctx()
            );
            anyhow::ensure!(
                cond(st, "Ready") == ("False".into(), "OsdsNotReady".into())
                    || (ready == 3 && updated == 3),
                "write #{i}: Ready condition {:?}\n{}",
                cond(st, "Ready"),
                ctx()
            );
            // Empty only in the last step: every pod Ready, its pod-state write pending.
            anyhow::ensure!(
                st.current_update.len() == 1 || (ready == 3 && updated == 3 && current == 3),
                "write #{i}: currentUpdate {:?} (one OSD at a time)\n{}",
                st.current_update,
                ctx()
            );
            if out_of_date > 0 {
                let progressing = condition(st, "Progressing");
                anyhow::ensure!(
                    cond(st, "Progressing") == ("True".into(), "RollingUpdate".into())
                        && progressing
                            .is_some_and(|c| c.message.contains(st.current_update[0].as_str())),
                    "write #{i}: Progressing {progressing:?}\n{}",
                    ctx()
                );
            }
        }
        if updates.last() != Some(&st.current_update) && !st.current_update.is_empty() {
            updates.push(st.current_update.clone());
        }
    }
    Ok((seen_out_of_date, updates))
}

/// The CRD's printer columns, and `kubectl get cephosd` showing them (when kubectl is here).
async fn check_printer_columns(s: &Scenario) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(s.client.clone());
    let crd = crds.get("cephosds.ceph.elemental.net").await?;
    let columns: Vec<String> = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == "v1alpha1")
        .and_then(|v| v.additional_printer_columns.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.name)
        .collect();
    anyhow::ensure!(
        columns == ["Ready", "Up-to-date", "Desired", "Phase", "Age"],
        "printer columns {columns:?}"
    );
    if let Some(kubectl) = kubectl() {
        let out = std::process::Command::new(&kubectl)
            .args(["get", "cephosd", "-n", &s.namespace])
            .env("KUBECONFIG", molecule_like_tests::paths::kubeconfig_path())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        anyhow::ensure!(
            out.status.success()
                && lines.len() == 2
                && lines[0] == ["NAME", "READY", "UP-TO-DATE", "DESIRED", "PHASE", "AGE"]
                && lines[1][..5] == [CR, "3", "3", "3", "Ready"],
            "kubectl get cephosd: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        eprintln!("kubectl not installed: skipping the kubectl get cephosd check");
    }
    Ok(())
}

// 2 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c2_progress_deadline_sets_stalled_and_the_fix_clears_it() -> anyhow::Result<()> {
    let s = Scenario::converge_with("stalled", &OperatorOptions { resync_seconds: 2 }).await?;
    let data = ["/dev/sdb", "/dev/sdc"];
    let w1 = s.host("w1");
    let [k1, k2] = data.map(|d| OsdKey::new(&w1, d));
    let deadline = json!({"progressDeadlineSeconds": 5});
    let Converged { want, pods: v1, .. } = create_osds(&s, &[&w1], &data, "OSD", deadline).await?;

    let (_, h2) = s
        .patch_template_metadata(CR, never_ready_revision("2"))
        .await?;
    let stuck = s
        .wait_until("k1's never-Ready replacement exists", ROLLOUT, || {
            pod_on(&s, &k1, &h2)
        })
        .await?;
    let stuck_name = stuck.name_any();
    // Before the deadline: progressing, not stalled.
    let st = s.cr_status(CR).await?.unwrap_or_default();
    let created = stuck
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0)
        .ok_or_else(|| anyhow::anyhow!("pod without creationTimestamp"))?;
    let st = wait_status(&s, "phase Stalled", Duration::from_secs(30), |st| {
        st.phase == Some(Phase::Stalled)
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}\nstatus before: {st:?}"))?;
    let stalled = condition(&st, "Stalled")
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no Stalled condition: {st:?}"))?;
    anyhow::ensure!(
        (stalled.status.as_str(), stalled.reason.as_str()) == ("True", "ProgressDeadlineExceeded")
            && stalled.message.contains(&stuck_name)
            && stalled.message.contains(&k1.to_string())
            && stalled.message.contains("5s"),
        "Stalled condition {stalled:?} (stuck pod {stuck_name})"
    );
    let waited = stalled
        .last_transition_time
        .0
        .duration_since(created)
        .as_secs();
    anyhow::ensure!(
        waited >= 5,
        "Stalled after {waited}s, before the 5 s deadline ({stalled:?})"
    );
    anyhow::ensure!(
        cond(&st, "Progressing") == ("False".into(), "ProgressDeadlineExceeded".into()),
        "Progressing {:?}",
        cond(&st, "Progressing")
    );
    anyhow::ensure!(
        cond(&st, "Ready").0 == "False" && st.unready == 1 && st.out_of_date == 1,
        "{st:?}"
    );
    let stalled_events = |events: &[K8sEvent]| -> Vec<K8sEvent> {
        events
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Stalled"))
            .cloned()
            .collect()
    };
    let events = s
        .wait_until("a Stalled event", Duration::from_secs(10), || async {
            let events = s.cr_events(CR).await?;
            Ok((!stalled_events(&events).is_empty()).then_some(events))
        })
        .await?;
    let ev = &stalled_events(&events)[0];
    anyhow::ensure!(
        ev.type_.as_deref() == Some("Warning")
            && ev.note.as_deref().is_some_and(|n| n.contains(&stuck_name)),
        "Stalled event {ev:?}"
    );

    // Halted: nothing else is deleted, the stuck pod stays, Stalled stays, one event only.
    let others = uid_map(&v1, &[&k2]);
    hold(Duration::from_secs(5), || async {
        untouched(&s, &others).await?;
        anyhow::ensure!(
            pod_on(&s, &k1, &h2).await?.map(|p| p.name_any()) == Some(stuck_name.clone()),
            "the stuck pod was replaced"
        );
        let st = s.cr_status(CR).await?.unwrap_or_default();
        anyhow::ensure!(st.phase == Some(Phase::Stalled), "phase {:?}", st.phase);
        Ok(())
    })
    .await?;
    let events = s.cr_events(CR).await?;
    anyhow::ensure!(
        stalled_events(&events).len() == 1,
        "one Stalled event per state change expected:\n{}",
        describe_events(&events)
    );

    // The fix: the stuck pod is out of date, the rollout restarts and completes.
    let (cr, h3) = s
        .patch_template_metadata(CR, ready_again_revision("3"))
        .await?;
    check_rolled_out(&s, "Ready after the fix", &want, &h3, &cr).await?;
    s.assert_one_pod_per_key().await?;
    s.destroy().await
}

/// A refused write is visible, and clears: with a ResourceQuota of one pod in the namespace,
/// the second OSD's pod creation is refused. The CephOSD gets a `CreateFailed` Warning event
/// and a `ReconcileFailed` condition naming the quota, the first pod runs; once the quota is
/// deleted, a retry creates the pod, the condition goes and the CephOSD becomes Ready.
#[tokio::test]
async fn c9_refused_creation_is_reported_and_cleared_after_the_cause_goes() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ResourceQuota;
    let s = Scenario::converge("quota").await?;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client.clone(), &s.namespace);
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "one-pod"},
        "spec": {"hard": {"pods": "1"}},
    }))?;
    quotas.create(&PostParams::default(), &quota).await?;
    // Admission refuses every pod until the quota controller has computed the usage.
    let counting = Instant::now();
    s.wait_until("the quota controller counts pods", CONVERGE, || async {
        let quota = quotas.get("one-pod").await?;
        let used = quota.status.and_then(|st| st.used).unwrap_or_default();
        Ok(used.contains_key("pods").then_some(()))
    })
    .await?;

    let counted = counting.elapsed();
    let hosts = s.hosts(["quota-a", "quota-b"]);
    let data = ["/dev/sdb"];
    s.create_cr(&cephosd(
        CR,
        storage(&hosts, &data),
        "OSD",
        fast_sample_template()?,
    ))
    .await?;
    let failed = s
        .wait_until("a ReconcileFailed condition", CONVERGE, || async {
            let status = s.cr_status(CR).await?.unwrap_or_default();
            Ok(status
                .conditions
                .into_iter()
                .find(|c| c.type_ == "ReconcileFailed" && c.status == "True"))
        })
        .await?;
    anyhow::ensure!(
        failed.reason == "CreateFailed" && failed.message.contains("exceeded quota"),
        "condition {failed:?}"
    );
    let events = s.cr_events(CR).await?;
    anyhow::ensure!(
        events.iter().any(|e| e.type_.as_deref() == Some("Warning")
            && e.reason.as_deref() == Some("CreateFailed")
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains("exceeded quota"))),
        "no CreateFailed Warning event: {}",
        describe_events(&events)
    );
    anyhow::ensure!(
        s.owned_pods(CR).await?.len() == 1,
        "expected the one pod the quota allows"
    );

    quotas.delete("one-pod", &DeleteParams::default()).await?;
    let lifted = Instant::now();
    let status = s
        .wait_until("Ready without ReconcileFailed", ROLLOUT, || async {
            let status = s.cr_status(CR).await?.unwrap_or_default();
            let failing = status
                .conditions
                .iter()
                .any(|c| c.type_ == "ReconcileFailed" && c.status == "True");
            Ok((status.phase == Some(Phase::Ready) && !failing).then_some(status))
        })
        .await?;
    anyhow::ensure!(status.ready == 2, "status {status:?}");
    eprintln!(
        "c9: the quota controller counted pods after {counted:?}; Ready {:?} after the quota \
         was deleted",
        lifted.elapsed()
    );
    s.assert_one_pod_per_key().await?;
    s.destroy().await
}

#[tokio::test]
async fn c10_creations_refused_past_the_progress_deadline_are_stalled() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ResourceQuota;
    let s = Scenario::converge("refused").await?;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client.clone(), &s.namespace);
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "no-pods"},
        "spec": {"hard": {"pods": "0"}},
    }))?;
    quotas.create(&PostParams::default(), &quota).await?;
    // Until the quota controller has counted, admission refuses with another message.
    s.wait_until("the quota controller counts pods", CONVERGE, || async {
        let quota = quotas.get("no-pods").await?;
        let used = quota.status.and_then(|st| st.used).unwrap_or_default();
        Ok(used.contains_key("pods").then_some(()))
    })
    .await?;
    let host = s.host("refused");
    let mut manifest = cephosd(
        CR,
        storage(&[&host], &["/dev/sdb"]),
        "OSD",
        fast_sample_template()?,
    );
    manifest["spec"]["progressDeadlineSeconds"] = json!(5);
    s.create_cr(&manifest).await?;
    let created = Instant::now();
    let status = s
        .wait_until("Stalled after the progress deadline", ROLLOUT, || async {
            let status = s.cr_status(CR).await?.unwrap_or_default();
            Ok((status.phase == Some(Phase::Stalled)).then_some(status))
        })
        .await?;
    let stalled = condition(&status, "Stalled").expect("Stalled condition");
    anyhow::ensure!(
        stalled.status == "True"
            && stalled.reason == "ProgressDeadlineExceeded"
            && stalled.message.contains("exceeded quota"),
        "Stalled {stalled:?}"
    );
    let events = s.cr_events(CR).await?;
    anyhow::ensure!(
        events.iter().any(
            |e| e.type_.as_deref() == Some("Warning") && e.reason.as_deref() == Some("Stalled")
        ),
        "no Stalled Warning event: {}",
        describe_events(&events)
    );
    eprintln!(
        "c10: Stalled {:?} after the CephOSD was created (deadline 5 s)",
        created.elapsed()
    );
    // The cause goes: the CephOSD becomes Ready and says so.
    quotas.delete("no-pods", &DeleteParams::default()).await?;
    let status = wait_status(&s, "Ready again", ROLLOUT, |st| {
        st.phase == Some(Phase::Ready)
    })
    .await?;
    anyhow::ensure!(
        condition(&status, "Stalled").is_some_and(|c| c.status == "False"),
        "{status:?}"
    );
    s.destroy().await
}
