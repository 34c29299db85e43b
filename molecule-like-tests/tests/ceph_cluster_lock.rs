//! One step at a time per Ceph cluster, end to end: two CephOSDs on one real Ceph (4 CRUSH
//! hosts × 1 OSD, pool size 3 / min_size 2), each with two of the hosts, rolled by host; the
//! same template change applied to both at once. Ceph would let each of them stop a host if
//! asked before the other stopped one (two hosts down: PGs below min_size); the step lock (a
//! Lease per fsid) makes one wait for the other's step: in Ceph's view never two hosts down and
//! no PG unavailable, in the pod watch never two hosts without a Ready pod, the waiting CephOSD
//! names the one whose step holds the cluster, the two take turns (each step of one followed by
//! one of the other), both rollouts complete, the Lease is free at the end.
//!
//! (a) one operator for both (one namespace); (b) two namespaced operators (`--namespace`),
//! each CephOSD in its own namespace, sharing the lock namespace (`--ceph-lock-namespace`);
//! (c) as (a), the operator SIGKILLed once the first step's OSDs are down and started again:
//! the new process ends that step holding the lock (the holder is the CephOSD, not the
//! process).
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`; the cluster installs them when missing).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, ensure};
use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::ResourceExt;
use molecule_like_tests::ceph::CephCluster;
use molecule_like_tests::journeys::bridge::CephBridge;
use molecule_like_tests::journeys::gated::{
    gated_template, GateSample, GateWatch, OPERATOR_USER, PG_STATS_LAG_SECONDS,
};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::{Converged, Scenario};
use molecule_like_tests::journeys::two_cephosds::{four_hosts_one_ceph, FourHosts};
use molecule_like_tests::kubernetes::manifests::{cephosd, keys, storage};
use molecule_like_tests::kubernetes::operator::{OperatorOptions, OperatorProcess};
use molecule_like_tests::kubernetes::pods::{is_ready, names_by_key, pod_key};
use molecule_like_tests::kubernetes::rbac::grant_ceph_lock_in;
use molecule_like_tests::recording::ceph::CephRecorder;
use molecule_like_tests::recording::pods::{EventKind, PodEvent, PodRecorder};
use serde_json::json;

/// Two hosts' steps of each CephOSD, one after the other (~15–20 s each), and the waits.
const BOTH_ROLLOUTS: Duration = Duration::from_mins(5);

/// One CephOSD of the test: its scenario (namespace), name, keys, converged pods and gate.
struct Side<'a> {
    s: &'a Scenario,
    name: &'static str,
    want: BTreeSet<OsdKey>,
    converged: Converged,
    gate: GateWatch,
}

impl Side<'_> {
    /// `namespace/name`, as the lock names a holder.
    fn id(&self) -> String {
        format!("{}/{}", self.s.namespace, self.name)
    }

    fn old_pods(&self) -> BTreeMap<String, OsdKey> {
        names_by_key(&self.converged.pods)
    }

    async fn wait_idle(&self, timeout: Duration) -> anyhow::Result<()> {
        self.s
            .wait_until(
                &format!("{} idle: CephGate True CephIdle, no cephStep", self.name),
                timeout,
                || async {
                    let status = self.s.cr_status(self.name).await?.unwrap_or_default();
                    Ok((status.ceph_step.is_none()
                        && status.conditions.iter().any(|c| {
                            c.type_ == "CephGate" && c.status == "True" && c.reason == "CephIdle"
                        }))
                    .then_some(()))
                },
            )
            .await
            .map_err(|e| anyhow!("{e:#}\ngate of {}:\n{}", self.name, self.gate.render()))
    }
}

/// The operator's Ceph flags (as `Gated`'s).
fn ceph_args(cluster: &CephCluster) -> Vec<String> {
    vec![
        "--ceph-conf".into(),
        cluster.conf().display().to_string(),
        "--ceph-keyring".into(),
        cluster.keyring(OPERATOR_USER).display().to_string(),
        "--ceph-id".into(),
        OPERATOR_USER.trim_start_matches("client.").into(),
        "--ceph-timeout".into(),
        "10".into(),
        "--ceph-pg-stats-lag-seconds".into(),
        PG_STATS_LAG_SECONDS.into(),
    ]
}

fn start_operator(s: &mut Scenario, args: &[String]) -> anyhow::Result<()> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let log_filter = format!(
        "{},ceph_osd_operator::ceph::cli=debug",
        molecule_like_tests::kubernetes::operator::operator_log_filter()
    );
    s.start_operator_with_env(
        &OperatorOptions::default(),
        &args,
        &[("RUST_LOG", &log_filter)],
    )
}

/// The CephOSD `name` of `s` on `hosts`, by host, its pods Ready once their OSD is up.
async fn converged(
    s: &Scenario,
    name: &str,
    hosts: &[String],
) -> anyhow::Result<(BTreeSet<OsdKey>, Converged)> {
    let template = gated_template()?;
    let want = keys(hosts, &["/dev/sdb"]);
    let manifest = cephosd(name, storage(hosts, &["/dev/sdb"]), "Host", template);
    // Creating missing pods is never gated: their daemons are down already.
    let converged = s.create_converged(&manifest, want.clone()).await?;
    Ok((want, converged))
}

/// The steps of a CephOSD from its gate samples (each from the first sample showing it to the
/// first showing another step or none), and whether it ever said `CephClusterBusy` naming
/// `other`.
fn steps_and_waits(samples: &[GateSample], other: &str) -> (Vec<(Duration, Duration)>, bool) {
    let mut spans = Vec::new();
    let mut open: Option<(Duration, &Vec<u32>)> = None;
    let mut waited = false;
    for s in samples {
        let now = s.step.as_ref().map(|(_, ids)| ids);
        if let Some((from, ids)) = open {
            if now != Some(ids) {
                spans.push((from, s.at));
                open = None;
            }
        }
        if let (None, Some(ids)) = (open, now) {
            open = Some((s.at, ids));
        }
        if let Some((status, reason, message)) = &s.condition {
            waited |= status == "False" && reason == "CephClusterBusy" && message.contains(other);
        }
    }
    (spans, waited)
}

/// The most hosts with a key of `want` and no live Ready pod at once, over the pod events of
/// every namespace (merged on one clock) from `from` on.
fn most_hosts_unready(
    events: &[PodEvent],
    want: &BTreeSet<OsdKey>,
    from: Duration,
) -> (usize, Duration, BTreeSet<String>) {
    let mut pods: BTreeMap<String, (bool, Option<OsdKey>)> = BTreeMap::new();
    let mut most = (0, Duration::ZERO, BTreeSet::new());
    for e in events {
        let id = format!(
            "{}/{}",
            e.pod.namespace().unwrap_or_default(),
            e.pod.name_any()
        );
        if e.kind == EventKind::Deleted {
            pods.remove(&id);
        } else {
            let live = e.pod.metadata.deletion_timestamp.is_none() && is_ready(&e.pod);
            pods.insert(id, (live, pod_key(&e.pod)));
        }
        if e.at < from {
            continue;
        }
        let available: BTreeSet<&OsdKey> = pods
            .values()
            .filter(|(live, _)| *live)
            .filter_map(|(_, k)| k.as_ref())
            .collect();
        let down: BTreeSet<String> = want
            .iter()
            .filter(|k| !available.contains(k))
            .map(|k| k.host.clone())
            .collect();
        if down.len() > most.0 {
            most = (down.len(), e.at, down);
        }
    }
    most
}

/// The pod events of `recorders` on the first one's clock, in order.
fn merged_events(recorders: &[&PodRecorder]) -> Vec<PodEvent> {
    let base = recorders[0].elapsed();
    let mut all: Vec<PodEvent> = Vec::new();
    for r in recorders {
        // The same moment on both clocks: shift to the first one's.
        let shift = base.as_secs_f64() - r.elapsed().as_secs_f64();
        all.extend(r.events().into_iter().map(|mut e| {
            e.at = Duration::from_secs_f64((e.at.as_secs_f64() + shift).max(0.0));
            e
        }));
    }
    all.sort_by_key(|e| e.at);
    all
}

/// Who runs the two CephOSDs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Operators {
    /// One operator, both CephOSDs in its namespace.
    One,
    /// One operator, SIGKILLed once the first step's OSDs are down and started again.
    OneKilledMidStep,
    /// One namespaced operator per CephOSD, each in its own namespace.
    TwoNamespaced,
}

/// The shared part of the test: one Ceph (an OSD per disk of 4 hosts), one or two
/// scenarios (namespaces) with their bridges, the step lock's RBAC, the operators started.
struct Fleet {
    s1: Scenario,
    s2: Option<Scenario>,
    hosts: [String; 4],
    all_keys: BTreeSet<OsdKey>,
    cluster: Arc<CephCluster>,
    clock: Instant,
    ceph: CephRecorder,
    bridges: Vec<CephBridge>,
    args: Vec<String>,
    lock_namespace: String,
}

async fn fleet(name: &str, operators: Operators) -> anyhow::Result<Fleet> {
    let two_operators = operators == Operators::TwoNamespaced;
    let FourHosts {
        mut s1,
        mut s2,
        hosts,
        all_keys,
        cluster,
        clock,
        ceph,
        bridges,
    } = four_hosts_one_ceph(
        name,
        two_operators,
        ["lock-a", "lock-b", "lock-c", "lock-d"],
    )
    .await?;

    // The lock lives in s1's namespace: (a) the operator's default (the watched namespace),
    // (b) named by both operators.
    let lock_namespace = s1.namespace.clone();
    grant_ceph_lock_in(&s1.client, &lock_namespace).await?;
    let mut args = ceph_args(&cluster);
    if two_operators {
        args.extend(["--ceph-lock-namespace".into(), lock_namespace.clone()]);
    }
    start_operator(&mut s1, &args)?;
    if let Some(s2) = s2.as_mut() {
        start_operator(s2, &args)?;
    }

    Ok(Fleet {
        s1,
        s2,
        hosts,
        all_keys,
        cluster,
        clock,
        ceph,
        bridges,
        args,
        lock_namespace,
    })
}

/// Two CephOSDs on one Ceph changed together.
async fn two_cephosds_changed_together(name: &str, operators: Operators) -> anyhow::Result<()> {
    let Fleet {
        s1,
        s2,
        hosts,
        all_keys,
        cluster,
        clock,
        ceph,
        bridges,
        args,
        lock_namespace,
    } = fleet(name, operators).await?;
    let sides = two_sides(&s1, s2.as_ref(), &hosts, &cluster, clock).await?;

    // The same template change on both at once.
    let from = ceph.elapsed();
    let t_change = Instant::now();
    let hashes = change_both(&sides).await?;
    let fsid = cluster.cli(&["fsid"]).await?.trim().to_owned();
    let leases: Api<Lease> = Api::namespaced(s1.client.clone(), &lock_namespace);
    let lease_name = format!("ceph-osd-step-{fsid}");
    let mut restarted = None;
    if operators == Operators::OneKilledMidStep {
        restarted = Some(kill_mid_step(&s1, &sides, &ceph, &args, &leases, &lease_name).await?);
    }
    let done = wait_both_done(&sides, &hashes, &ceph, &cluster, from, t_change).await?;

    let recording = ceph.recording();
    let gates: String = sides
        .iter()
        .map(|s| format!("gate of {}:\n{}", s.id(), s.gate.render()))
        .collect();
    let report = format!(
        "{}{}{gates}",
        recording.summary(from),
        recording.render(from)
    );
    let fail = |e: anyhow::Error| anyhow!("{e:#}\n{report}");

    // Ceph's view: never two CRUSH hosts down, no PG unavailable, no noout left.
    recording.check_one_host_at_a_time(from).map_err(fail)?;

    // The pods: one per disk; each CephOSD host by host; over both, never two hosts without a
    // Ready pod.
    check_pods(&s1, s2.as_ref(), &sides, &bridges, &all_keys, t_change)
        .await
        .map_err(fail)?;

    let (spans1, spans2, transitions) =
        check_lock_turns(&sides, &leases, &lease_name, &report).await?;

    let show = |spans: &[(Duration, Duration)]| {
        spans
            .iter()
            .map(|(a, b)| format!("{:.1}–{:.1}s", a.as_secs_f64(), b.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let operators = match operators {
        Operators::One => "one operator",
        Operators::OneKilledMidStep => "one operator, SIGKILLed mid-step and started again",
        Operators::TwoNamespaced => "two namespaced operators",
    };
    Milestones::on_clock(format!("two CephOSDs on one Ceph, {operators}"), clock)
        .mark_at("changed", from)
        .figure(format!("steps of {}", sides[0].id()), show(&spans1))
        .figure(format!("steps of {}", sides[1].id()), show(&spans2))
        .figure("waited naming the other", "both")
        .span(
            format!("rollout of {} done after the change", sides[0].name),
            done[0],
        )
        .span(
            format!("rollout of {} done after the change", sides[1].name),
            done[1],
        )
        .figure(
            "the lock changed hands",
            format!("{transitions} times, free at the end"),
        )
        .section("ceph", recording.summary(from))
        .print();

    drop(sides);
    drop(restarted);
    for bridge in bridges {
        bridge.stop().await?;
    }
    drop(ceph);
    if let Some(s2) = s2 {
        s2.destroy().await?;
    }
    s1.destroy().await?;
    cluster.down()?;
    Ok(())
}

/// The two CephOSDs (two hosts each; the second in `s2` when given), converged, the pool
/// created, both gates idle.
async fn two_sides<'a>(
    s1: &'a Scenario,
    s2: Option<&'a Scenario>,
    hosts: &[String],
    cluster: &CephCluster,
    clock: Instant,
) -> anyhow::Result<[Side<'a>; 2]> {
    let (first_hosts, second_hosts) = hosts.split_at(2);
    let second_scenario = s2.unwrap_or(s1);
    let (want1, converged1) = converged(s1, "osds-1", first_hosts).await?;
    let (want2, converged2) = converged(second_scenario, "osds-2", second_hosts).await?;
    cluster.pool_create().await?;
    let sides = [
        Side {
            s: s1,
            name: "osds-1",
            want: want1,
            converged: converged1,
            gate: GateWatch::start(s1.crs.clone(), "osds-1", clock),
        },
        Side {
            s: second_scenario,
            name: "osds-2",
            want: want2,
            converged: converged2,
            gate: GateWatch::start(second_scenario.crs.clone(), "osds-2", clock),
        },
    ];
    for side in &sides {
        side.wait_idle(Duration::from_mins(1)).await?;
    }
    Ok(sides)
}

/// The same template change on both CephOSDs at once; returns their new template hashes.
async fn change_both(sides: &[Side<'_>]) -> anyhow::Result<[String; 2]> {
    let (a, b) = futures::join!(
        sides[0]
            .s
            .patch_template_metadata(sides[0].name, json!({"labels": {"rev": "2"}})),
        sides[1]
            .s
            .patch_template_metadata(sides[1].name, json!({"labels": {"rev": "2"}})),
    );
    let hashes = [a?.1, b?.1];
    Ok(hashes)
}

/// Waits for both rollouts (each CephOSD converged and idle; each one's time since the change
/// at `t_change`), every PG clean, and an osdmap sampled after both gates went idle (the end as
/// Ceph sees it).
async fn wait_both_done(
    sides: &[Side<'_>],
    hashes: &[String; 2],
    ceph: &CephRecorder,
    cluster: &CephCluster,
    from: Duration,
    t_change: Instant,
) -> anyhow::Result<Vec<Duration>> {
    let mut done = Vec::new();
    for (side, hash) in sides.iter().zip(hashes) {
        side.s
            .wait_converged(side.name, &side.want, hash, BOTH_ROLLOUTS)
            .await
            .map_err(|e| anyhow!("{e:#}\n{}", ceph.recording().summary(from)))?;
        side.wait_idle(Duration::from_mins(1)).await?;
        done.push(t_change.elapsed());
    }
    cluster.wait_clean(Duration::from_mins(1)).await?;
    // The end as Ceph sees it: an osdmap sampled after both gates went idle.
    let idle_at = ceph.elapsed();
    ceph.wait_until(
        "an osdmap sample after both gates went idle",
        Duration::from_secs(30),
        |v| v.osdmap.as_ref().is_some_and(|(at, _)| *at > idle_at),
    )
    .await?;
    Ok(done)
}

/// SIGKILLs the operator once the first step's OSDs are down in Ceph and starts a new process
/// at once; until that process ends the step, the lock stays its CephOSD's (not taken again,
/// not released, not another's). Returns the new process.
async fn kill_mid_step(
    s1: &Scenario,
    sides: &[Side<'_>],
    ceph: &CephRecorder,
    args: &[String],
    leases: &Api<Lease>,
    lease_name: &str,
) -> anyhow::Result<OperatorProcess> {
    // SIGKILL once the first step's OSDs are down in Ceph; a new process at once.
    let (side, step) = s1
        .wait_until("a step open", Duration::from_mins(1), || async {
            for side in sides {
                let status = side.s.cr_status(side.name).await?.unwrap_or_default();
                if let Some(step) = status.ceph_step {
                    return Ok(Some((side, step)));
                }
            }
            Ok(None)
        })
        .await?;
    let ids: Vec<u32> = step.osds.iter().map(|o| o.id).collect();
    ceph.wait_until("the step's OSDs down", Duration::from_mins(1), |v| {
        v.osdmap
            .as_ref()
            .is_some_and(|(_, m)| ids.iter().all(|id| m.osd(*id).is_some_and(|o| !o.up)))
    })
    .await?;
    s1.stop_operator();
    let killed_at = ceph.elapsed();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let restarted = s1.spawn_operator("restarted", &OperatorOptions::default(), &args, &[])?;
    // Until the new process ends that step, the lock stays its CephOSD's: not taken
    // again, not released, not another's.
    let looks = std::sync::atomic::AtomicUsize::new(0);
    let ended = s1
        .wait_until(
            "the step ended by the new process",
            Duration::from_mins(1),
            || async {
                let status = side.s.cr_status(side.name).await?.unwrap_or_default();
                if status.ceph_step.as_ref() != Some(&step) {
                    return Ok(Some(ceph.elapsed()));
                }
                let holder = (leases.get(lease_name).await?.spec)
                    .and_then(|s| s.holder_identity)
                    .unwrap_or_default();
                ensure!(
                    holder.starts_with(&format!("{}/", side.id())),
                    "after the restart the step lock is held by {holder:?}, not by {} whose \
                 step is open",
                    side.id()
                );
                looks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(None)
            },
        )
        .await?;
    let looks = looks.into_inner();
    ensure!(looks > 0, "the step ended before the lock was looked at");
    println!(
        "operator SIGKILLed at {:.2}s with the step of {} on {:?} open and its OSDs down; \
         the new process ended it at {:.2}s, the lock its CephOSD's throughout ({looks} \
         looks)",
        killed_at.as_secs_f64(),
        side.id(),
        step.keys,
        ended.as_secs_f64()
    );
    Ok(restarted)
}

/// The pods: one per disk; each CephOSD host by host; over both namespaces (merged on one
/// clock, from the change at `t_change` on), never two hosts without a Ready pod; each
/// bridge's rules.
async fn check_pods(
    s1: &Scenario,
    s2: Option<&Scenario>,
    sides: &[Side<'_>],
    bridges: &[CephBridge],
    all_keys: &BTreeSet<OsdKey>,
    t_change: Instant,
) -> anyhow::Result<()> {
    let mut recorders = vec![s1.recorder()?];
    if let Some(s2) = s2 {
        recorders.push(s2.recorder()?);
    }
    for side in sides {
        side.s.assert_one_pod_per_key().await?;
        side.s
            .recorder()?
            .timeline()
            .check_rollout(&side.old_pods(), UpdateDomain::Host)?;
    }
    let events = merged_events(&recorders);
    let rollout_from = recorders[0].elapsed().saturating_sub(t_change.elapsed());
    let (most, at, unready) = most_hosts_unready(&events, all_keys, rollout_from);
    ensure!(
        most <= 1,
        "{most} hosts without a Ready pod at once at {:.2}s: {unready:?}",
        at.as_secs_f64()
    );
    for bridge in bridges {
        bridge.check()?;
    }
    Ok(())
}

/// The lock: each CephOSD waited, naming the other; two steps each, taking turns; the Lease
/// free at the end, having changed hands. Returns each side's steps and the Lease's
/// transitions.
async fn check_lock_turns(
    sides: &[Side<'_>],
    leases: &Api<Lease>,
    lease_name: &str,
    report: &str,
) -> anyhow::Result<(Vec<(Duration, Duration)>, Vec<(Duration, Duration)>, i32)> {
    // The lock: one CephOSD waited, naming the other; steps never open together; the Lease
    // free at the end.
    let (spans1, waited1) = steps_and_waits(&sides[0].gate.samples(), &sides[1].id());
    let (spans2, waited2) = steps_and_waits(&sides[1].gate.samples(), &sides[0].id());
    ensure!(
        waited1 && waited2,
        "each CephOSD waits for the other's step and says so (CephClusterBusy naming it): \
         {} {waited1}, {} {waited2}\n{report}",
        sides[0].name,
        sides[1].name
    );
    ensure!(
        spans1.len() == 2 && spans2.len() == 2,
        "steps {spans1:?} and {spans2:?}: two hosts each\n{report}"
    );
    // Turns: a waiting CephOSD's step comes next, not after the other's whole rollout.
    let mut order: Vec<(Duration, &str)> = (spans1.iter().map(|s| (s.0, sides[0].name)))
        .chain(spans2.iter().map(|s| (s.0, sides[1].name)))
        .collect();
    order.sort();
    ensure!(
        order.windows(2).all(|w| w[0].1 != w[1].1),
        "the steps did not take turns: {order:?}\n{report}"
    );
    let lease = leases.get(lease_name).await?;
    let spec = lease.spec.clone().unwrap_or_default();
    ensure!(
        spec.holder_identity.is_none(),
        "the step lock is still held at the end: {spec:?}"
    );
    let transitions = spec.lease_transitions.unwrap_or(0);
    ensure!(
        transitions >= 2,
        "the lock changed hands {transitions} times: each CephOSD must have held it"
    );

    Ok((spans1, spans2, transitions))
}

/// (a) One operator, two CephOSDs in its namespace.
#[tokio::test]
async fn one_operator_two_cephosds_one_step_at_a_time() -> anyhow::Result<()> {
    Box::pin(two_cephosds_changed_together(
        "ceph-lock-one",
        Operators::One,
    ))
    .await
}

/// (b) Two namespaced operators, one CephOSD each, sharing the lock namespace.
#[tokio::test]
async fn two_namespaced_operators_one_step_at_a_time() -> anyhow::Result<()> {
    Box::pin(two_cephosds_changed_together(
        "ceph-lock-two",
        Operators::TwoNamespaced,
    ))
    .await
}

/// (c) One operator SIGKILLed once the first step's OSDs are down, started again: the new
/// process ends that step holding the lock, and the rest goes as in (a).
#[tokio::test]
async fn an_operator_killed_mid_step_keeps_the_lock_in_its_next_process() -> anyhow::Result<()> {
    Box::pin(two_cephosds_changed_together(
        "ceph-lock-kill",
        Operators::OneKilledMidStep,
    ))
    .await
}
