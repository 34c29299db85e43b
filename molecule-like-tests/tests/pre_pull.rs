//! End-to-end scenarios of `spec.prePull` on KWOK (pulls are instant there: the mechanism is
//! what is tested): pre-pull pods appear on the nodes of the next update domains before any
//! OSD pod of theirs stops, never on a cordoned node, and are gone at the end; pulls that end
//! at once (pods Ready, or running but never Ready) let each step start as soon as its turn
//! comes, without a Warning, and a deadline above the cap is rejected naming the field; a pull
//! that never ends (KWOK's `pull-stuck-` nodes) holds its step until the deadline, then the
//! step goes ahead with a Warning event and the `PrePull` condition saying so; a preflight
//! command that fails, and an image pull that fails, hold the rollout with the condition and a
//! Warning event naming node, image and reason. Every scenario records the pod watch and
//! checks one pod per disk and the rollout's order; the timing ones measure each step's start
//! from the recording.
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
use molecule_like_tests::journeys::scenario::{
    describe_events, hold, Converged, Scenario, CONVERGE, ROLLOUT,
};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, CR, FAIL_ANNOTATION, PULL_ANNOTATION,
    READY_ANNOTATION,
};
use molecule_like_tests::kubernetes::pods::{annotation, is_ready};
use molecule_like_tests::recording::pods::PodRecorder;
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

/// How soon after it could start a step must start (its pulls done and its turn come): well
/// below the deadlines of these scenarios (120 s where pulls end at once).
const QUICK_STEP: Duration = Duration::from_secs(15);

fn names(pods: &BTreeMap<OsdKey, Pod>) -> BTreeMap<String, OsdKey> {
    pods.iter()
        .map(|(k, p)| (p.name_any(), k.clone()))
        .collect()
}

/// Whether a pre-pull pod shows its pull done: Ready, Succeeded, or every container started.
fn pull_done(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let statuses = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    let started = !statuses.is_empty()
        && statuses.iter().all(|c| {
            (c.state.as_ref()).is_some_and(|st| st.running.is_some() || st.terminated.is_some())
        });
    is_ready(pod) || started || status.and_then(|s| s.phase.as_deref()) == Some("Succeeded")
}

/// One host's step as recorded (recorder's clock): when its pre-pull pod of the new template
/// was first seen and first showed its pull done, when its turn came (the previous host's new
/// pod Ready; for the first step without one, its pre-pull pod's creation), and when its old
/// pod began to go.
#[derive(Debug)]
struct StepStart {
    host: String,
    pull_created: Duration,
    pulled: Option<Duration>,
    due: Duration,
    stopped: Duration,
}

impl StepStart {
    /// From when the step could start (its pull done and its turn come) to its first stop.
    fn delay(&self) -> Duration {
        let ready = self.pulled.map_or(self.due, |p| p.max(self.due));
        self.stopped.saturating_sub(ready)
    }
}

/// The steps of the rollout of `old` (one pod per host) to template `hash`, in order, the
/// first after host `after`'s, if given.
fn step_starts(
    rec: &PodRecorder,
    old: &BTreeMap<OsdKey, Pod>,
    hash: &str,
    after: Option<&str>,
) -> anyhow::Result<Vec<StepStart>> {
    let events = rec.events();
    let at: BTreeMap<usize, Duration> = events.iter().map(|e| (e.seq, e.at)).collect();
    let at = |seq: usize| at.get(&seq).copied().unwrap_or_default();
    let mut pulls: BTreeMap<String, (Duration, Option<Duration>)> = BTreeMap::new();
    for e in &events {
        if !labels::is_pre_pull(&e.pod)
            || annotation(&e.pod, labels::PRE_PULL_TEMPLATE_HASH) != Some(hash)
        {
            continue;
        }
        let entry = pulls.entry(node_of(&e.pod)).or_insert((e.at, None));
        if entry.1.is_none() && pull_done(&e.pod) {
            entry.1 = Some(e.at);
        }
    }
    let t = rec.timeline();
    let old_names = names(old);
    let mut stops: Vec<(usize, &OsdKey)> = Vec::new();
    for (name, key) in &old_names {
        let deleted = t.get(name)?.deletion_started;
        stops.push((
            deleted.with_context(|| format!("{name} was not deleted"))?,
            key,
        ));
    }
    stops.sort();
    let mut steps: Vec<StepStart> = Vec::new();
    for (deleted, key) in stops {
        let (pull_created, pulled) = *pulls
            .get(&key.host)
            .with_context(|| format!("no pre-pull pod on {}: {pulls:?}", key.host))?;
        let previous = steps.last().map(|s| s.host.as_str()).or(after);
        let due = match previous {
            None => pull_created,
            Some(previous) => (t.pods.values())
                .filter(|h| !old_names.contains_key(&h.name))
                .filter(|h| h.key.as_ref().is_some_and(|k| k.host == previous))
                .filter(|h| {
                    let pod = events.iter().find(|e| e.pod.name_any() == h.name);
                    pod.is_some_and(|e| annotation(&e.pod, labels::TEMPLATE_HASH) == Some(hash))
                })
                .filter_map(|h| h.ready)
                .min()
                .map(at)
                .with_context(|| format!("{previous}'s new pod never got Ready"))?,
        };
        steps.push(StepStart {
            host: key.host.clone(),
            pull_created,
            pulled,
            due,
            stopped: at(deleted),
        });
    }
    Ok(steps)
}

/// The notes of the PrePull Warning events about CR `CR`.
async fn prepull_warnings(s: &Scenario) -> anyhow::Result<Vec<String>> {
    let events = s.cr_events(CR).await?;
    Ok((events.into_iter())
        .filter(|e| e.reason.as_deref() == Some("PrePull") && e.type_.as_deref() == Some("Warning"))
        .map(|e| e.note.unwrap_or_default())
        .collect())
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
        .wait_until("pre-pull pods on w1 and w3, pulled", CONVERGE, || async {
            let pods = pre_pull_pods(&s).await?;
            let mut pulled: Vec<String> =
                pods.iter().filter(|p| pull_done(p)).map(node_of).collect();
            pulled.sort();
            Ok((pulled == [hosts[0].clone(), hosts[2].clone()]).then_some(pods))
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

/// The deadline of the scenario whose pull never ends.
const STUCK_DEADLINE: Duration = Duration::from_secs(10);

#[tokio::test]
async fn p2_a_pull_that_never_ends_holds_its_domain_until_the_deadline_then_a_warning(
) -> anyhow::Result<()> {
    let s = Scenario::converge("prepulldeadline").await?;
    // KWOK never ends a pre-pull pod's pull on a `pull-stuck-` node (it sorts first).
    let hosts = s.hosts(["pull-stuck-w1", "w2"]).to_vec();
    let pre_pull = json!({"deadlineSeconds": STUCK_DEADLINE.as_secs()});
    let Converged { want, pods: v1, .. } = create_osds(&s, &hosts, pre_pull).await?;
    let (_, h2) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let waiting = [hosts[0].as_str(), "waits for the new images"];
    wait_condition(&s, "Progressing", "Halted", &waiting, CONVERGE).await?;
    wait_condition(&s, "PrePull", "Pulling", &[&hosts[0]], CONVERGE).await?;
    none_stops(&s, &v1, STUCK_DEADLINE / 2).await?;
    let status = s.cr_status(CR).await?.unwrap_or_default();
    ensure!(
        status.ceph_step.is_none(),
        "a Ceph step while images wait: {status:?}"
    );
    // Past the deadline the stuck node's step goes ahead, said in the condition and a Warning.
    let words = [
        &format!("within {} s", STUCK_DEADLINE.as_secs()),
        hosts[0].as_str(),
    ];
    wait_condition(&s, "PrePull", "PullDeadlineExceeded", &words, CONVERGE).await?;
    wait_warning(&s, &words).await?;
    s.wait_converged(CR, &want, &h2, ROLLOUT).await?;
    s.wait_until("no pre-pull pod left", CONVERGE, || async {
        Ok(pre_pull_pods(&s).await?.is_empty().then_some(()))
    })
    .await?;
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;
    let t = rec.timeline();
    t.check_rollout(&names(&v1), UpdateDomain::Host)?;
    let steps = step_starts(rec, &v1, &h2, None)?;
    println!("steps after the pulls: {steps:#?}");
    // The stuck node: its step at its deadline, from its pre-pull pod's creation.
    let stuck = &steps[0];
    ensure!(
        stuck.host == hosts[0] && stuck.pulled.is_none(),
        "{stuck:?}"
    );
    let waited = stuck.stopped.saturating_sub(stuck.pull_created);
    ensure!(
        waited + Duration::from_millis(1500) >= STUCK_DEADLINE
            && waited <= STUCK_DEADLINE + Duration::from_secs(5),
        "the stuck node's step started {waited:?} after its pre-pull pod, not at its deadline \
         ({STUCK_DEADLINE:?})\n{}",
        rec.render()
    );
    // The other node pulled at once: its step starts as soon as it is due, its Warning none.
    let quick = &steps[1];
    ensure!(quick.pulled.is_some(), "{quick:?}");
    ensure!(
        quick.delay() < QUICK_STEP,
        "{}'s step started {:?} after it was due: {quick:?}\n{}",
        quick.host,
        quick.delay(),
        rec.render()
    );
    let warnings = prepull_warnings(&s).await?;
    ensure!(
        warnings.iter().all(|n| !n.contains(hosts[1].as_str())),
        "a PrePull Warning names {}: {warnings:?}",
        hosts[1]
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

// 5 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn p5_pulls_that_end_at_once_let_each_step_start_at_once_without_a_warning(
) -> anyhow::Result<()> {
    let s = Scenario::converge("prepullquick").await?;
    let hosts = s.hosts(["w1", "w2", "w3"]).to_vec();
    // A deadline no step may wait out here.
    let deadline = json!({"deadlineSeconds": 120});
    let Converged { want, pods: v1, .. } = create_osds(&s, &hosts, deadline).await?;
    // A deadline above the cap is rejected naming the field.
    let mut over = cephosd(
        "overdeadline",
        storage(&[s.host("x1")], &[DEVICE]),
        "Host",
        fast_sample_template()?,
    );
    over["spec"]["prePull"] = json!({"deadlineSeconds": 3601});
    match s.create_cr(&over).await {
        Ok(_) => anyhow::bail!("a deadline of 3601 s was accepted"),
        Err(e) => ensure!(
            format!("{e:#}").contains("spec.prePull.deadlineSeconds"),
            "the rejection does not name the field: {e:#}"
        ),
    }
    // Revision 2: pods that run but never get Ready (as pods waiting for a readiness probe; a
    // pre-pull pod's containers running are its images pulled). Its first step starts at once;
    // its new pod never gets Ready, so the rollout stops there.
    let h2 = revision(&s, "2", READY_ANNOTATION, Some("never")).await?;
    let first = &v1[&OsdKey::new(&hosts[0], DEVICE)];
    let uid = first.uid().unwrap_or_default();
    s.wait_until("w1's step starts", QUICK_STEP * 2, || async {
        let pods = s.owned_pods(CR).await?;
        let standing = (pods.iter()).any(|p| {
            p.uid().as_deref() == Some(uid.as_str()) && p.metadata.deletion_timestamp.is_none()
        });
        Ok((!standing).then_some(()))
    })
    .await?;
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let w1 = BTreeMap::from([(OsdKey::new(&hosts[0], DEVICE), first.clone())]);
    let step = step_starts(rec, &w1, &h2, None)?.remove(0);
    println!(
        "revision 2, w1's step: {step:?}, {:?} after its pull",
        step.delay()
    );
    ensure!(
        step.pulled.is_some() && step.delay() < QUICK_STEP,
        "w1's step started {:?} after its pull: {step:?}\n{}",
        step.delay(),
        rec.render()
    );
    // Revision 3 once w1's revision-2 pod stands: pods Ready at once; every step starts as
    // soon as its turn comes.
    let old = s
        .wait_until("a pod on each host", CONVERGE, || async {
            let old: BTreeMap<OsdKey, Pod> = (s.owned_pods(CR).await?.into_iter())
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter_map(|p| {
                    let host = annotation(&p, labels::HOST)?.to_owned();
                    Some((OsdKey::new(&host, DEVICE), p))
                })
                .collect();
            Ok((old.len() == hosts.len()).then_some(old))
        })
        .await?;
    let h3 = fixed(&s, &want, READY_ANNOTATION).await?;
    let rec = s.recorder()?;
    rec.timeline()
        .check_rollout(&names(&old), UpdateDomain::Host)?;
    // w1's domain is under way (its pod down): it goes on without a pull; the others pull first.
    let mut fresh = old.clone();
    fresh.remove(&OsdKey::new(&hosts[0], DEVICE));
    check_pulled_first(rec, &fresh, &h3)?;
    let steps = step_starts(rec, &fresh, &h3, Some(&hosts[0]))?;
    for step in &steps {
        println!(
            "revision 3, {}'s step {:?} after it could start: {step:?}",
            step.host,
            step.delay()
        );
        ensure!(
            step.pulled.is_some_and(|p| p <= step.stopped) && step.delay() < QUICK_STEP,
            "{}'s step started {:?} after it could: {step:?}\n{}",
            step.host,
            step.delay(),
            rec.render()
        );
    }
    s.wait_until("no pre-pull pod left", CONVERGE, || async {
        Ok(pre_pull_pods(&s).await?.is_empty().then_some(()))
    })
    .await?;
    wait_condition(&s, "PrePull", "NothingToPull", &[], CONVERGE).await?;
    let warnings = prepull_warnings(&s).await?;
    ensure!(
        warnings.is_empty(),
        "PrePull Warnings though every pull ended: {warnings:?}"
    );
    s.destroy().await
}
