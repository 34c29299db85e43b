//! End-to-end scenarios of seeing and steering a rollout: status counts, phase and
//! conditions at each step of a rollout, `Stalled` after the progress deadline, `paused`,
//! `maxUnavailable`, the Event sequence of a rollout, leader election, zero writes in steady
//! state, and `/metrics`. Same fixture as `tests/scenarios.rs` (a namespace per scenario, the
//! operator as a child process, the pod event recorder, failure dumps).
//!
//! Needs the local control plane (`molecule-like-tests/control-plane install && ... up`) and a
//! built operator (`cargo build -p ceph-osd-operator`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::{CephOsd, CephOsdStatus, Phase, UpdateDomain};
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{
    describe_events, hold, Converged, Scenario, CONVERGE, ROLLOUT,
};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, never_ready_revision, ready_again_revision, storage, CR,
};
use molecule_like_tests::kubernetes::operator::{
    free_port, http_get, lease_holder, OperatorOptions, OperatorProcess,
};
use molecule_like_tests::kubernetes::pods::{annotation, is_ready, pod_key};
use molecule_like_tests::paths::kubectl;
use molecule_like_tests::recording::pods::{EventKind, WatchRecorder};
use serde_json::{json, Value};

/// Creates CephOSD `CR` (`devices` on each of `hosts`, update domain `domain`, the fast sample
/// template, plus the spec fields of `extra`: rollout controls) and waits until its pods
/// converge.
async fn create_osds(
    s: &Scenario,
    hosts: &[impl AsRef<str>],
    devices: &[&str],
    domain: &str,
    extra: Value,
) -> anyhow::Result<Converged> {
    let mut manifest = cephosd(CR, storage(hosts, devices), domain, fast_sample_template()?);
    if let (Some(spec), Some(extra)) = (manifest["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    s.create_converged(&manifest, keys(hosts, devices)).await
}

fn condition<'a>(status: &'a CephOsdStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// (status, reason) of a condition, or ("-", "-") when missing.
fn cond(status: &CephOsdStatus, type_: &str) -> (String, String) {
    condition(status, type_).map_or_else(
        || ("-".to_owned(), "-".to_owned()),
        |c| (c.status.clone(), c.reason.clone()),
    )
}

fn counts(s: &CephOsdStatus) -> [i64; 7] {
    [
        s.desired,
        s.current,
        s.ready,
        s.updated,
        s.out_of_date,
        s.unready,
        s.invalid,
    ]
}

/// Polls CR `CR`'s status until `pred` holds.
async fn wait_status<F>(
    s: &Scenario,
    what: &str,
    timeout: Duration,
    pred: F,
) -> anyhow::Result<CephOsdStatus>
where
    F: Fn(&CephOsdStatus) -> bool,
{
    let pred = &pred;
    s.wait_until(&format!("status: {what}"), timeout, || async move {
        let status = s.cr_status(CR).await?;
        Ok(status.filter(|st| pred(st)))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Polls CR `CR`'s status until it is phase Ready for `cr`'s generation.
async fn wait_ready(s: &Scenario, what: &str, cr: &CephOsd) -> anyhow::Result<CephOsdStatus> {
    wait_status(s, what, CONVERGE, |st| {
        st.phase == Some(Phase::Ready) && st.observed_generation == cr.metadata.generation
    })
    .await
}

/// A rollout to template `hash` completes: the pods of `want` converge on it, then the status
/// turns Ready for `cr`'s generation (`what`) and is the converged status of those OSDs.
async fn check_rolled_out(
    s: &Scenario,
    what: &str,
    want: &BTreeSet<OsdKey>,
    hash: &str,
    cr: &CephOsd,
) -> anyhow::Result<()> {
    s.wait_converged(CR, want, hash, ROLLOUT).await?;
    let st = wait_ready(s, what, cr).await?;
    check_converged_status(
        &st,
        i64::try_from(want.len())?,
        hash,
        cr.metadata.generation,
    )
}

/// The status of a converged CR of `n` OSDs on template `hash` at `generation`.
fn check_converged_status(
    st: &CephOsdStatus,
    n: i64,
    hash: &str,
    generation: Option<i64>,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        counts(st) == [n, n, n, n, 0, 0, 0],
        "counts desired/current/ready/updated/outOfDate/unready/invalid {:?} != {n} ready: {st:?}",
        counts(st)
    );
    anyhow::ensure!(st.phase == Some(Phase::Ready), "phase {:?}", st.phase);
    anyhow::ensure!(st.template_hash.as_deref() == Some(hash), "{st:?}");
    anyhow::ensure!(
        st.observed_generation == generation && generation.is_some(),
        "observedGeneration {:?} != generation {generation:?}",
        st.observed_generation
    );
    anyhow::ensure!(st.current_update.is_empty(), "currentUpdate {st:?}");
    let want = [
        ("Ready", "True", "AllOsdsReady"),
        ("Progressing", "False", "Complete"),
        ("Stalled", "False", "WithinDeadline"),
        ("InvalidSpec", "False", "SpecValid"),
    ];
    for (t, status, reason) in want {
        anyhow::ensure!(
            cond(st, t) == (status.to_owned(), reason.to_owned()),
            "condition {t}: {:?}, want {status}/{reason}; {st:?}",
            cond(st, t)
        );
        let c = condition(st, t).map(|c| c.observed_generation);
        anyhow::ensure!(
            c == Some(generation),
            "condition {t} observedGeneration {c:?}"
        );
    }
    Ok(())
}

/// Fails unless every pod of `uids` (key → uid) still exists and is not terminating.
async fn untouched(s: &Scenario, uids: &BTreeMap<OsdKey, String>) -> anyhow::Result<()> {
    let pods = s.owned_pods(CR).await?;
    for (key, uid) in uids {
        let alive = pods.iter().any(|p| {
            p.uid().as_deref() == Some(uid.as_str()) && p.metadata.deletion_timestamp.is_none()
        });
        anyhow::ensure!(
            alive,
            "the pod of {key} ({uid}) was deleted while the rollout should stand still"
        );
    }
    Ok(())
}

fn uid_map(pods: &BTreeMap<OsdKey, Pod>, of: &[&OsdKey]) -> BTreeMap<OsdKey, String> {
    of.iter()
        .map(|k| ((*k).clone(), pods[*k].uid().unwrap_or_default()))
        .collect()
}

/// The live (not terminating) pod of `key` on template `hash`, if any.
async fn pod_on(s: &Scenario, key: &OsdKey, hash: &str) -> anyhow::Result<Option<Pod>> {
    Ok(s.owned_pods(CR).await?.into_iter().find(|p| {
        pod_key(p).as_ref() == Some(key)
            && annotation(p, labels::TEMPLATE_HASH) == Some(hash)
            && p.metadata.deletion_timestamp.is_none()
    }))
}

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

    // The statuses the operator wrote for the new generation, in order.
    let mut snaps: Vec<CephOsdStatus> = Vec::new();
    for e in watch.events()? {
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

// 3 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c3_paused_stops_a_rollout_self_healing_continues_resume_completes() -> anyhow::Result<()> {
    let s = Scenario::converge("paused").await?;
    let data = ["/dev/sdb", "/dev/sdc", "/dev/sdd"];
    let w1 = s.host("w1");
    let [k1, k2, k3] = data.map(|d| OsdKey::new(&w1, d));
    let Converged { want, pods: v1, .. } = create_osds(&s, &[&w1], &data, "OSD", json!({})).await?;

    // New pods take 3 s to get Ready: room to pause while k1 is being replaced.
    let (_, h2) = s
        .patch_template_metadata(
            CR,
            json!({
                "labels": {"rev": "2"},
                "annotations": {"testing.local/ready-after-seconds": "3"},
            }),
        )
        .await?;
    let old_k1 = v1[&k1].uid().unwrap_or_default();
    s.wait_until("k1's old pod is being deleted", ROLLOUT, || async {
        let pods = s.owned_pods(CR).await?;
        let alive = pods.iter().any(|p| {
            p.uid().as_deref() == Some(old_k1.as_str()) && p.metadata.deletion_timestamp.is_none()
        });
        Ok((!alive).then_some(()))
    })
    .await?;
    s.patch_spec(CR, json!({"paused": true})).await?;
    let paused_at = Instant::now();

    // k1's replacement still comes (it is a missing OSD), nothing else is replaced.
    let others = uid_map(&v1, &[&k2, &k3]);
    let st = wait_status(&s, "phase Paused", CONVERGE, |st| {
        st.phase == Some(Phase::Paused)
    })
    .await?;
    anyhow::ensure!(
        cond(&st, "Progressing") == ("False".into(), "Paused".into()),
        "Progressing {:?}",
        cond(&st, "Progressing")
    );
    s.wait_until("k1's replacement is Ready", CONVERGE, || async {
        Ok(pod_on(&s, &k1, &h2).await?.filter(is_ready))
    })
    .await?;
    let remaining = Duration::from_secs(8).saturating_sub(paused_at.elapsed());
    hold(remaining.max(Duration::from_secs(3)), || {
        untouched(&s, &others)
    })
    .await?;
    let st = wait_status(&s, "paused with k1 done", CONVERGE, |st| {
        st.phase == Some(Phase::Paused) && st.updated == 1 && st.ready == 3
    })
    .await?;
    anyhow::ensure!(st.out_of_date == 2, "{st:?}");

    // Self-healing while paused: a pod deleted by hand is recreated.
    let victim = v1[&k3].name_any();
    s.pods.delete(&victim, &DeleteParams::default()).await?;
    let recreated = s
        .wait_until(
            "k3's deleted pod is recreated and Ready",
            CONVERGE,
            || async {
                let pods = s.owned_pods(CR).await?;
                Ok(pods.into_iter().find(|p| {
                    pod_key(p).as_ref() == Some(&k3)
                        && p.name_any() != victim
                        && p.metadata.deletion_timestamp.is_none()
                        && is_ready(p)
                }))
            },
        )
        .await?;
    let events = s.cr_events(CR).await?;
    anyhow::ensure!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("Recreated")
                && e.note.as_deref().is_some_and(
                    |n| n.contains(&recreated.name_any()) && n.contains(&k3.to_string())
                )),
        "no Recreated event for {}:\n{}",
        recreated.name_any(),
        describe_events(&events)
    );
    let only_k2 = uid_map(&v1, &[&k2]);
    hold(Duration::from_secs(3), || untouched(&s, &only_k2)).await?;
    let st = s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(st.phase == Some(Phase::Paused), "{st:?}");

    // Resume.
    let cr = s.patch_spec(CR, json!({"paused": false})).await?;
    check_rolled_out(&s, "Ready after resume", &want, &h2, &cr).await?;
    s.assert_one_pod_per_key().await?;
    s.destroy().await
}

// 4 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c4_max_unavailable_two_replaces_two_osds_at_a_time_never_three() -> anyhow::Result<()> {
    let s = Scenario::converge("maxunavail").await?;
    let data = ["/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde", "/dev/sdf"];
    let two = json!({"maxUnavailable": 2});
    let Converged { want, pods: v1, .. } =
        create_osds(&s, &s.hosts(["w1"]), &data, "OSD", two).await?;
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let mark = rec.len();

    let (cr, h2) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let v2 = s.wait_converged(CR, &want, &h2, ROLLOUT).await?;
    anyhow::ensure!(
        v2.values().all(|p| v1.values().all(|o| o.uid() != p.uid())),
        "an old pod survived"
    );
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;

    // Replay: after each event, the OSDs without a live Ready pod.
    let mut max = (0usize, 0usize, BTreeSet::new());
    let mut exactly_two = 0usize;
    for (seq, unavailable) in rec.unavailable_domains(&want, UpdateDomain::Osd, mark) {
        if unavailable.len() > max.0 {
            max = (unavailable.len(), seq, unavailable.clone());
        }
        if unavailable.len() == 2 {
            exactly_two += 1;
        }
    }
    anyhow::ensure!(
        max.0 <= 2,
        "{} OSDs unavailable at once after event #{}: {:?}\n{}",
        max.0,
        max.1,
        max.2,
        rec.render()
    );
    anyhow::ensure!(
        max.0 == 2 && exactly_two > 0,
        "never two OSDs in replacement at once (max {})\n{}",
        max.0,
        rec.render()
    );
    // Two at a time: the first two deletions both started before any replacement was Ready.
    let t = rec.timeline();
    let old_names: BTreeSet<String> = v1.values().map(ResourceExt::name_any).collect();
    let deletions: Vec<usize> = t
        .deletions
        .iter()
        .filter(|(_, n)| old_names.contains(n))
        .map(|(seq, _)| *seq)
        .collect();
    let first_ready = t
        .pods
        .values()
        .filter(|h| !old_names.contains(&h.name) && h.created.is_some_and(|c| c >= mark))
        .filter_map(|h| h.ready)
        .min()
        .unwrap_or(usize::MAX);
    anyhow::ensure!(
        deletions.len() == 5 && deletions[1] < first_ready,
        "deletions {deletions:?}, first replacement Ready at #{first_ready}\n{}",
        rec.render()
    );
    let st = wait_ready(&s, "Ready", &cr).await?;
    check_converged_status(&st, 5, &h2, cr.metadata.generation)?;
    s.destroy().await
}

// 5 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c5_events_tell_the_story_of_a_host_rollout() -> anyhow::Result<()> {
    let s = Scenario::converge("events").await?;
    let hosts = s.hosts(["w1", "w2"]);
    let data = ["/dev/sdb"];
    let [k1, k2] = hosts.clone().map(|h| OsdKey::new(h, "/dev/sdb"));
    let Converged {
        want, cr, pods: v1, ..
    } = create_osds(&s, &hosts, &data, "Host", json!({})).await?;
    let cr_uid = cr.uid().unwrap_or_default();
    let (cr, h2) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let v2 = s.wait_converged(CR, &want, &h2, ROLLOUT).await?;
    wait_ready(&s, "Ready", &cr).await?;

    const ACTIONS: [&str; 4] = ["Created", "Replacing", "Recreated", "Deleted"];
    let events = s
        .wait_until("six action events", Duration::from_secs(10), || async {
            let events = s.cr_events(CR).await?;
            let n = events
                .iter()
                .filter(|e| ACTIONS.contains(&e.reason.as_deref().unwrap_or("")))
                .count();
            Ok((n >= 6).then_some(events))
        })
        .await?;
    let story = describe_events(&events);
    let actions: Vec<&K8sEvent> = events
        .iter()
        .filter(|e| ACTIONS.contains(&e.reason.as_deref().unwrap_or("")))
        .collect();
    let got: Vec<(&str, String)> = actions
        .iter()
        .map(|e| {
            (
                e.reason.as_deref().unwrap_or(""),
                e.related
                    .as_ref()
                    .and_then(|r| r.name.clone())
                    .unwrap_or_default(),
            )
        })
        .collect();
    let name = |pods: &BTreeMap<OsdKey, Pod>, k: &OsdKey| pods[k].name_any();
    let mut first_two = vec![got[0].clone(), got[1].clone()];
    first_two.sort();
    let mut created: Vec<(&str, String)> =
        vec![("Created", name(&v1, &k1)), ("Created", name(&v1, &k2))];
    created.sort();
    let expected_rest = vec![
        ("Replacing", name(&v1, &k1)),
        ("Created", name(&v2, &k1)),
        ("Replacing", name(&v1, &k2)),
        ("Created", name(&v2, &k2)),
    ];
    anyhow::ensure!(
        got.len() == 6 && first_two == created && got[2..] == expected_rest[..],
        "events (reason, pod) {got:?}\nexpected {created:?} then {expected_rest:?}\n{story}"
    );
    // Each note names the pod and the OSD key; all on this CephOSD, Normal, from us.
    let key_of = |pod: &str| -> Option<OsdKey> {
        [&v1, &v2]
            .iter()
            .flat_map(|m| m.iter())
            .find(|(_, p)| p.name_any() == pod)
            .map(|(k, _)| k.clone())
    };
    for e in &actions {
        let pod = e
            .related
            .as_ref()
            .and_then(|r| r.name.clone())
            .unwrap_or_default();
        let key = key_of(&pod).ok_or_else(|| anyhow::anyhow!("event about unknown pod {pod}"))?;
        let note = e.note.as_deref().unwrap_or("");
        let regarding = e.regarding.as_ref();
        anyhow::ensure!(
            note.contains(&pod)
                && note.contains(&key.to_string())
                && e.type_.as_deref() == Some("Normal")
                && e.reporting_controller.as_deref() == Some("ceph-osd-operator")
                && regarding.and_then(|r| r.uid.as_deref()) == Some(cr_uid.as_str())
                && e.related.as_ref().and_then(|r| r.kind.as_deref()) == Some("Pod"),
            "event {e:?}\n{story}"
        );
    }
    anyhow::ensure!(
        !events.iter().any(|e| e.type_.as_deref() == Some("Warning")),
        "a Warning in a clean rollout:\n{story}"
    );
    s.destroy().await
}

// 6 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c6_standby_replica_does_nothing_until_the_leader_stops() -> anyhow::Result<()> {
    let mut s = Scenario::create("leader").await?;
    s.start_recorder().await?;
    let ns = s.namespace.clone();
    // The Lease in the test's namespace: the operator's Lease Role there too.
    molecule_like_tests::kubernetes::rbac::grant_lease_in(&s.client, &ns).await?;
    let args = ["--leader-elect", "--lease-namespace", ns.as_str()];
    let options = OperatorOptions { resync_seconds: 2 };
    let id_a = format!("{ns}-a");
    let id_b = format!("{ns}-b");
    let holder = || lease_holder(&s.client, &ns);
    let a = s.spawn_operator("a", &options, &args, &[("POD_NAME", &id_a)])?;
    s.wait_until(
        "replica a holds the lease",
        Duration::from_secs(20),
        || async { Ok((holder().await?.as_deref() == Some(id_a.as_str())).then_some(())) },
    )
    .await?;
    let b = s.spawn_operator("b", &options, &args, &[("POD_NAME", &id_b)])?;
    s.wait_until(
        "replica b waits for the lease",
        Duration::from_secs(20),
        || async {
            Ok(b.log()
                .contains("waiting for the leader lease")
                .then_some(()))
        },
    )
    .await?;

    let data = ["/dev/sdb", "/dev/sdc"];
    let Converged { want, .. } = create_osds(&s, &s.hosts(["w1"]), &data, "OSD", json!({})).await?;
    wait_status(&s, "Ready", CONVERGE, |st| st.phase == Some(Phase::Ready)).await?;
    // A few resyncs: only a acts.
    check_only_the_leader_acts(&s, &a, &b, &id_a).await?;

    // SIGTERM the leader: it releases the lease, the standby takes over within seconds.
    let b_reconciles = b.log().matches("reconciled").count();
    let stopped = Instant::now();
    let status = a.terminate(Duration::from_secs(15)).await?;
    anyhow::ensure!(
        status.success(),
        "leader exited with {status}:\n{}",
        a.log()
    );
    anyhow::ensure!(
        a.log().contains("released the leader lease"),
        "the leader did not release the lease:\n{}",
        a.log()
    );
    s.wait_until(
        "replica b holds the lease",
        Duration::from_secs(10),
        || async { Ok((holder().await?.as_deref() == Some(id_b.as_str())).then_some(())) },
    )
    .await?;
    let took = stopped.elapsed();
    anyhow::ensure!(
        took < Duration::from_secs(8),
        "takeover took {took:?} (renew/retry period 3 s)"
    );
    s.wait_until("replica b reconciles", Duration::from_secs(15), || async {
        b.check_alive()?;
        Ok((b.log().matches("reconciled").count() > b_reconciles).then_some(()))
    })
    .await?;
    // The new leader rolls a template edit out.
    let (cr, h2) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    s.wait_converged(CR, &want, &h2, ROLLOUT).await?;
    wait_ready(&s, "Ready on the new template", &cr).await?;
    anyhow::ensure!(
        b.log().contains("deleted pod") && b.log().contains("created pod"),
        "the new leader did not roll:\n{}",
        b.log()
    );
    b.check_alive()?;
    s.assert_one_pod_per_key().await?;
    drop(b);
    s.destroy().await
}

/// A few resyncs with `a` leading (`id_a`) and `b` standing by: both alive, the lease stays
/// `a`'s, `a` reconciles, `b` neither reconciles nor writes, every event is `a`'s.
async fn check_only_the_leader_acts(
    s: &Scenario,
    a: &OperatorProcess,
    b: &OperatorProcess,
    id_a: &str,
) -> anyhow::Result<()> {
    let holder = || lease_holder(&s.client, &s.namespace);
    hold(Duration::from_secs(4), || async {
        a.check_alive()?;
        b.check_alive()?;
        anyhow::ensure!(holder().await?.as_deref() == Some(id_a), "the lease moved");
        Ok(())
    })
    .await?;
    anyhow::ensure!(
        a.log().matches("reconciled").count() >= 2,
        "the leader did not reconcile:\n{}",
        a.log()
    );
    let b_log = b.log();
    anyhow::ensure!(
        !b_log.contains("reconciled")
            && !b_log.contains("created pod")
            && !b_log.contains("acquired"),
        "the standby acted:\n{b_log}"
    );
    let events = s.cr_events(CR).await?;
    anyhow::ensure!(
        !events.is_empty()
            && events
                .iter()
                .all(|e| e.reporting_instance.as_deref() == Some(id_a)),
        "events not all from the leader {id_a}:\n{events:?}"
    );

    Ok(())
}

// 7 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c7_steady_state_makes_zero_writes() -> anyhow::Result<()> {
    let s = Scenario::converge_with("zerowrites", &OperatorOptions { resync_seconds: 2 }).await?;
    let data = ["/dev/sdb", "/dev/sdc"];
    let Converged { cr, hash: h1, .. } =
        create_osds(&s, &s.hosts(["w1", "w2"]), &data, "Host", json!({})).await?;
    let st = wait_status(&s, "Ready", CONVERGE, |st| st.phase == Some(Phase::Ready)).await?;
    check_converged_status(&st, 4, &h1, cr.metadata.generation)?;
    // Let the reconcile triggered by the last status write pass.
    let log_mark = s.operator_log().matches("reconciled").count();
    s.wait_until("one more reconcile", Duration::from_secs(10), || async {
        Ok((s.operator_log().matches("reconciled").count() > log_mark).then_some(()))
    })
    .await?;

    let pods = WatchRecorder::start(
        s.pods.clone(),
        ListParams::default(),
        WatchParams::default(),
    )
    .await?;
    let crs =
        WatchRecorder::start(s.crs.clone(), ListParams::default(), WatchParams::default()).await?;
    let event_api: Api<K8sEvent> = Api::namespaced(s.client.clone(), &s.namespace);
    let events =
        WatchRecorder::start(event_api, ListParams::default(), WatchParams::default()).await?;
    let reconciles_before = s.operator_log().matches("reconciled").count();
    // ~3 resync periods of 2 s.
    let window = Duration::from_secs(7);
    let start = Instant::now();
    while start.elapsed() < window {
        s.check_operator_alive()?;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let log = s.operator_log();
    let window_lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("reconciled"))
        .skip(reconciles_before)
        .collect();
    let reconciles = window_lines.len();
    anyhow::ensure!(
        reconciles >= 3,
        "only {reconciles} reconciles in {window:?} with --resync-seconds 2"
    );
    // Nothing changed: no INFO line (a settled CephOSD's resync is not news).
    anyhow::ensure!(
        window_lines.iter().all(|l| l.contains("DEBUG")),
        "no-op reconciles logged above DEBUG: {window_lines:#?}"
    );
    // Their inputs were those of the last plan, which had nothing to do: not planned again.
    anyhow::ensure!(
        window_lines
            .iter()
            .filter(|l| l.contains("unchanged=true"))
            .count()
            + 1
            >= reconciles,
        "resyncs of unchanged inputs were planned again: {window_lines:#?}"
    );
    let describe =
        |kind: &str, list: Vec<(EventKind, String, Option<String>)>| format!("{kind}: {list:?}");
    let pod_writes: Vec<_> = pods
        .events()?
        .into_iter()
        .map(|e| (e.kind, e.object.name_any(), e.object.resource_version()))
        .collect();
    let cr_writes: Vec<_> = crs
        .events()?
        .into_iter()
        .map(|e| (e.kind, e.object.name_any(), e.object.resource_version()))
        .collect();
    let event_writes: Vec<_> = events
        .events()?
        .into_iter()
        .map(|e| (e.kind, e.object.name_any(), e.object.resource_version()))
        .collect();
    anyhow::ensure!(
        pod_writes.is_empty() && cr_writes.is_empty() && event_writes.is_empty(),
        "writes in steady state ({reconciles} reconciles):\n{}\n{}\n{}",
        describe("pods", pod_writes),
        describe("CephOSDs", cr_writes),
        describe("events", event_writes)
    );
    // And the objects themselves: same resourceVersions as at the start of the window.
    let rvs = |items: Vec<(String, Option<String>)>| items.into_iter().collect::<BTreeMap<_, _>>();
    let before_pods = rvs(pods
        .initial
        .iter()
        .map(|p| (p.name_any(), p.resource_version()))
        .collect());
    let after_pods = rvs(s
        .list_pods()
        .await?
        .iter()
        .map(|p| (p.name_any(), p.resource_version()))
        .collect());
    anyhow::ensure!(
        before_pods == after_pods,
        "{before_pods:?} != {after_pods:?}"
    );
    let before_cr = crs.initial.first().and_then(ResourceExt::resource_version);
    let after_cr = s.crs.get(CR).await?.resource_version();
    anyhow::ensure!(before_cr == after_cr, "CR {before_cr:?} != {after_cr:?}");
    s.destroy().await
}

// 8 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c8_metrics_and_probes() -> anyhow::Result<()> {
    let mut s = Scenario::create("metrics").await?;
    s.start_recorder().await?;
    let port = free_port()?;
    let address = format!("127.0.0.1:{port}");
    s.start_operator_with_args(
        &OperatorOptions { resync_seconds: 2 },
        // The scrape below sends no token (tests/hardening.rs checks the token check).
        &["--http-address", &address, "--metrics-auth=false"],
    )?;
    let data = ["/dev/sdb", "/dev/sdc"];
    create_osds(&s, &s.hosts(["w1"]), &data, "OSD", json!({})).await?;
    let ns = s.namespace.clone();
    let updated = format!(
        r#"ceph_osd_operator_osd_pods{{namespace="{ns}",cephosd="{CR}",state="updated"}} 2"#
    );
    let ready =
        format!(r#"ceph_osd_operator_osd_pods{{namespace="{ns}",cephosd="{CR}",state="ready"}} 2"#);
    let desired = format!(r#"ceph_osd_operator_osds_desired{{namespace="{ns}",cephosd="{CR}"}} 2"#);
    let text = s
        .wait_until("/metrics shows 2 updated, Ready pods", CONVERGE, || async {
            let Ok((code, body)) = http_get(port, "/metrics").await else {
                return Ok(None);
            };
            let has = |l: &str| body.lines().any(|x| x == l);
            Ok((code == 200 && has(&updated) && has(&ready) && has(&desired)).then_some(body))
        })
        .await?;
    let reconciles: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("ceph_osd_operator_reconciles_total "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no reconciles_total in\n{text}"))?;
    anyhow::ensure!(reconciles > 0, "reconciles_total {reconciles}");
    // Every request the operator sends is counted: at least the two pod creations.
    let pods_created: u64 = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"ceph_osd_operator_api_requests_total{verb="post",resource="pods"} "#)
        })
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no pod POSTs in api_requests_total in\n{text}"))?;
    anyhow::ensure!(pods_created >= 2, "{pods_created} pod POSTs counted");
    anyhow::ensure!(
        text.lines()
            .any(|l| l.starts_with("ceph_osd_operator_reconcile_duration_seconds_count ")),
        "no duration histogram in\n{text}"
    );
    let (code, body) = http_get(port, "/healthz").await?;
    anyhow::ensure!(code == 200, "/healthz {code} {body}");
    let (code, body) = http_get(port, "/readyz").await?;
    anyhow::ensure!(code == 200, "/readyz {code} {body}");
    let (code, _) = http_get(port, "/nope").await?;
    anyhow::ensure!(code == 404, "/nope {code}");
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
