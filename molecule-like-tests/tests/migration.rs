//! Migration off the Ansible operator's ReplicaSet era, on real Kubernetes: a cluster exactly as
//! its v0.6.0 left it (one ReplicaSet per OSD, its pod run by the real ReplicaSet controller),
//! then our operator. Checked on the recorded pod watch: never two live pods for one
//! `host:data` (the ReplicaSet's pod and ours alike), the update domains one at a time in
//! order, and at the end no ReplicaSet, one Ready pod of ours per OSD, status Ready.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{bail, Context as _};
use ceph_osd_operator::crd::{CephOsd, Phase, UpdateDomain};
use ceph_osd_operator::labels;
use ceph_osd_operator::labels::owner_label_value;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::apps::v1::ReplicaSet;
use kube::api::{Api, ListParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{hold, Scenario, CONVERGE, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, hash_of, keys, random_suffix, storage, CR,
};
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::kubernetes::pods::pod_key;
use serde_json::{json, Value};

/// The hosts, each scenario's own ([`Scenario::hosts`]).
const HOSTS: [&str; 2] = ["mig-a", "mig-b"];
const DATA: [&str; 2] = ["/dev/sdb", "/dev/sdc"];
/// The reference hashed a different structure: its hash never equals ours.
const ERA_HASH: &str = "0123456789abcdef";

/// A ReplicaSet as the reference's v0.6.0 made it for `host:data` under `cr`.
fn era_replica_set(cr: &CephOsd, template: &Value, host: &str, data: &str) -> ReplicaSet {
    let name = format!(
        "{}{}",
        OsdKey::new(host, data).name_prefix(),
        &random_suffix()[..5]
    );
    let owner = owner_label_value(&cr.name_any());
    let mut labels = template["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    labels[labels::OWNER] = json!(owner);
    let mut pod_labels = labels.clone();
    pod_labels["ceph.elemental.net/osd"] = json!(name);
    pod_labels["ceph.elemental.net/template-hash"] = json!(ERA_HASH);
    let mut pod_annotations = template["metadata"]["annotations"].clone();
    if !pod_annotations.is_object() {
        pod_annotations = json!({});
    }
    pod_annotations[labels::HOST] = json!(host);
    pod_annotations[labels::DATA] = json!(data);
    let mut pod_spec = template["spec"].clone();
    pod_spec["restartPolicy"] = json!("Always");
    pod_spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}});
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "ceph.elemental.net/template-hash": ERA_HASH,
                labels::HOST: host, labels::DATA: data,
                "ceph.elemental.net/state": "up-to-date",
            },
            "ownerReferences": [{"apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
                                 "name": cr.name_any(), "uid": cr.uid()}],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"ceph.elemental.net/osd": name,
                                         "ceph.elemental.net/template-hash": ERA_HASH}},
            "template": {
                "metadata": {"labels": pod_labels, "annotations": pod_annotations},
                "spec": pod_spec,
            },
        },
    }))
    .expect("a ReplicaSet")
}

/// The era cluster: the CephOSD (with `spec` tweaks) and one ReplicaSet per OSD whose pod the
/// ReplicaSet controller has made Ready. Returns the era pods: name → key.
async fn era_cluster(
    s: &mut Scenario,
    domain: &str,
    spec_patch: Value,
) -> anyhow::Result<BTreeMap<String, OsdKey>> {
    s.start_recorder().await?;
    let hosts = s.hosts(HOSTS);
    let mut manifest = cephosd(CR, storage(&hosts, &DATA), domain, fast_sample_template()?);
    if let (Some(spec), Some(patch)) = (manifest["spec"].as_object_mut(), spec_patch.as_object()) {
        spec.extend(patch.clone());
    }
    let cr = s.create_cr(&manifest).await?;
    let sets: Api<ReplicaSet> = Api::namespaced(s.client.clone(), &s.namespace);
    for host in &hosts {
        for data in DATA {
            let rs = era_replica_set(&cr, &cr_template(&cr)?, host, data);
            sets.create(&PostParams::default(), &rs)
                .await
                .with_context(|| format!("creating ReplicaSet for {host}:{data}"))?;
        }
    }
    let want = keys(&hosts, &DATA);
    let era = s
        .wait_until("the ReplicaSets' pods Ready", CONVERGE, || async {
            let pods = s.owned_pods(CR).await?;
            let ready: BTreeMap<String, OsdKey> = pods
                .iter()
                .filter(|p| molecule_like_tests::kubernetes::pods::is_ready(p))
                .filter_map(|p| Some((p.name_any(), pod_key(p)?)))
                .collect();
            let got: BTreeSet<OsdKey> = ready.values().cloned().collect();
            Ok((ready.len() == want.len() && got == want).then_some(ready))
        })
        .await?;
    Ok(era)
}

/// The podTemplate as the API server stored it (defaulted and pruned).
fn cr_template(cr: &CephOsd) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(&cr.spec.pod_template)?)
}

async fn replica_sets_left(s: &Scenario) -> anyhow::Result<Vec<String>> {
    let sets: Api<ReplicaSet> = Api::namespaced(s.client.clone(), &s.namespace);
    let selector = format!("{}={}", labels::OWNER, owner_label_value(CR));
    Ok(sets
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect())
}

/// The end state: no ReplicaSet, one Ready up-to-date pod of ours per OSD, status Ready and
/// nothing migrating; the watch shows one pod per disk throughout and the domains in order.
async fn check_migrated(
    s: &Scenario,
    era: &BTreeMap<String, OsdKey>,
    domain: UpdateDomain,
) -> anyhow::Result<()> {
    let cr = s.crs.get(CR).await?;
    let hash = hash_of(&cr);
    let want = keys(&s.hosts(HOSTS), &DATA);
    s.wait_converged(CR, &want, &hash, ROLLOUT).await?;
    s.wait_until("no ReplicaSet left", CONVERGE, || async {
        Ok(replica_sets_left(s).await?.is_empty().then_some(()))
    })
    .await?;
    s.wait_until("status Ready, nothing migrating", CONVERGE, || async {
        let status = s.cr_status(CR).await?.unwrap_or_default();
        let ready = status.phase == Some(Phase::Ready);
        Ok((ready && status.migrating == 0).then_some(()))
    })
    .await?;
    let recorder = s.recorder()?;
    recorder.catch_up(&s.pods).await?;
    recorder.assert_one_pod_per_key()?;
    recorder
        .timeline()
        .check_rollout(era, domain)
        .map_err(|e| anyhow::anyhow!("{e}\n{}", recorder.render()))?;
    Ok(())
}

#[tokio::test]
async fn m1_replica_set_era_migrates_one_osd_at_a_time() -> anyhow::Result<()> {
    let mut s = Scenario::create("migrate-osd").await?;
    let era = era_cluster(&mut s, "OSD", json!({})).await?;
    s.start_operator(&OperatorOptions::default())?;
    check_migrated(&s, &era, UpdateDomain::Osd).await?;
    s.destroy().await
}

#[tokio::test]
async fn m2_replica_set_era_migrates_one_host_at_a_time() -> anyhow::Result<()> {
    let mut s = Scenario::create("migrate-host").await?;
    let era = era_cluster(&mut s, "Host", json!({})).await?;
    s.start_operator(&OperatorOptions::default())?;
    check_migrated(&s, &era, UpdateDomain::Host).await?;
    s.destroy().await
}

#[tokio::test]
async fn m3_paused_migration_touches_nothing_and_says_what_waits() -> anyhow::Result<()> {
    let mut s = Scenario::create("migrate-paused").await?;
    let era = era_cluster(&mut s, "OSD", json!({"paused": true})).await?;
    s.start_operator(&OperatorOptions::default())?;
    s.wait_until("status: 4 OSDs migrating", CONVERGE, || async {
        let status = s.cr_status(CR).await?.unwrap_or_default();
        Ok((status.migrating == 4).then_some(()))
    })
    .await?;
    let era_names: BTreeSet<String> = era.keys().cloned().collect();
    hold(Duration::from_secs(5), || async {
        let pods = s.owned_pods(CR).await?;
        let names: BTreeSet<String> = pods.iter().map(ResourceExt::name_any).collect();
        if names != era_names || pods.iter().any(|p| p.metadata.deletion_timestamp.is_some()) {
            bail!("paused, yet the pods changed: {names:?}");
        }
        if replica_sets_left(&s).await?.len() != 4 {
            bail!("paused, yet a ReplicaSet was deleted");
        }
        Ok(())
    })
    .await?;
    s.patch_spec(CR, json!({"paused": false})).await?;
    check_migrated(&s, &era, UpdateDomain::Osd).await?;
    s.destroy().await
}

#[tokio::test]
async fn m4_operator_killed_halfway_resumes_and_nothing_is_doubled() -> anyhow::Result<()> {
    let mut s = Scenario::create("migrate-killed").await?;
    let era = era_cluster(&mut s, "OSD", json!({})).await?;
    s.start_operator(&OperatorOptions::default())?;
    // Kill it once the second OSD's ReplicaSet is being replaced.
    s.wait_until("two ReplicaSets replaced", ROLLOUT, || async {
        Ok((replica_sets_left(&s).await?.len() <= 2).then_some(()))
    })
    .await?;
    s.stop_operator();
    s.start_operator(&OperatorOptions::default())?;
    check_migrated(&s, &era, UpdateDomain::Osd).await?;
    // One pod of ours per OSD, ever.
    let timeline = s.recorder()?.timeline();
    let mut ours: BTreeMap<OsdKey, Vec<String>> = BTreeMap::new();
    for h in timeline.pods.values() {
        if let (Some(key), false) = (&h.key, era.contains_key(&h.name)) {
            ours.entry(key.clone()).or_default().push(h.name.clone());
        }
    }
    if let Some((key, names)) = ours.iter().find(|(_, n)| n.len() != 1) {
        bail!("OSD {key} got {} pods of ours: {names:?}", names.len());
    }
    s.destroy().await
}
