//! Failure domains read from a real Ceph's CRUSH map by the operator (the key with its
//! minimal caps): a CephOSD of `updateDomain: Topology` shows in `status.failureDomains` each
//! host under the CRUSH bucket of its type, as Ceph has it now — hosts in no rack named, hosts
//! moved into racks, a host moved between racks, and `bucketType: Auto` resolved from the
//! pools' CRUSH rules (a host pool beside a rack pool: host; rack pools only: rack); with a
//! `topologyKey`, each host's Node label read beside CRUSH (no label, agreeing, relabelled to
//! disagree).
//!
//! CRUSH changes come with no Kubernetes event: each is seen through the operator's own looks.
//! Needs the local control plane, a built operator and Ceph's daemons (as `tests/ceph_gate.rs`).
//! No rollout step runs here (the pods only converge): the pod watch is recorded and checked
//! by the harness as in every gated scenario.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::FailureDomainsStatus;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::nodes;
use serde_json::json;

/// How long a CRUSH change may take to show (the operator resyncs every 5 s here and looks
/// at Ceph every second while a rollout waits).
const SHOWS_WITHIN: Duration = Duration::from_secs(30);

/// Waits until `status.failureDomains` is what `expected` says; how long it took.
async fn wait_domains(
    g: &Gated,
    what: &str,
    expected: impl Fn(&FailureDomainsStatus) -> bool,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    g.s.wait_until(what, SHOWS_WITHIN, || async {
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        Ok(status.failure_domains.filter(|d| expected(d)).map(|_| ()))
    })
    .await?;
    let took = started.elapsed();
    eprintln!(
        "[ceph_crush_reading] {what}: shown after {} ms",
        took.as_millis()
    );
    Ok(took)
}

/// The node label naming each host's rack in this test.
const RACK_LABEL: &str = "topology.example.com/rack";

/// Labels `host`'s Node with `rack`.
async fn label_node(g: &Gated, host: &str, rack: &str) -> anyhow::Result<()> {
    nodes::label_node(&g.s.client, host, RACK_LABEL, rack).await
}

fn buckets(pairs: &[(&str, &[&String])]) -> BTreeMap<String, Vec<String>> {
    pairs
        .iter()
        .map(|(bucket, hosts)| {
            let mut hosts: Vec<String> = hosts.iter().map(|h| (*h).clone()).collect();
            hosts.sort();
            ((*bucket).to_owned(), hosts)
        })
        .collect()
}

/// `ceph <words>` as an admin on the scenario's cluster.
async fn admin(g: &Gated, words: &str) -> anyhow::Result<()> {
    let args: Vec<&str> = words.split_whitespace().collect();
    g.cluster.cli(&args).await.map(drop)
}

/// Hosts in no rack, then in racks r1 {a, b}, r2 {c}, r3 {}, then b moved to r3: each shown.
/// The racks at the end.
async fn racks_and_a_moved_host(
    g: &Gated,
    [a, b, c]: &[String; 3],
) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    wait_domains(g, "every host named as in no rack", |d| {
        d.bucket_type.as_deref() == Some("rack")
            && d.buckets.is_empty()
            && [a, b, c].iter().all(|h| {
                (d.unplaced.get(*h)).is_some_and(|why| why.contains("no CRUSH bucket of type rack"))
            })
    })
    .await?;
    for rack in ["r1", "r2", "r3"] {
        admin(g, &format!("osd crush add-bucket {rack} rack")).await?;
        admin(g, &format!("osd crush move {rack} root=default")).await?;
    }
    for (host, rack) in [(a, "r1"), (b, "r1"), (c, "r2")] {
        admin(g, &format!("osd crush move {host} rack={rack}")).await?;
    }
    let in_racks = buckets(&[("r1", &[a, b]), ("r2", &[c])]);
    wait_domains(g, "hosts under their racks", |d| {
        d.buckets == in_racks && d.unplaced.is_empty()
    })
    .await?;
    admin(g, &format!("osd crush move {b} rack=r3")).await?;
    let moved = buckets(&[("r1", &[a]), ("r2", &[c]), ("r3", &[b])]);
    wait_domains(g, "the moved host under its new rack", |d| {
        d.buckets == moved && d.unplaced.is_empty()
    })
    .await?;
    Ok(moved)
}

/// `bucketType: Auto`: the test pool spreads across hosts and a new pool across racks (host
/// wins), then every pool across racks (rack).
async fn auto_from_the_pools(
    g: &Gated,
    [a, b, c]: &[String; 3],
    racks: &BTreeMap<String, Vec<String>>,
) -> anyhow::Result<()> {
    admin(g, "osd crush rule create-replicated by-rack default rack").await?;
    admin(g, "osd pool create rackpool 8 8 replicated by-rack").await?;
    g.s.patch_spec(CR, json!({"topology": {"bucketType": "Auto"}}))
        .await?;
    let by_host = buckets(&[(a, &[a]), (b, &[b]), (c, &[c])]);
    wait_domains(g, "Auto over a host pool and a rack pool: host", |d| {
        d.bucket_type.as_deref() == Some("host") && d.buckets == by_host
    })
    .await?;
    let pools = g.cluster.cli_json(&["osd", "pool", "ls"]).await?;
    for pool in pools.as_array().into_iter().flatten() {
        let pool = pool.as_str().unwrap_or_default();
        admin(g, &format!("osd pool set {pool} crush_rule by-rack")).await?;
    }
    wait_domains(g, "Auto over rack pools only: rack", |d| {
        d.bucket_type.as_deref() == Some("rack") && d.buckets == *racks
    })
    .await?;
    Ok(())
}

/// A node label beside CRUSH (`topologyKey`): placed only where both agree, a Node
/// relabelled seen as such (the node cache passes label changes on).
async fn labels_beside_crush(
    g: &Gated,
    [a, b, c]: &[String; 3],
    racks: &BTreeMap<String, Vec<String>>,
) -> anyhow::Result<()> {
    let topology = json!({"topology": {"bucketType": "rack", "topologyKey": RACK_LABEL}});
    g.s.patch_spec(CR, topology).await?;
    wait_domains(g, "hosts whose Node has no rack label named", |d| {
        d.buckets.is_empty()
            && [a, b, c].iter().all(|h| {
                (d.unplaced.get(*h)).is_some_and(|why| why.contains("its Node has no label"))
            })
    })
    .await?;
    for (host, rack) in [(a, "r1"), (b, "r3"), (c, "r2")] {
        label_node(g, host, rack).await?;
    }
    wait_domains(g, "labels that agree with CRUSH", |d| {
        d.buckets == *racks && d.unplaced.is_empty()
    })
    .await?;
    label_node(g, b, "r1").await?;
    wait_domains(g, "a label that disagrees with CRUSH named", |d| {
        (d.unplaced.get(b)).is_some_and(|why| why.contains("says r1"))
            && d.buckets == buckets(&[("r1", &[a]), ("r2", &[c])])
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn failure_domains_follow_cephs_crush_map() -> anyhow::Result<()> {
    let started = Instant::now();
    let g = Gated::up_with(
        "topo-crush",
        &GatedOptions {
            update_domain: "Topology",
            spec_patch: Some(json!({"topology": {"bucketType": "rack"}})),
            expect_idle: false,
            ..GatedOptions::default()
        },
    )
    .await?;
    eprintln!(
        "[ceph_crush_reading] converged after {} ms",
        started.elapsed().as_millis()
    );
    let hosts = g.s.hosts(["ceph-a", "ceph-b", "ceph-c"]);
    let racks = racks_and_a_moved_host(&g, &hosts).await?;
    auto_from_the_pools(&g, &hosts, &racks).await?;
    labels_beside_crush(&g, &hosts, &racks).await?;

    // The operator read all of it with its own key, each read counted.
    let log = g.s.operator_log();
    for command in [
        "osd crush tree",
        "osd crush rule dump",
        "osd pool ls detail",
    ] {
        assert!(
            log.contains(&format!("command={command}")),
            "the operator's log shows no `ceph {command}`"
        );
    }
    g.s.assert_one_pod_per_key().await?;
    eprintln!(
        "[ceph_crush_reading] done after {} ms",
        started.elapsed().as_millis()
    );
    Ok(())
}
