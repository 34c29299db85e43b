//! End-to-end scenarios of `spec.prePull` on KWOK (pulls are instant there: the mechanism is
//! what is tested): pre-pull pods appear on the nodes of the next update domains before any
//! OSD pod of theirs stops, never on a cordoned node, and are gone at the end; a pre-pull
//! pod that never gets Ready holds the step until the deadline, then the step goes ahead with
//! a Warning event and the `PrePull` condition saying so; a preflight command that fails, and
//! an image pull that fails, hold the rollout with the condition and a Warning event naming
//! node, image and reason. Every scenario records the pod watch and checks one pod per disk
//! and the rollout's order.
//!
//! Needs the local control plane (`molecule-like-tests/control-plane install && ... up`) and a
//! built operator (`cargo build -p ceph-osd-operator`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{ensure, Context};
use ceph_osd_operator::crd::{CephOsdStatus, UpdateDomain};
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::manifests::{
    cephosd, fast_sample_template, keys, storage, CR, FAIL_ANNOTATION, PULL_ANNOTATION,
    READY_ANNOTATION,
};
use molecule_like_tests::pods::{annotation, is_ready};
use molecule_like_tests::recording::pods::PodRecorder;
use molecule_like_tests::scenario::{
    describe_events, hold, Converged, Scenario, CONVERGE, ROLLOUT,
};
use serde_json::{json, Value};

const DEVICE: &str = "/dev/sdb";

/// A CephOSD of one disk on each of `hosts`, update domain Host, with `spec.prePull` set to
/// `pre_pull`, converged.
async fn create_osds(s: &Scenario, hosts: &[String], pre_pull: Value) -> anyhow::Result<Converged> {
    let mut manifest = cephosd(
        CR,
        storage(hosts, &[DEVICE]),
        "Host",
        fast_sample_template()?,
    );
    manifest["spec"]["prePull"] = pre_pull;
    s.create_converged(&manifest, keys(hosts, &[DEVICE])).await
}

/// The pre-pull pods there are now (not terminating).
async fn pre_pull_pods(s: &Scenario) -> anyhow::Result<Vec<Pod>> {
    Ok((s.list_pods().await?.into_iter())
        .filter(|p| labels::is_pre_pull(p) && p.metadata.deletion_timestamp.is_none())
        .collect())
}

fn node_of(pod: &Pod) -> String {
    annotation(pod, labels::PRE_PULL_NODE)
        .unwrap_or_default()
        .to_owned()
}

fn condition<'a>(status: &'a CephOsdStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// Waits until CR `CR`'s condition `type_` has `reason` and its message holds each of `words`.
async fn wait_condition(
    s: &Scenario,
    type_: &str,
    reason: &str,
    words: &[&str],
    timeout: Duration,
) -> anyhow::Result<Condition> {
    s.wait_until(&format!("{type_} {reason} {words:?}"), timeout, || async {
        let status = s.cr_status(CR).await?.unwrap_or_default();
        Ok(condition(&status, type_)
            .filter(|c| c.reason == reason && words.iter().all(|w| c.message.contains(w)))
            .cloned())
    })
    .await
}

/// Waits for a Warning event `PrePull` about CR `CR` whose note holds each of `words`.
async fn wait_warning(s: &Scenario, words: &[&str]) -> anyhow::Result<()> {
    s.wait_until(
        &format!("a PrePull Warning {words:?}"),
        CONVERGE,
        || async {
            let events = s.cr_events(CR).await?;
            Ok(events
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some("PrePull")
                        && e.type_.as_deref() == Some("Warning")
                        && e.note
                            .as_deref()
                            .is_some_and(|n| words.iter().all(|w| n.contains(w)))
                })
                .then_some(()))
        },
    )
    .await
    .with_context(|| "no such event")
}

/// No OSD pod of `old` (key → uid) is deleted or replaced during `duration`.
async fn none_stops(
    s: &Scenario,
    old: &BTreeMap<OsdKey, Pod>,
    duration: Duration,
) -> anyhow::Result<()> {
    let uids: BTreeSet<String> = old.values().filter_map(ResourceExt::uid).collect();
    hold(duration, || async {
        let pods = s.owned_pods(CR).await?;
        let standing = (pods.iter())
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| p.uid().is_some_and(|u| uids.contains(&u)))
            .count();
        ensure!(standing == uids.len(), "an OSD pod stopped:\n{pods:#?}");
        Ok(())
    })
    .await
}

/// Edits the template to revision `rev` with the test kubelet's annotation `knob` set to
/// `value` (None: removed); the new template hash.
async fn revision(
    s: &Scenario,
    rev: &str,
    knob: &str,
    value: Option<&str>,
) -> anyhow::Result<String> {
    let metadata = json!({"labels": {"rev": rev}, "annotations": {knob: value}});
    Ok(s.patch_template_metadata(CR, metadata).await?.1)
}

/// The fix: revision 3 without `knob`; waits until `want` runs it and returns its hash, with
/// the recorder caught up.
async fn fixed(s: &Scenario, want: &BTreeSet<OsdKey>, knob: &str) -> anyhow::Result<String> {
    let hash = revision(s, "3", knob, None).await?;
    s.wait_converged(CR, want, &hash, ROLLOUT).await?;
    s.recorder()?.catch_up(&s.pods).await?;
    Ok(hash)
}

async fn set_cordoned(s: &Scenario, host: &str, cordoned: bool) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(s.client.clone());
    let patch = json!({"spec": {"unschedulable": cordoned}});
    nodes
        .patch(host, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// From the recording: each pre-pull pod of template `hash`, with its node, when it was first
/// seen and when first Ready.
fn pulls_recorded(rec: &PodRecorder, hash: &str) -> Vec<(String, usize, Option<usize>)> {
    let mut pulls: BTreeMap<String, (String, usize, Option<usize>)> = BTreeMap::new();
    for e in rec.events() {
        if !labels::is_pre_pull(&e.pod)
            || annotation(&e.pod, labels::PRE_PULL_TEMPLATE_HASH) != Some(hash)
        {
            continue;
        }
        let entry =
            (pulls.entry(e.pod.name_any())).or_insert_with(|| (node_of(&e.pod), e.seq, None));
        if entry.2.is_none() && is_ready(&e.pod) {
            entry.2 = Some(e.seq);
        }
    }
    pulls.into_values().collect()
}

/// Checks the recording of a rollout of `old` to `hash`: one pod per disk, the hosts in order
/// one at a time, and each old pod deleted only after a pre-pull pod of its node (of `hash`)
/// was Ready.
fn check_pulled_first(
    rec: &PodRecorder,
    old: &BTreeMap<OsdKey, Pod>,
    hash: &str,
) -> anyhow::Result<()> {
    rec.assert_one_pod_per_key()?;
    let t = rec.timeline();
    let by_name: BTreeMap<String, OsdKey> =
        old.iter().map(|(k, p)| (p.name_any(), k.clone())).collect();
    t.check_rollout(&by_name, UpdateDomain::Host)?;
    let pulls = pulls_recorded(rec, hash);
    for (key, pod) in old {
        let history = t.get(&pod.name_any())?;
        let deleted = history
            .deletion_started
            .context("an old pod was not deleted")?;
        let pulled_before = (pulls.iter())
            .any(|(node, _, ready)| *node == key.host && ready.is_some_and(|r| r < deleted));
        ensure!(
            pulled_before,
            "{key}'s pod was deleted at #{deleted} before its node pulled: {pulls:?}\n{}",
            rec.render()
        );
    }
    Ok(())
}

// 1 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn p1_images_are_pulled_ahead_never_on_a_cordoned_node_and_cleaned_up() -> anyhow::Result<()>
{
    let s = Scenario::converge("prepull").await?;
    let hosts = s.hosts(["w1", "w2", "w3"]).to_vec();
    let Converged { want, pods: v1, .. } =
        create_osds(&s, &hosts, json!({"domainsAhead": 2})).await?;
    ensure!(
        pre_pull_pods(&s).await?.is_empty(),
        "pre-pull pods while nothing rolls"
    );
    // w2 cordoned: its drain goes first, so the rollout waits; the others pull meanwhile.
    set_cordoned(&s, &hosts[1], true).await?;
    let (cr, h2) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let ahead = s
        .wait_until("pre-pull pods on w1 and w3, Ready", CONVERGE, || async {
            let pods = pre_pull_pods(&s).await?;
            let mut ready: Vec<String> = pods.iter().filter(|p| is_ready(p)).map(node_of).collect();
            ready.sort();
            Ok((ready == [hosts[0].clone(), hosts[2].clone()]).then_some(pods))
        })
        .await?;
    for pod in &ahead {
        ensure!(
            pod.labels().get(labels::OWNER).is_none(),
            "an owner label: {pod:?}"
        );
        let owner = pod.owner_references().first().cloned().unwrap_or_default();
        ensure!(
            owner.kind == "CephOSD" && owner.uid == cr.uid().unwrap_or_default(),
            "{owner:?}"
        );
    }
    none_stops(&s, &v1, Duration::from_secs(3)).await?;
    ensure!(
        pre_pull_pods(&s)
            .await?
            .iter()
            .all(|p| node_of(p) != hosts[1]),
        "a pre-pull pod on the cordoned node"
    );
    set_cordoned(&s, &hosts[1], false).await?;
    s.wait_converged(CR, &want, &h2, ROLLOUT).await?;
    s.wait_until("no pre-pull pod left", CONVERGE, || async {
        Ok(pre_pull_pods(&s).await?.is_empty().then_some(()))
    })
    .await?;
    wait_condition(&s, "PrePull", "NothingToPull", &[], CONVERGE).await?;
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    check_pulled_first(rec, &v1, &h2)?;
    let on_w2 = pulls_recorded(rec, &h2)
        .into_iter()
        .filter(|(n, _, _)| *n == hosts[1])
        .count();
    ensure!(on_w2 == 1, "w2 pulled {on_w2} times once uncordoned");
    s.destroy().await
}

// 2 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn p2_a_pull_never_ready_holds_until_the_deadline_then_the_step_goes_with_a_warning(
) -> anyhow::Result<()> {
    let s = Scenario::converge("prepulldeadline").await?;
    let hosts = s.hosts(["w1", "w2"]).to_vec();
    let Converged { want, pods: v1, .. } =
        create_osds(&s, &hosts, json!({"deadlineSeconds": 12})).await?;
    // The new template's pods (pre-pull pods included) never get Ready on KWOK.
    revision(&s, "2", READY_ANNOTATION, Some("never")).await?;
    let waiting = [hosts[0].as_str(), "waits for the new images"];
    wait_condition(&s, "Progressing", "Halted", &waiting, CONVERGE).await?;
    wait_condition(&s, "PrePull", "Pulling", &[&hosts[0]], CONVERGE).await?;
    none_stops(&s, &v1, Duration::from_secs(6)).await?;
    let status = s.cr_status(CR).await?.unwrap_or_default();
    ensure!(
        status.ceph_step.is_none(),
        "a Ceph step while images wait: {status:?}"
    );
    // Past the deadline w1's step goes ahead, said in the condition and a Warning.
    let words = ["within 12 s", hosts[0].as_str()];
    wait_condition(&s, "PrePull", "PullDeadlineExceeded", &words, CONVERGE).await?;
    wait_warning(&s, &words).await?;
    // The fix: a template whose pods get Ready; the rollout completes.
    fixed(&s, &want, READY_ANNOTATION).await?;
    s.wait_until("no pre-pull pod left", CONVERGE, || async {
        Ok(pre_pull_pods(&s).await?.is_empty().then_some(()))
    })
    .await?;
    let rec = s.recorder()?;
    rec.assert_one_pod_per_key()?;
    let t = rec.timeline();
    let deleted = t
        .get(&v1[&OsdKey::new(&hosts[0], DEVICE)].name_any())?
        .deletion_started;
    let first_pull = (rec.events().iter())
        .filter(|e| labels::is_pre_pull(&e.pod) && node_of(&e.pod) == hosts[0])
        .map(|e| e.seq)
        .min();
    ensure!(
        first_pull.is_some_and(|p| deleted.is_some_and(|d| p < d)),
        "w1's pre-pull pod (#{first_pull:?}) did not come before its deletion (#{deleted:?})"
    );
    s.destroy().await
}

// 3 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn p3_a_failing_preflight_holds_the_rollout_past_the_deadline_until_fixed(
) -> anyhow::Result<()> {
    let s = Scenario::converge("prepullfail").await?;
    let hosts = s.hosts(["w1", "w2"]).to_vec();
    let pre_pull = json!({"command": ["ceph-osd", "--version"], "deadlineSeconds": 2});
    let Converged { want, pods: v1, .. } = create_osds(&s, &hosts, pre_pull).await?;
    // KWOK's `testing.local/fail` ends the pod's containers with exit code 1.
    revision(&s, "2", FAIL_ANNOTATION, Some("true")).await?;
    let words = [hosts[0].as_str(), "the command exited 1"];
    wait_condition(&s, "PrePull", "PullFailed", &words, CONVERGE).await?;
    wait_condition(
        &s,
        "Progressing",
        "Halted",
        &[&hosts[0], "failed"],
        CONVERGE,
    )
    .await?;
    wait_warning(&s, &words).await?;
    none_stops(&s, &v1, Duration::from_secs(6)).await?;
    let events = s.cr_events(CR).await?;
    ensure!(
        !events
            .iter()
            .any(|e| e.reason.as_deref() == Some("Replacing")),
        "a pod replaced while the preflight fails:\n{}",
        describe_events(&events)
    );
    let h3 = fixed(&s, &want, FAIL_ANNOTATION).await?;
    check_pulled_first(s.recorder()?, &v1, &h3)?;
    s.destroy().await
}

// 4 ------------------------------------------------------------------------------------------

/// Whether the control plane's KWOK plays a failed image pull (`testing.local/pull`): its
/// stages predate it otherwise (restart the control plane).
async fn kwok_fails_pulls(s: &Scenario, host: &str) -> anyhow::Result<bool> {
    let probe: Pod = serde_json::from_value(json!({
        "metadata": {"name": "pull-probe", "annotations": {PULL_ANNOTATION: "ErrImagePull"}},
        "spec": {"nodeName": host, "containers": [{"name": "c", "image": "probe"}]}
    }))?;
    s.pods.create(&PostParams::default(), &probe).await?;
    let seen = s
        .wait_until(
            "the probe's pull fails",
            Duration::from_secs(10),
            || async {
                let pod = s.pods.get("pull-probe").await?;
                let waiting = (pod.status.iter())
                    .flat_map(|st| st.container_statuses.iter().flatten())
                    .filter_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone())
                    .any(|r| r == "ErrImagePull");
                Ok(waiting.then_some(()))
            },
        )
        .await
        .is_ok();
    s.pods
        .delete("pull-probe", &DeleteParams::default())
        .await?;
    Ok(seen)
}

#[tokio::test]
async fn p4_a_failed_image_pull_holds_the_rollout_naming_node_image_and_reason(
) -> anyhow::Result<()> {
    let s = Scenario::converge("prepullimage").await?;
    let hosts = s.hosts(["w1", "w2"]).to_vec();
    let Converged { want, pods: v1, .. } =
        create_osds(&s, &hosts, json!({"deadlineSeconds": 2})).await?;
    ensure!(
        kwok_fails_pulls(&s, &hosts[0]).await?,
        "the control plane's KWOK does not play failed pulls (stage pod-image-pull-failed in \
         molecule-like-tests/kwok/stages.yaml): restart the control plane"
    );
    revision(&s, "2", PULL_ANNOTATION, Some("ErrImagePull")).await?;
    let words = [hosts[0].as_str(), "ErrImagePull", "image "];
    wait_condition(&s, "PrePull", "PullFailed", &words, CONVERGE).await?;
    wait_warning(&s, &words).await?;
    none_stops(&s, &v1, Duration::from_secs(6)).await?;
    let h3 = fixed(&s, &want, PULL_ANNOTATION).await?;
    check_pulled_first(s.recorder()?, &v1, &h3)?;
    s.destroy().await
}
