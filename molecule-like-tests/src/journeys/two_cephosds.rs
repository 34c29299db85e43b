//! The lock tests' fixture: four hosts with one OSD each on one real Ceph, for two CephOSDs of
//! two hosts each, in one namespace or in two, with the bridges and Ceph's view recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use anyhow::anyhow;
use ceph_osd_operator::OsdKey;

use crate::ceph::CephCluster;
use crate::journeys::bridge::CephBridge;
use crate::journeys::scenario::Scenario;
use crate::kubernetes::manifests::keys;
use crate::recording::ceph::CephRecorder;

/// What [`four_hosts_one_ceph`] set up; no operator runs yet, no CephOSD exists.
pub struct FourHosts {
    /// The first namespace; its log dir holds the Ceph cluster, its recorder sets the clock.
    pub s1: Scenario,
    /// The second namespace (`<name>-2`), when asked for.
    pub s2: Option<Scenario>,
    /// `s1`'s own hosts: the first CephOSD's two, then the second's.
    pub hosts: [String; 4],
    /// A key per host (`/dev/sdb`).
    pub all_keys: BTreeSet<OsdKey>,
    /// An OSD per key, the pool not created yet.
    pub cluster: Arc<CephCluster>,
    /// The pod recorder's clock, which Ceph's view is timed on too.
    pub clock: Instant,
    /// Ceph's view, recorded from the start.
    pub ceph: CephRecorder,
    /// One bridge of all four hosts (one namespace), or one per namespace with its two hosts.
    pub bridges: Vec<CephBridge>,
}

/// Scenario `name` (and `<name>-2` when `two_namespaces`), each with its pod recorder; hosts
/// `bases` made `name`'s own; one Ceph with an OSD per host; Ceph's view recorded on the pod
/// recorder's clock; the bridges started.
pub async fn four_hosts_one_ceph(
    name: &str,
    two_namespaces: bool,
    bases: [&str; 4],
) -> anyhow::Result<FourHosts> {
    let mut s1 = Scenario::create(name).await?;
    s1.start_recorder().await?;
    let s2 = if two_namespaces {
        let mut s2 = Scenario::create(&format!("{name}-2")).await?;
        s2.start_recorder().await?;
        Some(s2)
    } else {
        None
    };
    let hosts = s1.hosts(bases);
    let all_keys = keys(&hosts, &["/dev/sdb"]);
    let cluster = Arc::new(CephCluster::for_scenario(&s1, 0).await?);
    let ids =
        futures::future::try_join_all(all_keys.iter().map(|k| cluster.osd_create(&k.host))).await?;
    let table: BTreeMap<OsdKey, u32> = all_keys.iter().cloned().zip(ids).collect();
    let clock = Instant::now()
        .checked_sub(s1.recorder()?.elapsed())
        .ok_or_else(|| anyhow!("no clock"))?;
    let ceph = CephRecorder::start(&cluster, clock).await?;
    let (first_hosts, second_hosts) = hosts.split_at(2);
    let of = |hosts: &[String]| -> BTreeMap<OsdKey, u32> {
        (table.iter())
            .filter(|(k, _)| hosts.contains(&k.host))
            .map(|(k, id)| (k.clone(), *id))
            .collect()
    };
    let bridges = match &s2 {
        None => {
            vec![CephBridge::start(s1.pods.clone(), Arc::clone(&cluster), &table, &ceph).await?]
        }
        Some(s2) => vec![
            CephBridge::start(
                s1.pods.clone(),
                Arc::clone(&cluster),
                &of(first_hosts),
                &ceph,
            )
            .await?,
            CephBridge::start(
                s2.pods.clone(),
                Arc::clone(&cluster),
                &of(second_hosts),
                &ceph,
            )
            .await?,
        ],
    };
    Ok(FourHosts {
        s1,
        s2,
        hosts,
        all_keys,
        cluster,
        clock,
        ceph,
        bridges,
    })
}
