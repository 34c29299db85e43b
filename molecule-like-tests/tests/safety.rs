//! Safety scenarios on the control plane: stray pods with our labels never cost a healthy OSD
//! pod (nor disturb the rollout that follows), and pods another controller controls are left
//! alone while they hold their disk. Each replays its recorded pod watch against the
//! invariants: the operator creates a pod only on a free disk, never two of its pods for one
//! disk, never more update domains unavailable than `maxUnavailable` (1).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{hold, Converged, Scenario, CONVERGE, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, CR,
};
use molecule_like_tests::kubernetes::pods::{names_by_key, pod_key};
use molecule_like_tests::recording::pods::{EventKind, PodEvent};
use serde_json::json;

/// A hand-made pod: `of`'s labels, annotations and spec, no ownerReferences.
fn copy_of(of: &Pod, name: &str) -> anyhow::Result<Pod> {
    let mut pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": of.labels(), "annotations": of.annotations()},
        "spec": serde_json::to_value(&of.spec)?,
    }))?;
    pod.metadata.namespace.clone_from(&of.metadata.namespace);
    Ok(pod)
}

/// Whether a pod was created by the operator (its controller reference is a CephOSD).
fn made_by_operator(pod: &Pod) -> bool {
    pod.owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.kind == "CephOSD")
}

/// The operator's half of "never two pods on one disk": replaying the watch, every pod the
/// operator created appeared while no other pod (of any origin, terminating included) held
/// its disk.
fn check_created_on_free_disks(events: &[PodEvent], operator_cr: &str) -> Result<(), String> {
    let mut alive: BTreeMap<String, Option<OsdKey>> = BTreeMap::new();
    for e in events {
        let name = e.pod.name_any();
        match e.kind {
            EventKind::Deleted => {
                alive.remove(&name);
            }
            EventKind::Added => {
                let key = pod_key(&e.pod);
                let ours = made_by_operator(&e.pod)
                    && e.pod
                        .owner_references()
                        .iter()
                        .any(|o| o.name == operator_cr);
                if let (true, Some(key)) = (ours, &key) {
                    let holders: Vec<&String> = alive
                        .iter()
                        .filter(|(_, k)| k.as_ref().map(OsdKey::device_id) == Some(key.device_id()))
                        .map(|(n, _)| n)
                        .collect();
                    if !holders.is_empty() {
                        return Err(format!(
                            "event #{}: the operator created {name} for {key} while {holders:?} held the disk",
                            e.seq
                        ));
                    }
                }
                alive.insert(name, key);
            }
            EventKind::Modified => {
                alive.insert(name, pod_key(&e.pod));
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn stray_pods_are_removed_and_no_osd_pod_is_touched() -> anyhow::Result<()> {
    let s = Scenario::converge("stray").await?;
    let hosts = s.hosts(["node1"]);
    let data = ["/dev/sdb", "/dev/sdc", "/dev/sdd"];
    // Paused: the operator must not need a rollout to be safe.
    let mut manifest = cephosd(CR, storage(&hosts, &data), "OSD", fast_sample_template()?);
    manifest["spec"]["paused"] = json!(true);
    let Converged {
        pods: before, want, ..
    } = s.create_converged(&manifest, keys(&hosts, &data)).await?;
    let ours: BTreeMap<String, String> = before
        .values()
        .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
        .collect();
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let settled = rec.len();

    // One stray per OSD: an invalid name, and two valid-looking names that sort first.
    let key = |data: &str| OsdKey::new(&hosts[0], data);
    let pod = |data: &str| &before[&key(data)];
    let strays = [
        copy_of(pod("/dev/sdb"), "debug-copy")?,
        copy_of(
            pod("/dev/sdc"),
            &format!("{}00000", key("/dev/sdc").name_prefix()),
        )?,
        copy_of(
            pod("/dev/sdd"),
            &format!("{}aaaaa", key("/dev/sdd").name_prefix()),
        )?,
    ];
    for stray in &strays {
        s.pods.create(&PostParams::default(), stray).await?;
    }
    let stray_names: Vec<String> = strays.iter().map(ResourceExt::name_any).collect();
    s.wait_until("every stray is deleted", CONVERGE, || async {
        let left = s
            .list_pods()
            .await?
            .iter()
            .filter(|p| stray_names.contains(&p.name_any()))
            .count();
        Ok((left == 0).then_some(()))
    })
    .await?;
    // A few more reconciles: the OSD pods stay exactly the ones they were.
    hold(Duration::from_secs(4), || async {
        let now: BTreeMap<String, String> = s
            .list_pods()
            .await?
            .iter()
            .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
            .collect();
        anyhow::ensure!(now == ours, "OSD pods changed: {now:?} != {ours:?}");
        Ok(())
    })
    .await?;

    rec.catch_up(&s.pods).await?;
    let timeline = rec.timeline();
    for name in ours.keys() {
        let history = timeline.get(name)?;
        anyhow::ensure!(
            history.deletion_started.is_none(),
            "OSD pod {name} was deleted\n{}",
            rec.render()
        );
    }
    anyhow::ensure!(want.len() == ours.len());

    // Then a rollout, unpaused: one OSD at a time in key order, as if no stray had been there.
    s.patch_spec(CR, json!({"paused": false})).await?;
    let (_, hash) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    s.wait_converged(CR, &want, &hash, ROLLOUT).await?;
    rec.catch_up(&s.pods).await?;
    let old = names_by_key(&before);
    rec.timeline().check_rollout(&old, UpdateDomain::Osd)?;
    check_created_on_free_disks(&rec.events(), CR)
        .map_err(|e| anyhow::anyhow!("{e}\n{}", rec.render()))?;
    rec.assert_one_controlled_pod_per_key()?;
    rec.assert_unavailable_domains_at_most(&want, UpdateDomain::Osd, 1, settled)?;
    s.destroy().await
}

#[tokio::test]
async fn a_pod_of_another_controller_is_left_alone_and_holds_its_disk() -> anyhow::Result<()> {
    let s = Scenario::converge("foreign").await?;
    let node1 = s.host("node1");
    let sdb = OsdKey::new(&node1, "/dev/sdb");
    // Named as one of our pods of node1:/dev/sdb would be.
    let foreign_name = format!("{}other", sdb.name_prefix());
    let template = fast_sample_template()?;
    // The other controller's object (a ConfigMap stands for it: the garbage collector keeps
    // the pod while it exists, and no controller acts on the pod); its pod carries our CR's
    // owner label and the annotations of one of our OSDs, and runs on that OSD's host.
    let config_maps: Api<ConfigMap> = Api::namespaced(s.client.clone(), &s.namespace);
    let other: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}
    }))?;
    let other = config_maps.create(&PostParams::default(), &other).await?;
    let mut foreign: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": foreign_name,
            "namespace": s.namespace,
            "labels": {"ceph.elemental.net/owner": format!("CephOSD-{CR}")},
            "annotations": {"ceph.elemental.net/host": node1, "ceph.elemental.net/data": "/dev/sdb",
                            "ceph.elemental.net/pod-template-hash": "0000000000000000",
                            "ceph.elemental.net/pod-state": "up-to-date"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                "name": "other", "uid": other.uid().unwrap_or_default(), "controller": true}],
        },
        "spec": template["spec"].clone(),
    }))?;
    foreign.spec.get_or_insert_with(Default::default).node_name = Some(node1.clone());
    foreign = s.pods.create(&PostParams::default(), &foreign).await?;

    let hosts = [&node1];
    let data = ["/dev/sdb", "/dev/sdc"];
    s.create_cr(&cephosd(CR, storage(&hosts, &data), "OSD", template))
        .await?;
    let status = s
        .wait_until("the status reports the foreign pod", CONVERGE, || async {
            Ok(s.cr_status(CR)
                .await?
                .filter(|st| st.foreign == 1 && st.ready == 1))
        })
        .await?;
    anyhow::ensure!(status.foreign_pods == [foreign_name.clone()], "{status:?}");
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let settled = rec.len();
    // From now on (the kubelet has made it Ready) nobody writes to it.
    let foreign_version = s.pods.get(&foreign.name_any()).await?.resource_version();
    // Over several reconciles: untouched, and no second pod for its disk.
    hold(Duration::from_secs(4), || async {
        let pods = s.owned_pods(CR).await?;
        let on_sdb: Vec<String> = pods
            .iter()
            .filter(|p| pod_key(p).as_ref() == Some(&sdb))
            .map(ResourceExt::name_any)
            .collect();
        anyhow::ensure!(
            on_sdb == [foreign_name.clone()],
            "pods for {sdb}: {on_sdb:?}"
        );
        let now = s.pods.get(&foreign_name).await?;
        anyhow::ensure!(
            now.resource_version() == foreign_version,
            "the foreign pod was written"
        );
        Ok(())
    })
    .await?;
    let events = s.cr_events(CR).await?;
    let told = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("ForeignPod"))
        .count();
    anyhow::ensure!(told == 1, "ForeignPod events: {told}");

    // Once the other controller's pod is gone, the OSD gets a pod of ours.
    s.pods
        .delete(&foreign_name, &DeleteParams::default())
        .await?;
    let cr = s.crs.get(CR).await?;
    let hash = ceph_osd_operator::TemplateHash::of(&cr.spec.pod_template).to_string();
    let want = keys(&hosts, &data);
    s.wait_converged(CR, &want, &hash, CONVERGE).await?;
    rec.catch_up(&s.pods).await?;
    check_created_on_free_disks(&rec.events(), CR)
        .map_err(|e| anyhow::anyhow!("{e}\n{}", rec.render()))?;
    // Here every pod counts: the foreign pod held its disk until it was gone.
    rec.assert_one_pod_per_key()?;
    // Only the foreign pod's disk was ever down once both OSDs were served.
    rec.assert_unavailable_domains_at_most(&want, UpdateDomain::Osd, 1, settled)?;
    s.destroy().await
}
