//! How fast a rollout goes: `paused` stops it, `maxUnavailable` sets how many at a time.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::{Phase, UpdateDomain};
use ceph_osd_operator::OsdKey;
use kube::api::DeleteParams;
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{
    describe_events, hold, Converged, Scenario, CONVERGE, ROLLOUT,
};
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::pods::{is_ready, pod_key};
use serde_json::json;

use crate::common::{
    check_converged_status, check_rolled_out, cond, create_osds, pod_on, uid_map, untouched,
    wait_ready, wait_status,
};

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
