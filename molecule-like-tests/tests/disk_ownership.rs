//! End-to-end scenarios of who holds a disk, against what a hostile user does: two CephOSDs
//! listing one disk (in one namespace and in two), host and data annotations of running pods
//! edited (paused, then three at once), a pod's owner label removed, the operator frozen while
//! an admin deletes a pod, and the storage of a paused CephOSD emptied. Each replays its pod
//! watch: never two pods on the disk a pod held when it was first seen, never more update
//! domains down than `maxUnavailable`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::{CephOsdStatus, Phase, UpdateDomain};
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{hold, Converged, Scenario, CONVERGE, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, with_kubelet_knobs, Knobs, CR,
};
use molecule_like_tests::kubernetes::pods::{is_ready, pod_key};
use serde_json::{json, Value};

/// The condition `type_` of a status, if it is there.
fn condition<'a>(
    status: &'a CephOsdStatus,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// Polls CephOSD `cr`'s status until `pred` holds.
async fn wait_status(
    s: &Scenario,
    cr: &str,
    what: &str,
    pred: impl Fn(&CephOsdStatus) -> bool,
) -> anyhow::Result<CephOsdStatus> {
    s.wait_until(what, CONVERGE, || async {
        let status = s.cr_status(cr).await?.unwrap_or_default();
        Ok(pred(&status).then_some(status))
    })
    .await
}

/// The live pods of the namespace, by uid.
async fn live_uids(s: &Scenario) -> anyhow::Result<BTreeSet<String>> {
    Ok(s.list_pods()
        .await?
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(ResourceExt::uid)
        .collect())
}

/// Merges `annotations` into pod `name`'s (null removes one), as `kubectl annotate` does.
async fn annotate(s: &Scenario, name: &str, annotations: Value) -> anyhow::Result<()> {
    s.pods
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": annotations}})),
        )
        .await?;
    Ok(())
}

#[tokio::test]
async fn d1_two_cephosds_in_one_namespace_never_share_a_disk() -> anyhow::Result<()> {
    let s = Scenario::converge("shared").await?;
    let [n1, n2, n5] = s.hosts(["n1", "n2", "n5"]);
    let data = ["/dev/sdb"];
    let first = cephosd(
        "c",
        storage(&[&n1, &n2], &data),
        "OSD",
        fast_sample_template()?,
    );
    let Converged { pods: held, .. } = s.create_converged(&first, keys(&[&n1, &n2], &data)).await?;
    // A second CephOSD listing n1's disk again (and one of its own).
    let second = cephosd(
        "c2",
        storage(&[&n1, &n5], &data),
        "OSD",
        fast_sample_template()?,
    );
    s.create_cr(&second).await?;
    let status = wait_status(&s, "c2", "c2 reports the disk c holds", |st| {
        condition(st, "InvalidSpec").is_some_and(|c| c.status == "True") && st.ready == 1
    })
    .await?;
    let invalid = condition(&status, "InvalidSpec").expect("condition");
    let shared = OsdKey::new(&n1, "/dev/sdb");
    anyhow::ensure!(
        invalid.reason == "DiskClaimed"
            && invalid.message.contains(&shared.to_string())
            && invalid.message.contains(&format!("{}/c", s.namespace)),
        "c2's InvalidSpec: {invalid:?}"
    );
    anyhow::ensure!(status.phase == Some(Phase::Error), "c2 {status:?}");
    // For a while: c2 never gets a pod on n1's disk, c keeps its pods untouched and Ready.
    let c_uids: BTreeSet<String> = held.values().filter_map(ResourceExt::uid).collect();
    hold(Duration::from_secs(5), || async {
        let c2_pods = s.owned_pods("c2").await?;
        anyhow::ensure!(
            c2_pods.iter().all(|p| pod_key(p) != Some(shared.clone())),
            "c2 made a pod for {shared}"
        );
        let c_now: BTreeSet<String> = s
            .owned_pods("c")
            .await?
            .iter()
            .filter_map(ResourceExt::uid)
            .collect();
        anyhow::ensure!(c_now == c_uids, "c's pods changed");
        Ok(())
    })
    .await?;
    let c_status = s.cr_status("c").await?.unwrap_or_default();
    anyhow::ensure!(c_status.phase == Some(Phase::Ready), "c {c_status:?}");

    // c goes: its pods go with it, and only once n1's old pod is gone does c2 take the disk.
    s.crs.delete("c", &DeleteParams::default()).await?;
    s.wait_until("c2 holds n1's disk", ROLLOUT, || async {
        let pods = s.owned_pods("c2").await?;
        Ok(pods
            .iter()
            .any(|p| pod_key(p) == Some(shared.clone()) && is_ready(p))
            .then_some(()))
    })
    .await?;
    wait_status(&s, "c2", "c2 Ready", |st| st.phase == Some(Phase::Ready)).await?;
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;
    s.destroy().await
}

#[tokio::test]
async fn d2_two_cephosds_in_two_namespaces_never_share_a_disk() -> anyhow::Result<()> {
    let a = Scenario::converge("shared-a").await?;
    let b = Scenario::converge("shared-b").await?;
    let [n1, n5] = a.hosts(["n1", "n5"]);
    let data = ["/dev/sdb"];
    let first = cephosd(CR, storage(&[&n1], &data), "OSD", fast_sample_template()?);
    a.create_converged(&first, keys(&[&n1], &data)).await?;
    let second = cephosd(
        CR,
        storage(&[&n1, &n5], &data),
        "OSD",
        fast_sample_template()?,
    );
    b.create_cr(&second).await?;
    let shared = OsdKey::new(&n1, "/dev/sdb");
    let status = wait_status(&b, CR, "b reports the disk a holds", |st| {
        condition(st, "InvalidSpec").is_some_and(|c| c.reason == "DiskClaimed") && st.ready == 1
    })
    .await?;
    let message = &condition(&status, "InvalidSpec")
        .expect("condition")
        .message;
    anyhow::ensure!(
        message.contains(&format!("{}/{CR}", a.namespace)) && message.contains(&shared.to_string()),
        "b's InvalidSpec: {message}"
    );
    hold(Duration::from_secs(5), || async {
        anyhow::ensure!(
            b.owned_pods(CR)
                .await?
                .iter()
                .all(|p| pod_key(p) != Some(shared.clone())),
            "b made a pod for {shared}"
        );
        Ok(())
    })
    .await?;
    for s in [&a, &b] {
        let rec = s.recorder()?;
        rec.catch_up(&s.pods).await?;
        rec.assert_one_pod_per_key()?;
    }
    b.destroy().await?;
    a.destroy().await
}

#[tokio::test]
async fn d3_edited_annotations_take_no_pod_down_while_paused_and_one_at_a_time_after(
) -> anyhow::Result<()> {
    let s = Scenario::converge("edited").await?;
    let [n1, n2, n3, n5] = s.hosts(["n1", "n2", "n3", "n5"]);
    let data = ["/dev/sdb"];
    // A long grace period: an old pod is seen terminating for a while.
    let template = with_kubelet_knobs(
        fast_sample_template()?,
        Knobs {
            ready_after: 1,
            never_ready: false,
            grace: 8,
        },
    );
    let mut manifest = cephosd(CR, storage(&[&n1, &n2, &n3], &data), "OSD", template);
    manifest["spec"]["paused"] = json!(true);
    let Converged { want, pods, .. } = s
        .create_converged(&manifest, keys(&[&n1, &n2, &n3], &data))
        .await?;
    let rec = s.recorder()?;
    let before = live_uids(&s).await?;
    // Three pods edited at once: two hosts and a data device.
    let pod = |host: &str| pods[&OsdKey::new(host, "/dev/sdb")].name_any();
    annotate(&s, &pod(&n1), json!({labels::HOST: n5})).await?;
    annotate(&s, &pod(&n2), json!({labels::DATA: "/dev/sdc"})).await?;
    annotate(&s, &pod(&n3), json!({labels::HOST: n2})).await?;
    let edited = Instant::now();
    let status = wait_status(&s, CR, "the edited pods reported out of date", |st| {
        st.out_of_date == 3
    })
    .await?;
    anyhow::ensure!(status.phase == Some(Phase::Paused), "{status:?}");
    hold(Duration::from_secs(6), || async {
        anyhow::ensure!(
            live_uids(&s).await? == before,
            "a pod was deleted or created while paused"
        );
        Ok(())
    })
    .await?;
    let events = s.cr_events(CR).await?;
    anyhow::ensure!(
        events
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Tampered"))
            .count()
            == 3,
        "expected a Tampered event per edited pod"
    );
    println!(
        "d3: paused, 3 edited pods untouched {:?} after the edits",
        edited.elapsed()
    );
    // Unpaused: one OSD at a time, each successor only once its old pod is gone.
    let from = rec.caught_up_seq(&s.pods).await?;
    let cr = s.patch_spec(CR, json!({"paused": null})).await?;
    let hash = molecule_like_tests::kubernetes::manifests::hash_of(&cr);
    let after = s.wait_converged(CR, &want, &hash, ROLLOUT).await?;
    for (key, pod) in &after {
        anyhow::ensure!(
            !before.contains(&pod.uid().unwrap_or_default()) && pod_key(pod).as_ref() == Some(key),
            "{key}: {} was not replaced with a pod of its own",
            pod.name_any()
        );
    }
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;
    rec.assert_unavailable_domains_at_most(&want, UpdateDomain::Osd, 1, from)?;
    s.destroy().await
}

#[tokio::test]
async fn d4_a_pod_without_its_owner_label_still_holds_its_disk() -> anyhow::Result<()> {
    let s = Scenario::converge("unlabelled").await?;
    let [n1] = s.hosts(["n1"]);
    let data = ["/dev/sdb", "/dev/sdc"];
    let manifest = cephosd(CR, storage(&[&n1], &data), "OSD", fast_sample_template()?);
    let Converged { want, pods, .. } = s.create_converged(&manifest, keys(&[&n1], &data)).await?;
    let stripped = pods[&OsdKey::new(&n1, "/dev/sdb")].name_any();
    s.pods
        .patch(
            &stripped,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {labels::OWNER: null}}})),
        )
        .await?;
    let before = live_uids(&s).await?;
    hold(Duration::from_secs(6), || async {
        anyhow::ensure!(
            live_uids(&s).await? == before,
            "a pod was created or deleted for a disk its pod still holds"
        );
        Ok(())
    })
    .await?;
    let status = s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(
        status.current == 2 && status.phase == Some(Phase::Ready),
        "{status:?}"
    );
    // A rollout replaces it like any pod of the CephOSD.
    let (_, hash) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    s.wait_converged(CR, &want, &hash, ROLLOUT).await?;
    s.wait_until("the unlabelled pod is gone", CONVERGE, || async {
        Ok(s.pods.get_opt(&stripped).await?.is_none().then_some(()))
    })
    .await?;
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;
    s.destroy().await
}

/// The freeze of `d5`, repeated at three steps of one rollout: whether a thawed process reads
/// its buffered watch events before its timers fire is a race.
const FREEZES: usize = 3;

/// How long each freeze lasts: twice the replacement's 6 s soak, so its timer is due at the
/// thaw with the deleted pod's events buffered.
const FROZEN_FOR: Duration = Duration::from_secs(12);

#[tokio::test]
async fn d5_a_frozen_operator_never_acts_on_a_stale_view() -> anyhow::Result<()> {
    let s = Scenario::converge("frozen").await?;
    let hosts = s.hosts(["a", "b", "c", "d", "e", "f"]);
    let data = ["/dev/sdb"];
    // A replacement soaks 6 s once Ready: the operator waits on a timer when it freezes.
    let mut manifest = cephosd(CR, storage(&hosts, &data), "OSD", fast_sample_template()?);
    manifest["spec"]["minReadySeconds"] = json!(6);
    let Converged { want, pods, .. } = s.create_converged(&manifest, keys(&hosts, &data)).await?;
    let rec = s.recorder()?;
    let from = rec.caught_up_seq(&s.pods).await?;
    let (_, hash) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    for freeze in 0..FREEZES {
        let replaced = OsdKey::new(&hosts[freeze], "/dev/sdb");
        s.wait_until("the step's replacement is Ready", ROLLOUT, || async {
            let pods = s.owned_pods(CR).await?;
            Ok(pods
                .iter()
                .any(|p| {
                    pod_key(p) == Some(replaced.clone())
                        && p.annotations().get(labels::TEMPLATE_HASH) == Some(&hash)
                        && is_ready(p)
                })
                .then_some(()))
        })
        .await?;
        s.signal_operator("STOP")?;
        let frozen = Instant::now();
        // Frozen through the soak: an admin deletes a later host's OSD pod, and it is gone.
        let victim = pods[&OsdKey::new(&hosts[hosts.len() - 1 - freeze], "/dev/sdb")].name_any();
        s.pods.delete(&victim, &DeleteParams::default()).await?;
        s.wait_until("the deleted pod is gone", CONVERGE, || async {
            Ok(s.pods.get_opt(&victim).await?.is_none().then_some(()))
        })
        .await?;
        while frozen.elapsed() < FROZEN_FOR {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        s.signal_operator("CONT")?;
    }
    let thawed = Instant::now();
    s.wait_converged(CR, &want, &hash, ROLLOUT).await?;
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;
    // A deleted OSD is down from its deletion until its pod is back and Ready: no other
    // domain may go down meanwhile.
    rec.assert_unavailable_domains_at_most(&want, UpdateDomain::Osd, 1, from)?;
    println!(
        "d5: frozen {FREEZES} times {FROZEN_FOR:?}, each through a soak; converged {:?} after \
         the last thaw",
        thawed.elapsed()
    );
    s.destroy().await
}

#[tokio::test]
async fn d6_emptying_a_paused_cephosd_deletes_nothing_then_one_host_at_a_time() -> anyhow::Result<()>
{
    let s = Scenario::converge("emptied").await?;
    let hosts = s.hosts(["a", "b"]);
    let data = ["/dev/sdb", "/dev/sdc"];
    let mut manifest = cephosd(CR, storage(&hosts, &data), "Host", fast_sample_template()?);
    manifest["spec"]["paused"] = json!(true);
    s.create_converged(&manifest, keys(&hosts, &data)).await?;
    let rec = s.recorder()?;
    let before = live_uids(&s).await?;
    s.patch_spec(CR, json!({"storage": []})).await?;
    let status = wait_status(&s, CR, "4 superfluous pods reported", |st| {
        st.superfluous == 4
    })
    .await?;
    anyhow::ensure!(status.phase == Some(Phase::Paused), "{status:?}");
    hold(Duration::from_secs(5), || async {
        anyhow::ensure!(live_uids(&s).await? == before, "a pod went while paused");
        Ok(())
    })
    .await?;
    s.patch_spec(CR, json!({"paused": null})).await?;
    s.wait_until("every pod is gone", ROLLOUT, || async {
        Ok(s.list_pods().await?.is_empty().then_some(()))
    })
    .await?;
    wait_status(&s, CR, "Ready with nothing", |st| {
        st.phase == Some(Phase::Ready) && st.superfluous == 0
    })
    .await?;
    // Host a's pods were all gone before host b's first deletion.
    rec.catch_up(&s.pods).await?;
    let timeline = rec.timeline();
    let by_host = |host: &str| -> Vec<(usize, usize)> {
        timeline
            .pods
            .values()
            .filter(|h| h.key.as_ref().is_some_and(|k| k.host == host))
            .filter_map(|h| Some((h.deletion_started?, h.gone?)))
            .collect()
    };
    let (first, second) = (by_host(&hosts[0]), by_host(&hosts[1]));
    anyhow::ensure!(
        first.len() == 2 && second.len() == 2,
        "{first:?} {second:?}"
    );
    let first_gone = first
        .iter()
        .map(|(_, gone)| *gone)
        .max()
        .unwrap_or_default();
    let second_started = second.iter().map(|(s, _)| *s).min().unwrap_or_default();
    anyhow::ensure!(
        first_gone < second_started,
        "host b's pods went at #{second_started} before host a's were gone (#{first_gone})\n{}",
        rec.render()
    );
    s.destroy().await
}
