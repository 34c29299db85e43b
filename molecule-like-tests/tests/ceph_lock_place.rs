//! One lock place per Ceph cluster, end to end: two namespaced operators with default settings
//! (each takes the step lock in its own namespace: two Leases for one fsid), one CephOSD each on
//! one real Ceph (4 CRUSH hosts × 1 OSD, pool size 3 / min_size 2, two hosts each), the same
//! template change applied to both at once. The first to step records its lock's place in Ceph
//! (config-key `ceph-osd-operator/step-lock-place`); the other refuses before it stops anything:
//! its `CephGate` False `CephLockPlaceDiffers` names both places and the flag that joins them,
//! none of its pods is deleted while the first rolls. In Ceph's view one CRUSH host down at most
//! and no PG unavailable. Then the refused operator is started again with that flag
//! (`--ceph-lock-namespace=<the first's>`) and rolls its CephOSD, still one host at a time.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`; the cluster installs them when missing).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, ensure};
use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::ResourceExt;
use molecule_like_tests::ceph::CephCluster;
use molecule_like_tests::journeys::bridge::CephBridge;
use molecule_like_tests::journeys::gated::{ceph_args, gated_template, GateWatch, OPERATOR_USER};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::{Converged, Scenario};
use molecule_like_tests::journeys::two_cephosds::{four_hosts_one_ceph, FourHosts};
use molecule_like_tests::kubernetes::manifests::{cephosd, keys, storage};
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::kubernetes::pods::names_by_key;
use molecule_like_tests::kubernetes::rbac::grant_ceph_lock_in;
use molecule_like_tests::recording::ceph::CephRecorder;
use molecule_like_tests::recording::pods::EventKind;
use serde_json::json;

const PLACE_KEY: &str = "ceph-osd-operator/step-lock-place";
/// Two hosts' steps (~15–20 s each) and the waits.
const ROLLOUT: Duration = Duration::from_mins(3);

/// One namespaced operator's CephOSD: its scenario (namespace), keys, converged pods, gate.
struct Side {
    s: Scenario,
    want: BTreeSet<OsdKey>,
    converged: Converged,
    gate: GateWatch,
}

const NAME: &str = "osds";

impl Side {
    async fn wait_idle(&self, timeout: Duration) -> anyhow::Result<()> {
        self.s
            .wait_until("CephGate True CephIdle, no cephStep", timeout, || async {
                let status = self.s.cr_status(NAME).await?.unwrap_or_default();
                Ok((status.ceph_step.is_none()
                    && status.conditions.iter().any(|c| {
                        c.type_ == "CephGate" && c.status == "True" && c.reason == "CephIdle"
                    }))
                .then_some(()))
            })
            .await
            .map_err(|e| {
                anyhow!(
                    "{e:#}\ngate of {}:\n{}",
                    self.s.namespace,
                    self.gate.render()
                )
            })
    }

    /// The `CephGate` message once it says `CephLockPlaceDiffers`, if it has.
    fn refusal(&self) -> Option<(Duration, String)> {
        self.gate.samples().into_iter().find_map(|s| {
            s.condition
                .filter(|(status, reason, _)| status == "False" && reason == "CephLockPlaceDiffers")
                .map(|(_, _, message)| (s.at, message))
        })
    }

    /// Pods of this side deleted (or marked for deletion) from `from` on, by name.
    fn deleted_since(&self, from: Duration) -> anyhow::Result<BTreeSet<String>> {
        Ok(self
            .s
            .recorder()?
            .events()
            .into_iter()
            .filter(|e| e.at >= from)
            .filter(|e| e.kind == EventKind::Deleted || e.pod.metadata.deletion_timestamp.is_some())
            .map(|e| e.pod.name_any())
            .collect())
    }
}

async fn side(s: Scenario, hosts: &[String], clock: Instant) -> anyhow::Result<Side> {
    let want = keys(hosts, &["/dev/sdb"]);
    let manifest = cephosd(
        NAME,
        storage(hosts, &["/dev/sdb"]),
        "Host",
        gated_template()?,
    );
    // Creating missing pods is never gated: their daemons are down already.
    let converged = s.create_converged(&manifest, want.clone()).await?;
    let gate = GateWatch::start(s.crs.clone(), NAME, clock);
    Ok(Side {
        s,
        want,
        converged,
        gate,
    })
}

/// Two namespaces, one Ceph (an OSD per host, two hosts for each namespace's CephOSD), each
/// namespace's operator started with default settings, both CephOSDs converged and idle.
struct Fleet {
    sides: [Side; 2],
    cluster: Arc<CephCluster>,
    ceph: CephRecorder,
    bridges: Vec<CephBridge>,
    args: Vec<String>,
    /// This Kubernetes cluster's identity: the kube-system Namespace's uid.
    kube_system: String,
    clock: Instant,
}

async fn fleet() -> anyhow::Result<Fleet> {
    let FourHosts {
        mut s1,
        s2,
        hosts,
        cluster,
        clock,
        ceph,
        bridges,
        ..
    } = four_hosts_one_ceph(
        "lock-place",
        true,
        ["place-a", "place-b", "place-c", "place-d"],
    )
    .await?;
    let mut s2 = s2.ok_or_else(|| anyhow!("no second namespace"))?;
    let (first_hosts, second_hosts) = hosts.split_at(2);

    // Default settings: each operator's lock namespace is its own (watched) namespace, as
    // deploy/ceph-gate grants it.
    let args = ceph_args(&cluster, OPERATOR_USER);
    let args_str: Vec<&str> = args.iter().map(String::as_str).collect();
    for s in [&mut s1, &mut s2] {
        grant_ceph_lock_in(&s.client, &s.namespace).await?;
        s.start_operator_with_args(&OperatorOptions::default(), &args_str)?;
    }
    let kube_system = Api::<Namespace>::all(s1.client.clone())
        .get("kube-system")
        .await?
        .uid()
        .ok_or_else(|| anyhow!("kube-system has no uid"))?;

    let sides = [
        side(s1, first_hosts, clock).await?,
        side(s2, second_hosts, clock).await?,
    ];
    cluster.pool_create().await?;
    for side in &sides {
        side.wait_idle(Duration::from_mins(1)).await?;
    }
    Ok(Fleet {
        sides,
        cluster,
        ceph,
        bridges,
        args,
        kube_system,
        clock,
    })
}

impl Fleet {
    /// Ceph's view and every gate since `from`.
    fn report(&self, from: Duration) -> String {
        let recording = self.ceph.recording();
        let gates: String = (self.sides.iter())
            .map(|s| format!("gate of {}:\n{}", s.s.namespace, s.gate.render()))
            .collect();
        format!(
            "{}{}{gates}",
            recording.summary(from),
            recording.render(from)
        )
    }

    /// The side that refuses first, when, and its `CephGate` message naming both places.
    async fn refused(&self, from: Duration) -> anyhow::Result<(usize, Duration, String)> {
        let (loser, at, message) = self.sides[0]
            .s
            .wait_until(
                "one operator refuses: CephLockPlaceDiffers",
                Duration::from_mins(1),
                || async {
                    Ok((self.sides.iter())
                        .enumerate()
                        .find_map(|(i, s)| s.refusal().map(|(at, m)| (i, at, m))))
                },
            )
            .await
            .map_err(|e| anyhow!("{e:#}\n{}", self.report(from)))?;
        let uid = &self.kube_system;
        let (win_ns, lose_ns) = (
            &self.sides[1 - loser].s.namespace,
            &self.sides[loser].s.namespace,
        );
        for part in [
            format!("names Lease namespace {win_ns} of the Kubernetes cluster whose kube-system uid is {uid}"),
            format!("this operator's is Lease namespace {lose_ns} of the Kubernetes cluster whose kube-system uid is {uid}"),
            format!("--ceph-lock-namespace={win_ns} on every operator of this Ceph"),
        ] {
            ensure!(message.contains(&part), "the refusal lacks {part:?}: {message}");
        }
        Ok((loser, at, message))
    }

    /// While the winner rolls, the refused side deletes no pod and opens no step, its refusal
    /// standing; Ceph's record names the winner's place. Returns the winner's rollout time.
    async fn winner_rolls_alone(
        &self,
        loser: usize,
        message: &str,
        hash: &str,
        from: Duration,
    ) -> anyhow::Result<Duration> {
        let (winner, refused) = (&self.sides[1 - loser], &self.sides[loser]);
        let t_win = Instant::now();
        (winner.s)
            .wait_converged(NAME, &winner.want, hash, ROLLOUT)
            .await
            .map_err(|e| anyhow!("{e:#}\n{}", self.report(from)))?;
        winner.wait_idle(Duration::from_mins(1)).await?;
        let winner_done = t_win.elapsed();
        // The change on the refused side's recorder clock.
        let changed = (refused.s.recorder()?.elapsed())
            .saturating_sub(self.ceph.elapsed().saturating_sub(from));
        let deleted = refused.deleted_since(changed)?;
        ensure!(
            deleted.is_empty(),
            "the refused operator deleted {deleted:?}\n{}",
            self.report(from)
        );
        let samples = refused.gate.samples();
        ensure!(
            samples.iter().all(|s| s.step.is_none()),
            "the refused operator opened a step\n{}",
            self.report(from)
        );
        ensure!(
            samples.last().is_some_and(|s| s
                .condition
                .as_ref()
                .is_some_and(|c| { c.1 == "CephLockPlaceDiffers" && c.2 == message })),
            "the refusal did not stand while the other rolled\n{}",
            self.report(from)
        );
        let record: serde_json::Value =
            serde_json::from_str(&self.cluster.cli(&["config-key", "get", PLACE_KEY]).await?)?;
        let win_ns = &winner.s.namespace;
        ensure!(
            record["place"] == json!({"kubernetes": self.kube_system, "namespace": win_ns})
                && record["writer"] == json!(format!("{win_ns}/{NAME}")),
            "Ceph's record: {record}"
        );
        Ok(winner_done)
    }

    /// The flag that joins them: the refused operator started again on the winner's lock
    /// namespace (the Role there binds the same ServiceAccount) rolls its CephOSD. Returns its
    /// rollout time.
    async fn join_and_roll(
        &mut self,
        loser: usize,
        hash: &str,
        from: Duration,
    ) -> anyhow::Result<Duration> {
        let win_ns = self.sides[1 - loser].s.namespace.clone();
        let mut joined = self.args.clone();
        joined.extend(["--ceph-lock-namespace".to_owned(), win_ns]);
        let joined: Vec<&str> = joined.iter().map(String::as_str).collect();
        let t_join = Instant::now();
        let side = &mut self.sides[loser];
        side.s.stop_operator();
        (side.s).start_operator_with_args(&OperatorOptions::default(), &joined)?;
        let side = &self.sides[loser];
        (side.s)
            .wait_converged(NAME, &side.want, hash, ROLLOUT)
            .await
            .map_err(|e| anyhow!("{e:#}\n{}", self.report(from)))?;
        side.wait_idle(Duration::from_mins(1)).await?;
        let done = t_join.elapsed();
        self.cluster.wait_clean(Duration::from_mins(1)).await?;
        let idle_at = self.ceph.elapsed();
        self.ceph
            .wait_until(
                "an osdmap sample after both went idle",
                Duration::from_secs(30),
                |v| v.osdmap.as_ref().is_some_and(|(at, _)| *at > idle_at),
            )
            .await?;
        Ok(done)
    }

    /// Ceph's view over the whole run: one CRUSH host down at most, no PG unavailable; each
    /// CephOSD host by host in its pod watch; each bridge's rules.
    async fn check_one_host_at_a_time(&self, from: Duration) -> anyhow::Result<()> {
        let full = self.report(from);
        (self.ceph.recording())
            .check_one_host_at_a_time(from)
            .map_err(|e| anyhow!("{e:#}\n{full}"))?;
        for side in &self.sides {
            side.s.assert_one_pod_per_key().await?;
            (side.s.recorder()?.timeline())
                .check_rollout(&names_by_key(&side.converged.pods), UpdateDomain::Host)
                .map_err(|e| anyhow!("{e:#}\n{full}"))?;
        }
        for bridge in &self.bridges {
            bridge.check()?;
        }
        Ok(())
    }

    async fn down(self) -> anyhow::Result<()> {
        let Self {
            sides,
            cluster,
            ceph,
            bridges,
            ..
        } = self;
        for bridge in bridges {
            bridge.stop().await?;
        }
        drop(ceph);
        let [a, b] = sides;
        for side in [b, a] {
            drop(side.gate);
            side.s.destroy().await?;
        }
        cluster.down()
    }
}

#[tokio::test]
async fn two_namespaced_operators_with_default_settings_one_steps_the_other_refuses_naming_both(
) -> anyhow::Result<()> {
    let mut fleet = Box::pin(fleet()).await?;

    // The same template change on both at once.
    let from = fleet.ceph.elapsed();
    let [a, b] = &fleet.sides;
    let rev = json!({"labels": {"rev": "2"}});
    let (a, b) = futures::join!(
        a.s.patch_template_metadata(NAME, rev.clone()),
        b.s.patch_template_metadata(NAME, rev.clone()),
    );
    let hashes = [a?.1, b?.1];

    let (loser, refused_at, message) = fleet.refused(from).await?;
    let winner_done = fleet
        .winner_rolls_alone(loser, &message, &hashes[1 - loser], from)
        .await?;
    let joined_done = fleet.join_and_roll(loser, &hashes[loser], from).await?;
    fleet.check_one_host_at_a_time(from).await?;

    let (win_ns, lose_ns) = (
        &fleet.sides[1 - loser].s.namespace,
        &fleet.sides[loser].s.namespace,
    );
    Milestones::on_clock(
        "two namespaced operators with default settings on one Ceph",
        fleet.clock,
    )
    .mark_at("changed", from)
    .mark_at(
        format!("{lose_ns} refused (CephLockPlaceDiffers)"),
        refused_at,
    )
    .figure("its CephGate message", &message)
    .span(
        format!("rollout of {win_ns} done after the change"),
        winner_done,
    )
    .figure(format!("pods of {lose_ns} deleted meanwhile"), "0")
    .span(
        format!("rollout of {lose_ns} done after it joined {win_ns}'s lock"),
        joined_done,
    )
    .section("ceph", fleet.ceph.recording().summary(from))
    .print();

    Box::pin(fleet.down()).await
}
