//! Faults of the control plane under a rollout. These stop shared components, so they live in
//! a test binary of their own (cargo runs test binaries one after another) and run one at a
//! time within it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{Converged, Scenario};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, with_kubelet_knobs, Knobs, CR,
};
use molecule_like_tests::kubernetes::nodes::ensure_nodes;
use molecule_like_tests::kubernetes::operator::{lease_holder, OperatorOptions};
use molecule_like_tests::kubernetes::pods::{annotation, is_ready, names_by_key, pod_key};
use molecule_like_tests::paths::workspace_root;
use molecule_like_tests::recording::pods::PodEvent;
use serde_json::json;
use tokio::sync::Mutex;

/// One fault at a time: each takes a component of the shared control plane down.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// Runs `control-plane restart-COMPONENT SECONDS` (kills kube-apiserver or etcd, starts it
/// again after SECONDS).
async fn restart(component: &str, seconds: u32) -> anyhow::Result<()> {
    let script = workspace_root().join("molecule-like-tests/control-plane");
    let out = tokio::process::Command::new(&script)
        .arg(format!("restart-{component}"))
        .arg(seconds.to_string())
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "{} restart-{component} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// A rollout under way: `CR` of one OSD per host in `hosts` (Host domain, replacements Ready
/// `ready_after` seconds after they start) converged, then its template edited; returns once
/// the first replacement exists.
struct Rollout {
    want: BTreeSet<OsdKey>,
    old: BTreeMap<String, OsdKey>,
    hash: String,
}

async fn start_rollout(
    s: &Scenario,
    hosts: &[impl AsRef<str>],
    data: &[&str],
    ready_after: u32,
) -> anyhow::Result<Rollout> {
    let template = with_kubelet_knobs(
        fast_sample_template()?,
        Knobs {
            ready_after,
            never_ready: false,
            grace: 1,
        },
    );
    let Converged { want, pods, .. } = s
        .create_converged(
            &cephosd(CR, storage(hosts, data), "Host", template),
            keys(hosts, data),
        )
        .await?;
    let old = names_by_key(&pods);
    let (_, hash) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    s.wait_until(
        "the first replacement exists",
        Duration::from_mins(1),
        || async {
            let pods = s.owned_pods(CR).await?;
            Ok(pods
                .iter()
                .any(|p| annotation(p, labels::TEMPLATE_HASH) == Some(hash.as_str()))
                .then_some(()))
        },
    )
    .await?;
    Ok(Rollout { want, old, hash })
}

impl Rollout {
    /// Waits for the end and checks the recorded watch: one pod per disk throughout, hosts in
    /// order, and every OSD with exactly its old pod and one replacement.
    async fn finishes_once(&self, s: &Scenario, context: &str) -> anyhow::Result<()> {
        s.wait_converged(CR, &self.want, &self.hash, Duration::from_mins(3))
            .await
            .map_err(|e| anyhow::anyhow!("{context}: {e}"))?;
        s.assert_one_pod_per_key().await?;
        let rec = s.recorder()?;
        rec.timeline()
            .check_rollout(&self.old, UpdateDomain::Host)
            .map_err(|e| anyhow::anyhow!("{context}: {e}\n{}", rec.render()))?;
        let mut pods_per_key: BTreeMap<OsdKey, BTreeSet<String>> = BTreeMap::new();
        for event in rec.events() {
            if let Some(key) = pod_key(&event.pod) {
                pods_per_key
                    .entry(key)
                    .or_default()
                    .insert(event.pod.name_any());
            }
        }
        anyhow::ensure!(
            pods_per_key.values().all(|names| names.len() == 2),
            "{context}: an OSD replaced more than once: {pods_per_key:?}\n{}",
            rec.render()
        );
        Ok(())
    }
}

/// `component` (kube-apiserver or etcd) killed for 10 s while a replacement waits for Ready.
/// With a resync of 10 minutes only the watches can move the rollout on: once the replacement
/// is Ready (KWOK and the scheduler take their own time to reconnect), the next host's pod must
/// go within seconds; never two pods on one disk, hosts in order, no OSD replaced twice.
async fn rollout_survives_a_restart_of(component: &str, hosts: [&str; 3]) -> anyhow::Result<()> {
    let s = Scenario::converge_with(
        component,
        &OperatorOptions {
            resync_seconds: 600,
        },
    )
    .await?;
    let rollout = start_rollout(&s, &s.hosts(hosts), &["/dev/sdb"], 2).await?;
    // Everything before the restart recorded first: none of it can count as after it.
    s.recorder()?.catch_up(&s.pods).await?;
    let down_at = s.recorder()?.elapsed();
    restart(component, 10).await?;
    let back_at = s.recorder()?.elapsed();
    rollout
        .finishes_once(&s, "no progress after the restart (resync is 600 s)")
        .await?;
    let rec = s.recorder()?;
    // The first Ready replacement since the component went down, and the operator's next
    // deletion. Not since `back_at`: the watches resume while `restart` still waits for the
    // component to answer, so the replacement's Ready may be recorded just before it.
    let events = rec.events();
    let after = |at, what: &dyn Fn(&PodEvent) -> bool| {
        events.iter().find(|e| e.at >= at && what(e)).map(|e| e.at)
    };
    let ready = after(down_at, &|e| {
        annotation(&e.pod, labels::TEMPLATE_HASH) == Some(rollout.hash.as_str()) && is_ready(&e.pod)
    });
    let acted = ready.and_then(|ready| {
        after(ready, &|e| {
            rollout.old.contains_key(&e.pod.name_any())
                && e.pod.metadata.deletion_timestamp.is_some()
        })
    });
    let (Some(ready), Some(acted)) = (ready, acted) else {
        anyhow::bail!(
            "no Ready replacement or no deletion after the restart\n{}",
            rec.render()
        );
    };
    eprintln!(
        "{component}: down at {down_at:?}, back at {back_at:?}; replacement Ready at \
         {ready:?}; next host's pod deleted {:?} after that",
        acted.checked_sub(ready).unwrap()
    );
    anyhow::ensure!(
        acted.checked_sub(ready).unwrap() < Duration::from_secs(10),
        "the operator took {:?} to act on a Ready replacement after the restart (its watches \
         did not resume)\n{}",
        acted.checked_sub(ready).unwrap(),
        rec.render()
    );
    s.destroy().await
}

/// kube-apiserver killed: the operator's watches fail and, on resume, find their
/// resourceVersion gone (a restarted API server's watch cache starts afresh).
#[tokio::test]
async fn f1_apiserver_restart_mid_rollout_resumes_from_the_watches() -> anyhow::Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    rollout_survives_a_restart_of("apiserver", ["fault-a", "fault-b", "fault-c"]).await
}

/// etcd killed under a running kube-apiserver: requests fail and watches stall or end while
/// it is down; the operator acts on no stale view and resumes from the watches.
#[tokio::test]
async fn f5_etcd_restart_mid_rollout_resumes_from_the_watches() -> anyhow::Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    rollout_survives_a_restart_of("etcd", ["etcd-a", "etcd-b", "etcd-c"]).await
}

/// The operator killed (SIGKILL) again and again at random moments of one rollout and started
/// again each time: the rollout completes in host order, one pod per disk throughout, and no
/// OSD is replaced twice (each has exactly its old pod and one new one). `MLT_KILLS` sets the
/// number of kills (CI: 6; `MLT_KILLS=20` for the long run).
#[tokio::test]
async fn f2_operator_killed_repeatedly_mid_rollout_finishes_it_once() -> anyhow::Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let kills: u32 = std::env::var("MLT_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(6);
    let mut s = Scenario::converge_with("kill-loop", &OperatorOptions::default()).await?;
    let rollout = start_rollout(
        &s,
        &s.hosts(["kill-a", "kill-b", "kill-c"]),
        &["/dev/sdb", "/dev/sdc"],
        1,
    )
    .await?;
    // Kill moments from a seeded sequence (printed, to replay a failure).
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .subsec_nanos();
    let mut state = u64::from(seed) | 1;
    let mut next_delay = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        Duration::from_millis(200 + (state >> 33) % 1_300)
    };
    for _ in 0..kills {
        tokio::time::sleep(next_delay()).await;
        s.stop_operator();
        s.start_operator(&OperatorOptions::default())?;
    }
    eprintln!("f2: {kills} kills, seed {seed}");
    rollout.finishes_once(&s, &format!("seed {seed}")).await?;
    s.destroy().await
}

/// Two replicas with leader election; the leader is SIGKILLed (no lease release) while a
/// replacement waits for Ready. The standby takes over once the lease expires (15 s) and
/// finishes the rollout in host order: no OSD replaced twice, one pod per disk throughout.
#[tokio::test]
async fn f3_leader_killed_mid_rollout_the_standby_finishes_it() -> anyhow::Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let mut s = Scenario::create("leader-kill").await?;
    s.start_recorder().await?;
    let ns = s.namespace.clone();
    // The Lease in the test's namespace: the operator's Lease Role there too.
    molecule_like_tests::kubernetes::rbac::grant_lease_in(&s.client, &ns).await?;
    let args = ["--leader-elect", "--lease-namespace", ns.as_str()];
    let options = OperatorOptions::default();
    let (id_a, id_b) = (format!("{ns}-a"), format!("{ns}-b"));
    let holder = || lease_holder(&s.client, &ns);
    let a = s.spawn_operator("a", &options, &args, &[("POD_NAME", &id_a)])?;
    s.wait_until("replica a leads", Duration::from_secs(20), || async {
        Ok((holder().await?.as_deref() == Some(id_a.as_str())).then_some(()))
    })
    .await?;
    let b = s.spawn_operator("b", &options, &args, &[("POD_NAME", &id_b)])?;
    // Replacements take 3 s to become Ready: the kill lands while one waits.
    let rollout = start_rollout(
        &s,
        &s.hosts(["lead-a", "lead-b", "lead-c"]),
        &["/dev/sdb"],
        3,
    )
    .await?;
    a.kill();
    let killed = std::time::Instant::now();
    s.wait_until("replica b leads", Duration::from_secs(30), || async {
        b.check_alive()?;
        Ok((holder().await?.as_deref() == Some(id_b.as_str())).then_some(()))
    })
    .await?;
    let took = killed.elapsed();
    anyhow::ensure!(
        took < Duration::from_secs(20),
        "takeover after {took:?} (lease 15 s, retry 3 s)"
    );
    rollout.finishes_once(&s, "after the takeover").await?;
    eprintln!("f3: the standby led {took:?} after the leader was killed");
    s.destroy().await
}

/// A node disappears mid-rollout (its Node deleted): its OSD pod is node-bound, so once the
/// pod garbage collector removes it (40 s after the Node went) the replacement waits Pending
/// and is never placed elsewhere; the rollout halts with the OSD and its node named in
/// status, the next host untouched; when the Node returns, the rollout finishes in host order
/// with one pod per disk throughout and no OSD replaced twice.
#[tokio::test]
async fn f4_node_gone_mid_rollout_halts_it_until_the_node_returns() -> anyhow::Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let s = Scenario::converge_with("node-gone", &OperatorOptions::default()).await?;
    let hosts = s.hosts(["gone-a", "gone-b", "gone-c"]);
    let [_, gone, last] = &hosts;
    let rollout = start_rollout(&s, &hosts, &["/dev/sdb"], 2).await?;
    let nodes: Api<Node> = Api::all(s.client.clone());
    nodes.delete(gone, &DeleteParams::default()).await?;
    let deleted = std::time::Instant::now();

    let waiting = format!("{gone}:/dev/sdb waits for node {gone}: ");
    s.wait_until(
        "status.unschedulable names the OSD of the gone node",
        Duration::from_secs(150),
        || async {
            let status = s.cr_status(CR).await?.unwrap_or_default();
            Ok(status
                .unschedulable
                .iter()
                .any(|w| w.starts_with(&waiting))
                .then_some(()))
        },
    )
    .await?;
    let told = deleted.elapsed();
    // Halted: a while later the replacement is still unplaced and the last host untouched.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let pods = s.owned_pods(CR).await?;
    let on_host = |host: &str| {
        pods.iter()
            .filter(|p| pod_key(p).is_some_and(|k| k.host == host))
            .collect::<Vec<_>>()
    };
    let pending = on_host(gone);
    anyhow::ensure!(
        pending.len() == 1
            && annotation(pending[0], labels::TEMPLATE_HASH) == Some(rollout.hash.as_str())
            && pending[0]
                .spec
                .as_ref()
                .and_then(|p| p.node_name.as_ref())
                .is_none(),
        "expected one unplaced replacement for {gone}: {pending:?}"
    );
    let untouched = on_host(last);
    anyhow::ensure!(
        untouched.len() == 1
            && rollout.old.contains_key(&untouched[0].name_any())
            && untouched[0].metadata.deletion_timestamp.is_none(),
        "{last} was touched while {gone} was down: {untouched:?}"
    );

    ensure_nodes(&s.client, &BTreeSet::from([gone.clone()])).await?;
    let returned = std::time::Instant::now();
    rollout.finishes_once(&s, "after the node returned").await?;
    eprintln!(
        "f4: status named the waiting OSD {told:?} after its Node was deleted (the pod \
         garbage collector waits 40 s); the rollout finished {:?} after the Node returned",
        returned.elapsed()
    );
    let placed = s.owned_pods(CR).await?;
    anyhow::ensure!(
        placed.iter().all(|p| {
            let host = pod_key(p).map(|k| k.host);
            host.is_some() && p.spec.as_ref().and_then(|p| p.node_name.clone()) == host
        }),
        "a pod runs off its host: {placed:?}"
    );
    s.destroy().await
}

/// An admin (or another tool) edits the OSD pods' annotations as fast as it can while the
/// operator marks them through a rollout: the operator's state patches touch only its own
/// annotation, so every pod ends with the admin's last value and its own `pod-state`; the
/// rollout finishes in host order and no OSD is replaced twice.
#[tokio::test]
async fn f6_admin_edits_racing_the_operator_lose_nothing() -> anyhow::Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let s = Scenario::converge_with("admin-race", &OperatorOptions::default()).await?;
    let rollout = start_rollout(
        &s,
        &s.hosts(["race-a", "race-b", "race-c"]),
        &["/dev/sdb", "/dev/sdc"],
        1,
    )
    .await?;
    const TOUCHED: &str = "admin.example.com/touched";
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let admin = {
        let (pods, stop) = (s.pods.clone(), stop.clone());
        let selector = format!(
            "{}={}",
            labels::OWNER,
            ceph_osd_operator::labels::owner_label_value(CR)
        );
        tokio::spawn(async move {
            let mut written: BTreeMap<String, u32> = BTreeMap::new();
            let mut round = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                round += 1;
                let list = pods
                    .list(&kube::api::ListParams::default().labels(&selector))
                    .await?;
                for pod in list.items {
                    let name = pod.name_any();
                    let patch = json!({"metadata": {"annotations": {TOUCHED: round.to_string()}}});
                    match pods
                        .patch(
                            &name,
                            &kube::api::PatchParams::default(),
                            &kube::api::Patch::Merge(&patch),
                        )
                        .await
                    {
                        Ok(_) => {
                            written.insert(name, round);
                        }
                        // Gone meanwhile (replaced by the rollout).
                        Err(kube::Error::Api(e)) if e.code == 404 => {}
                        Err(e) => return Err(anyhow::anyhow!("admin patch of {name}: {e}")),
                    }
                }
            }
            anyhow::Ok((round, written))
        })
    };
    let finished = rollout
        .finishes_once(&s, "with an admin editing the pods")
        .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (rounds, written) = admin.await??;
    finished?;
    // A last reconcile after the admin stopped must not undo anything either.
    tokio::time::sleep(Duration::from_secs(6)).await;
    for pod in s.owned_pods(CR).await? {
        let name = pod.name_any();
        let want = written.get(&name).map(u32::to_string);
        anyhow::ensure!(
            annotation(&pod, TOUCHED) == want.as_deref(),
            "pod {name}: admin annotation {:?}, the admin last wrote {want:?}",
            annotation(&pod, TOUCHED)
        );
        anyhow::ensure!(
            annotation(&pod, labels::POD_STATE) == Some("up-to-date"),
            "pod {name}: pod-state {:?}",
            annotation(&pod, labels::POD_STATE)
        );
    }
    eprintln!("f6: the admin patched the pods in {rounds} rounds during the rollout");
    s.destroy().await
}
