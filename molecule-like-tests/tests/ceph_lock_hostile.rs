//! The step lock tried as a hostile admin would, end to end on real Ceph: two CephOSDs on one
//! Ceph (4 CRUSH hosts × 1 OSD, pool size 3 / min_size 2: any two hosts down leave PGs below
//! min_size), each with two of the hosts, rolled by host, changed together. 0.5 s after the
//! lock holder's first pod deletion (its OSD still up in the osdmap, its `noout` set):
//! (1) the Lease deleted; (2) the Lease's holder overwritten with the other CephOSD's identity
//! (renewed now). The other CephOSD may then take the lock, but its `ok-to-stop` is asked
//! together with the open step's flagged OSD: in Ceph's view never two CRUSH hosts down and no
//! PG unavailable, in the pod watch never two hosts without a Ready pod; the holder says it
//! lost the lock (a `StepLockLost` Warning event) and both rollouts complete. Both rounds run
//! on one Ceph, one after the other.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{anyhow, ensure};
use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::gated::{GateWatch, Gated, GatedOptions};
use molecule_like_tests::kubernetes::manifests::{cephosd, storage, CR};
use serde_json::json;

/// The second CephOSD, on the other two hosts.
const OTHER: &str = "osds-2";
/// Two hosts' steps of each CephOSD, one after the other, and the waits.
const BOTH_ROLLOUTS: Duration = Duration::from_mins(5);
/// From the holder's pod deletion to the Lease's tampering.
const TAMPER_AFTER: Duration = Duration::from_millis(500);

/// What a hostile admin does to the Lease mid-step.
#[derive(Clone, Copy, Debug)]
enum Tamper {
    Delete,
    OverwriteHolder,
}

/// The other CephOSD: its keys, and its gate watched.
struct Other {
    want: BTreeSet<OsdKey>,
    gate: GateWatch,
}

#[tokio::test]
async fn a_lease_deleted_or_overwritten_mid_step_never_lets_two_steps_overlap() -> anyhow::Result<()>
{
    let g = Gated::up_with(
        "lock-hostile",
        &GatedOptions {
            hosts: &["lock-a", "lock-b", "lock-c", "lock-d"],
            cr_hosts: Some(&["lock-a", "lock-b"]),
            expect_idle: false,
            ..GatedOptions::default()
        },
    )
    .await?;
    let other_hosts = g.s.hosts(["lock-c", "lock-d"]);
    let other_want: BTreeSet<OsdKey> = (g.table.keys())
        .filter(|k| other_hosts.contains(&k.host))
        .cloned()
        .collect();
    let template = serde_json::to_value(&g.converged.cr.spec.pod_template)?;
    g.s.create_converged(
        &cephosd(
            OTHER,
            storage(&other_hosts, &["/dev/sdb"]),
            "Host",
            template,
        ),
        other_want.clone(),
    )
    .await?;
    g.cluster.pool_create().await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let clock = g.ceph.clock();
    let other = Other {
        want: other_want,
        gate: GateWatch::start(g.s.crs.clone(), OTHER, clock),
    };

    let mut times = Vec::new();
    for (round, tamper) in [(2, Tamper::Delete), (3, Tamper::OverwriteHolder)] {
        let started = Instant::now();
        Box::pin(round_of(&g, &other, round, tamper)).await?;
        times.push((tamper, started.elapsed()));
    }
    for (tamper, took) in times {
        println!(
            "==== {tamper:?}: both rollouts done {:.1}s after the change",
            took.as_secs_f64()
        );
    }
    g.down().await
}

/// One round: both CephOSDs changed together (template label `rev: round`), the Lease
/// tampered with 0.5 s after the holder's first pod deletion; then the checks.
async fn round_of(g: &Gated, other: &Other, round: u32, tamper: Tamper) -> anyhow::Result<()> {
    let from = g.ceph.elapsed();
    let from_seq = g.s.pod_watch_mark().await?;
    let label = json!({"labels": {"rev": round.to_string()}});
    let (a, b) = futures::join!(
        g.s.patch_template_metadata(CR, label.clone()),
        g.s.patch_template_metadata(OTHER, label.clone()),
    );
    let hashes = [(CR, a?.1, &g.want), (OTHER, b?.1, &other.want)];

    let (holder, keys, deleted_at) = first_step_deleting(g).await?;
    let leases: Api<Lease> = Api::namespaced(g.s.client.clone(), &g.s.namespace);
    let lease = (leases.list(&ListParams::default()).await?.items.into_iter())
        .find(|l| l.name_any().starts_with("ceph-osd-step-"))
        .ok_or_else(|| anyhow!("no step lock Lease in {}", g.s.namespace))?
        .name_any();
    let other_name = if holder.split('/').nth(1) == Some(CR) {
        OTHER
    } else {
        CR
    };
    let other_uid = g.s.crs.get(other_name).await?.uid().unwrap_or_default();
    let other_identity = format!("{}/{other_name}/{other_uid}", g.s.namespace);
    tokio::time::sleep_until((deleted_at + TAMPER_AFTER).into()).await;
    let tampered_at = g.ceph.elapsed();
    let after = deleted_at.elapsed();
    tamper_with_lease(&leases, &lease, &other_identity, tamper).await?;
    println!(
        "{tamper:?}: the Lease {lease} tampered with at {:.2}s, {} ms after the first pod \
         deletion of {holder}'s step on {keys:?} (the call took {} ms more)",
        tampered_at.as_secs_f64(),
        after.as_millis(),
        deleted_at.elapsed().saturating_sub(after).as_millis()
    );

    for (name, hash, want) in &hashes {
        g.s.wait_converged(name, want, hash, BOTH_ROLLOUTS)
            .await
            .map_err(|e| anyhow!("{e:#}\n{}", report(g, other, from)))?;
    }
    for name in [CR, OTHER] {
        wait_idle(g, name).await?;
    }
    g.cluster.wait_clean(Duration::from_mins(1)).await?;
    let idle_at = g.ceph.elapsed();
    g.ceph
        .wait_until(
            "an osdmap sampled after both went idle",
            Duration::from_secs(30),
            |v| v.osdmap.as_ref().is_some_and(|(at, _)| *at > idle_at),
        )
        .await?;

    let report = report(g, other, from);
    let fail = |e: anyhow::Error| anyhow!("{e:#}\n{report}");
    // Ceph's view: never two CRUSH hosts down, no PG below min_size, no noout left.
    g.ceph
        .recording()
        .check_one_host_at_a_time(from)
        .map_err(fail)?;
    // The pod watch over both CephOSDs: one pod per key, never two hosts without a Ready pod.
    g.s.assert_one_pod_per_key().await.map_err(fail)?;
    let all: BTreeSet<OsdKey> = g.want.union(&other.want).cloned().collect();
    g.s.recorder()?
        .assert_unavailable_domains_at_most(&all, UpdateDomain::Host, 1, from_seq)
        .map_err(fail)?;
    g.bridge.check().map_err(fail)?;
    let told = Told {
        holder: &holder,
        other_name,
        tamper,
        tampered_at,
    };
    check_told(g, other, &told, &report).await
}

/// The first step open with `noout` (by either CephOSD) whose pod is seen being deleted (looked
/// at every 50 ms): its holder (`namespace/name/uid`), its keys, and when. A step that ends
/// without a deletion (Ceph's answer not confirmed, the turn then the other's) is not it.
async fn first_step_deleting(g: &Gated) -> anyhow::Result<(String, Vec<String>, Instant)> {
    let deadline = Instant::now() + Duration::from_mins(1);
    loop {
        let pods = g.s.pods.list(&ListParams::default()).await?;
        let deleting: Vec<String> = (pods.items.iter())
            .filter(|p| p.metadata.deletion_timestamp.is_some())
            .filter_map(molecule_like_tests::kubernetes::pods::pod_key)
            .map(|k| k.to_string())
            .collect();
        for name in [CR, OTHER] {
            let cr = g.s.crs.get(name).await?;
            let step = cr.status.as_ref().and_then(|s| s.ceph_step.clone());
            let Some(step) = step.filter(|s| !s.noout.is_empty()) else {
                continue;
            };
            if step.keys.iter().any(|k| deleting.contains(k)) {
                let id = format!("{}/{name}/{}", g.s.namespace, cr.uid().unwrap_or_default());
                return Ok((id, step.keys, Instant::now()));
            }
        }
        ensure!(
            Instant::now() < deadline,
            "no pod of a step open with noout seen deleted within a minute\n{}",
            g.gate.render()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Deletes the step lock's Lease `name`, or writes `other` in as its holder (renewed now).
async fn tamper_with_lease(
    leases: &Api<Lease>,
    name: &str,
    other: &str,
    tamper: Tamper,
) -> anyhow::Result<()> {
    match tamper {
        Tamper::Delete => {
            leases.delete(name, &DeleteParams::default()).await?;
        }
        Tamper::OverwriteHolder => {
            let renewed = MicroTime(Timestamp::now());
            let patch = json!({"spec": {"holderIdentity": other, "renewTime": renewed}});
            leases
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
    }
    Ok(())
}

async fn wait_idle(g: &Gated, name: &str) -> anyhow::Result<()> {
    g.s.wait_until(
        &format!("{name} idle: CephGate True CephIdle, no cephStep"),
        Duration::from_mins(1),
        || async {
            let status = g.s.cr_status(name).await?.unwrap_or_default();
            Ok((status.ceph_step.is_none()
                && status.conditions.iter().any(|c| {
                    c.type_ == "CephGate" && c.status == "True" && c.reason == "CephIdle"
                }))
            .then_some(()))
        },
    )
    .await
}

fn report(g: &Gated, other: &Other, from: std::time::Duration) -> String {
    format!(
        "{}gate of {OTHER}:\n{}",
        g.report(from),
        other.gate.render()
    )
}

/// Who was told what in a round.
struct Told<'a> {
    /// The step holder's identity.
    holder: &'a str,
    /// The other CephOSD.
    other_name: &'a str,
    tamper: Tamper,
    tampered_at: Duration,
}

/// The holder said it lost the lock (a `StepLockLost` event saying what happened), and the
/// other CephOSD, when written in as the holder, was refused by Ceph for its step asked
/// together with the open step's OSDs.
async fn check_told(g: &Gated, other: &Other, told: &Told<'_>, report: &str) -> anyhow::Result<()> {
    let Told {
        holder,
        other_name,
        tamper,
        tampered_at,
    } = *told;
    let holder_name = holder.split('/').nth(1).unwrap_or_default().to_owned();
    let said: Vec<String> = (g.s.cr_events(&holder_name).await?.into_iter())
        .filter(|e| e.reason.as_deref() == Some("StepLockLost"))
        .filter_map(|e| e.note)
        .collect();
    // What this round did: the Lease deleted, or another holder (then, once that one let it
    // go, emptied).
    let words: &[&str] = match tamper {
        // Deleted: the other CephOSD, waiting for the lock, may take it before the holder
        // looks again; the holder then finds it another's.
        Tamper::Delete => &["its Lease was deleted", "its Lease names"],
        Tamper::OverwriteHolder => &["its Lease names", "its Lease was emptied"],
    };
    let told = said
        .iter()
        .find(|note| words.iter().any(|w| note.contains(w)))
        .ok_or_else(|| {
            anyhow!(
                "{holder} did not say its lock was lost (StepLockLost events: {said:?})\n{report}"
            )
        })?;
    println!("{tamper:?}: {holder} said: {told}");
    // The other CephOSD, given the lock, was held by Ceph's view of the open step.
    let others_gate = if other_name == OTHER {
        &other.gate
    } else {
        &g.gate
    };
    let held: BTreeSet<String> = (others_gate.samples().into_iter())
        .filter(|s| s.at >= tampered_at)
        .filter_map(|s| s.condition)
        .filter(|(_, _, message)| message.contains("asked together with"))
        .map(|(_, reason, message)| format!("{reason}: {message}"))
        .collect();
    if let Tamper::OverwriteHolder = tamper {
        ensure!(
            !held.is_empty(),
            "{other_name}, written in as the holder, never asked Ceph together with the open \
             step's OSDs\n{report}"
        );
    }
    println!("{tamper:?}: {other_name} was held by Ceph's view: {held:#?}");
    Ok(())
}
