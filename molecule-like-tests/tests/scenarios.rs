//! End-to-end scenarios, Molecule-style: create → converge → verify → destroy, each in
//! a namespace of its own, against the local control plane and the real operator binary.
//!
//! Needs: `molecule-like-tests/control-plane install && molecule-like-tests/control-plane up`
//! and a built operator (`cargo build -p ceph-osd-operator`); `molecule-like-tests/run` does
//! all of that. On failure each scenario prints its pods, the recorded pod events and the
//! operator's log tail.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ceph_osd_operator::crd::{CephOsd, UpdateDomain};
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{hold, Converged, Scenario, CONVERGE, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, hash_of, keys, never_ready_revision, random_suffix,
    ready_again_revision, reference_pod, storage, with_kubelet_knobs, Knobs, CR,
};
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::kubernetes::pods::{annotation, is_ready, names_by_key, pod_key};
use molecule_like_tests::recording::pods::PodRecorder;
use serde_json::{json, Value};

fn uids(pods: &BTreeMap<OsdKey, Pod>) -> BTreeMap<OsdKey, String> {
    pods.iter()
        .map(|(k, p)| (k.clone(), p.uid().unwrap_or_default()))
        .collect()
}

/// Sample hosts (each scenario uses its own: `s.hosts(SAMPLE_HOSTS)`, as `s.own_sample()` does)
/// and devices.
const SAMPLE_HOSTS: [&str; 2] = ["worker041.example.com", "worker042.example.com"];
const SAMPLE_DATA: [&str; 2] = [
    "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-1",
    "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-2",
];

fn sample_db(data: &str) -> &'static str {
    if data.ends_with("slot-1") {
        "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-10-part1"
    } else {
        "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-10-part2"
    }
}

/// The sample CR on the scenario's own hosts, with the kubelet knobs (ready after 1 s, grace
/// 1 s).
fn sample_cr(s: &Scenario, update_domain: &str) -> anyhow::Result<Value> {
    let sample = s.own_sample()?;
    Ok(cephosd(
        CR,
        sample["spec"]["storage"].clone(),
        update_domain,
        fast_sample_template()?,
    ))
}

// 1 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn s1_reference_sample_creates_four_ready_pods() -> anyhow::Result<()> {
    let s = Scenario::converge("sample").await?;
    let hosts = s.hosts(SAMPLE_HOSTS);
    let Converged { cr, hash, pods, .. } = s
        .create_converged(&sample_cr(&s, "Host")?, keys(&hosts, &SAMPLE_DATA))
        .await?;

    // osd-<the host's first label>-<device basename, \W → ->-, at most 58 characters.
    let [w41, w42] = ["worker041", "worker042"].map(|h| s.host(h));
    let expected_prefixes: BTreeSet<String> = [
        format!("osd-{w41}-pci-0000-5c-00-0-encl-0-7-0-slot-1-"),
        format!("osd-{w41}-pci-0000-5c-00-0-encl-0-7-0-slot-2-"),
        format!("osd-{w42}-pci-0000-5c-00-0-encl-0-7-0-slot-1-"),
        format!("osd-{w42}-pci-0000-5c-00-0-encl-0-7-0-slot-2-"),
    ]
    .map(|p| p.chars().take(58).collect())
    .into();
    let mut prefixes = BTreeSet::new();
    for (key, pod) in &pods {
        prefixes.insert(key.name_prefix());
        check_sample_pod(key, pod, &cr, &hash)?;
    }
    anyhow::ensure!(
        prefixes == expected_prefixes,
        "prefixes {prefixes:?} != {expected_prefixes:?}"
    );
    s.assert_one_pod_per_key().await?;
    s.destroy().await
}

/// One pod of the reference sample: its name (the key's prefix + 5 random [a-z0-9]), labels,
/// annotations, ownerReference to `cr`, node affinity, env, Running and Ready.
fn check_sample_pod(key: &OsdKey, pod: &Pod, cr: &CephOsd, hash: &str) -> anyhow::Result<()> {
    let name = pod.name_any();
    let v = serde_json::to_value(pod)?;
    let prefix = key.name_prefix();
    let suffix = name.strip_prefix(&prefix).unwrap_or_default();
    anyhow::ensure!(
        suffix.len() == 5
            && suffix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()),
        "{name}: expected {prefix} + 5 random [a-z0-9]"
    );
    // Labels: the template's plus the owner label.
    let pod_labels = pod.labels();
    anyhow::ensure!(
        pod_labels.get(labels::OWNER).map(String::as_str) == Some("CephOSD-ceph-osds"),
        "{name}: owner label {pod_labels:?}"
    );
    anyhow::ensure!(
        pod_labels.get("role").map(String::as_str) == Some("osd"),
        "{name}: template label lost: {pod_labels:?}"
    );
    // Annotations.
    anyhow::ensure!(annotation(pod, labels::TEMPLATE_HASH) == Some(hash));
    anyhow::ensure!(annotation(pod, labels::HOST) == Some(key.host.as_str()));
    anyhow::ensure!(annotation(pod, labels::DATA) == Some(key.data.as_str()));
    anyhow::ensure!(
        annotation(pod, labels::DB) == Some(sample_db(&key.data)),
        "{name}: db annotation {:?}",
        annotation(pod, labels::DB)
    );
    anyhow::ensure!(
        annotation(pod, labels::WAL).is_none(),
        "{name}: no wal configured"
    );
    anyhow::ensure!(annotation(pod, labels::POD_STATE) == Some("up-to-date"));
    anyhow::ensure!(
        annotation(pod, "testing.local/ready-after-seconds") == Some("1"),
        "{name}: template annotations lost"
    );
    // ownerReference to the CR.
    let owners = pod.owner_references();
    anyhow::ensure!(
        owners
            .iter()
            .any(|o| Some(&o.uid) == cr.metadata.uid.as_ref()
                && o.kind == "CephOSD"
                && o.name == CR),
        "{name}: ownerReferences {owners:?}"
    );
    // Node affinity: exactly one term for the host.
    let terms = &v["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    anyhow::ensure!(
        *terms
            == json!([{"matchExpressions": [{
                "key": "kubernetes.io/hostname", "operator": "In", "values": [key.host],
            }]}]),
        "{name}: nodeSelectorTerms {terms}"
    );
    // Env: the template's, then the three device variables as plain values (the pod's
    // record of its disk; no later annotation edit can change it), empty when unset.
    let env: Vec<(String, String)> = v["spec"]["containers"][0]["env"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let value = match (e["value"].as_str(), e.get("valueFrom")) {
                (_, Some(from)) => format!(
                    "from {}",
                    from["fieldRef"]["fieldPath"].as_str().unwrap_or("?")
                ),
                // The API server leaves out an empty value.
                (value, None) => value.unwrap_or_default().to_owned(),
            };
            (e["name"].as_str().unwrap_or_default().to_owned(), value)
        })
        .collect();
    let want_env: Vec<(String, String)> = [
        ("TEST", "test123"),
        ("OSD_DEVICE", key.data.as_str()),
        ("OSD_DB_DEVICE", sample_db(&key.data)),
        ("OSD_WAL_DEVICE", ""),
        // The pod as its Ceph daemon reports it (`ceph osd metadata`).
        ("POD_NAME", "from metadata.name"),
        ("POD_NAMESPACE", "from metadata.namespace"),
        ("NODE_NAME", "from spec.nodeName"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    anyhow::ensure!(env == want_env, "{name}: env {env:?}");
    anyhow::ensure!(
        is_ready(pod) && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"),
        "{name}: not Running and Ready"
    );
    Ok(())
}

// 2 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn s2_pod_deleted_by_hand_is_recreated_after_the_old_one_is_gone() -> anyhow::Result<()> {
    let s = Scenario::converge("recreate").await?;
    // The old pod stays terminating for its 3 s grace period.
    let template = with_kubelet_knobs(
        fast_sample_template()?,
        Knobs {
            ready_after: 1,
            never_ready: false,
            grace: 3,
        },
    );
    let worker1 = s.host("worker1");
    let hosts = [&worker1];
    let data = ["/dev/sdb", "/dev/sdc"];
    let Converged {
        want,
        hash,
        pods: before,
        ..
    } = s
        .create_converged(
            &cephosd(CR, storage(&hosts, &data), "OSD", template),
            keys(&hosts, &data),
        )
        .await?;

    let victim_key = OsdKey::new(&worker1, "/dev/sdb");
    let victim = before[&victim_key].name_any();
    s.pods.delete(&victim, &DeleteParams::default()).await?;
    let after = s
        .wait_until("the deleted pod is replaced", CONVERGE, || async {
            let pods = s.wait_converged(CR, &want, &hash, CONVERGE).await?;
            Ok((pods[&victim_key].name_any() != victim).then_some(pods))
        })
        .await?;
    let other = OsdKey::new(&worker1, "/dev/sdc");
    anyhow::ensure!(
        after[&other].uid() == before[&other].uid(),
        "the other OSD's pod was touched"
    );

    s.assert_one_pod_per_key().await?;
    let rec = s.recorder()?;
    let t = rec.timeline();
    let old = t.get(&victim)?;
    let new = t.get(&after[&victim_key].name_any())?;
    let (Some(gone), Some(created)) = (old.gone, new.created) else {
        anyhow::bail!("incomplete history: {old:?} {new:?}\n{}", rec.render());
    };
    anyhow::ensure!(
        created > gone,
        "replacement created at #{created}, before the old pod was gone at #{gone}\n{}",
        rec.render()
    );
    s.destroy().await
}

// 3, 4 ---------------------------------------------------------------------------------------

/// A podTemplate edit rolls every pod once, in the order of `domain`.
async fn rollout(name: &str, domain: UpdateDomain) -> anyhow::Result<()> {
    let s = Scenario::converge(name).await?;
    // Case matters for the order: case-insensitively "ata-b" < "ATA-C" < "ata-d" (bytewise
    // "ATA-C" would come first). Hosts are lower-case node names; listed out of order.
    let hosts = s.hosts(["worker-b", "worker-a"]);
    let data = [
        "/dev/disk/by-id/ata-b",
        "/dev/disk/by-id/ATA-C",
        "/dev/disk/by-id/ata-d",
    ];
    let domain_name = match domain {
        UpdateDomain::Osd => "OSD",
        UpdateDomain::Host => "Host",
        UpdateDomain::Topology => "Topology",
    };
    let manifest = cephosd(
        CR,
        storage(&hosts, &data),
        domain_name,
        fast_sample_template()?,
    );
    let Converged {
        want,
        hash,
        pods: before,
        ..
    } = s.create_converged(&manifest, keys(&hosts, &data)).await?;
    let old = names_by_key(&before);

    let (_, new_hash) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    anyhow::ensure!(
        new_hash != hash,
        "the template edit did not change the hash"
    );
    let after = s.wait_converged(CR, &want, &new_hash, ROLLOUT).await?;
    anyhow::ensure!(
        after.values().all(|p| !old.contains_key(&p.name_any())),
        "an old pod survived"
    );
    s.assert_one_pod_per_key().await?;
    let rec = s.recorder()?;
    rec.timeline()
        .check_rollout(&old, domain)
        .map_err(|e| anyhow::anyhow!("{e}\n{}", rec.render()))?;
    s.destroy().await
}

#[tokio::test]
async fn s3_template_edit_rolls_one_osd_at_a_time_in_key_order() -> anyhow::Result<()> {
    rollout("roll-osd", UpdateDomain::Osd).await
}

#[tokio::test]
async fn s4_template_edit_rolls_one_host_at_a_time_in_host_order() -> anyhow::Result<()> {
    rollout("roll-host", UpdateDomain::Host).await
}

// 5 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn s5_never_ready_replacement_halts_override_continues_fix_restarts() -> anyhow::Result<()> {
    let s = Scenario::converge_with("halt", &OperatorOptions { resync_seconds: 2 }).await?;
    let hosts = s.hosts(["worker1"]);
    let data = ["/dev/sdb", "/dev/sdc", "/dev/sdd"];
    let [k1, k2, k3] = data.map(|d| OsdKey::new(&hosts[0], d));
    let manifest = cephosd(CR, storage(&hosts, &data), "OSD", fast_sample_template()?);
    let Converged { want, pods: v1, .. } =
        s.create_converged(&manifest, keys(&hosts, &data)).await?;

    // A template whose pods never get Ready.
    let (_, hash2) = s
        .patch_template_metadata(CR, never_ready_revision("2"))
        .await?;
    // The replacement of k1 appears, waiting for Ready forever.
    let stuck_pod = |key: OsdKey| {
        let s = &s;
        let hash2 = hash2.clone();
        async move {
            let pods = s.owned_pods(CR).await?;
            Ok(pods.into_iter().find(|p| {
                pod_key(p).as_ref() == Some(&key)
                    && annotation(p, labels::TEMPLATE_HASH) == Some(hash2.as_str())
                    && annotation(p, labels::POD_STATE) == Some("wait-for-ready")
                    && p.metadata.deletion_timestamp.is_none()
            }))
        }
    };
    let stuck1 = s
        .wait_until("k1's never-Ready replacement exists", ROLLOUT, || {
            stuck_pod(k1.clone())
        })
        .await?;
    // The rollout halts: several resyncs (every 2 s) delete nothing more.
    let untouched = |keys: Vec<OsdKey>, v1: &BTreeMap<OsdKey, Pod>| {
        let expected: BTreeMap<OsdKey, String> = keys
            .iter()
            .map(|k| (k.clone(), v1[k].uid().unwrap_or_default()))
            .collect();
        let s = &s;
        async move {
            let pods = s.owned_pods(CR).await?;
            for (key, uid) in &expected {
                let alive = pods.iter().any(|p| {
                    p.uid().as_deref() == Some(uid.as_str())
                        && p.metadata.deletion_timestamp.is_none()
                });
                anyhow::ensure!(
                    alive,
                    "pod of {key} was deleted while the rollout should halt"
                );
            }
            Ok(())
        }
    };
    hold(Duration::from_secs(6), || {
        untouched(vec![k2.clone(), k3.clone()], &v1)
    })
    .await?;
    let stuck1_now = s.pods.get(&stuck1.name_any()).await?;
    anyhow::ensure!(!is_ready(&stuck1_now), "the never-Ready pod became Ready");

    // Admin override: declare it up to date; the rollout goes on with k2 (and halts there).
    s.pods
        .patch(
            &stuck1.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": {labels::POD_STATE: "up-to-date"}}})),
        )
        .await?;
    let stuck2 = s
        .wait_until("k2's never-Ready replacement exists", ROLLOUT, || {
            stuck_pod(k2.clone())
        })
        .await?;
    hold(Duration::from_secs(4), || untouched(vec![k3.clone()], &v1)).await?;

    // Fix the template: everything is out of date. The two stuck replacements are down
    // already: they are replaced at once, costing no budget; k3 goes only once both
    // successors are Ready.
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let settled = rec.len();
    let before_fix: BTreeMap<String, OsdKey> = s
        .owned_pods(CR)
        .await?
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.name_any(), pod_key(p)?)))
        .collect();
    anyhow::ensure!(
        before_fix.contains_key(&stuck1.name_any()) && before_fix.contains_key(&stuck2.name_any()),
        "unexpected pods before the fix: {before_fix:?}"
    );
    let (_, hash3) = s
        .patch_template_metadata(CR, ready_again_revision("3"))
        .await?;
    s.wait_converged(CR, &want, &hash3, ROLLOUT).await?;
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;
    rec.assert_unavailable_domains_at_most(&want, UpdateDomain::Osd, 2, settled)?;
    check_stuck_replaced_first(rec, &before_fix, [(&stuck1, &k1), (&stuck2, &k2)], &k3)?;
    s.destroy().await
}

/// After the fix: the stuck replacements (already down) were replaced, each successor created
/// once its predecessor was gone and Ready; the Ready OSD `k3` went down only after them.
fn check_stuck_replaced_first(
    rec: &PodRecorder,
    before_fix: &BTreeMap<String, OsdKey>,
    stuck: [(&Pod, &OsdKey); 2],
    k3: &OsdKey,
) -> anyhow::Result<()> {
    let timeline = rec.timeline();
    let fail = |e: anyhow::Error| anyhow::anyhow!("after the fix: {e}\n{}", rec.render());
    let mut stuck_ready = 0;
    for (stuck, key) in stuck {
        let old = timeline.get(&stuck.name_any()).map_err(fail)?;
        let (Some(started), Some(gone)) = (old.deletion_started, old.gone) else {
            return Err(fail(anyhow::anyhow!(
                "{key}: stuck pod {} not deleted",
                old.name
            )));
        };
        let new = timeline.created_after(key, started);
        let Some((created, ready)) = new.first().and_then(|h| Some((h.created?, h.ready?))) else {
            return Err(fail(anyhow::anyhow!(
                "{key}: no Ready successor after #{started}"
            )));
        };
        anyhow::ensure!(created > gone, "{key}: successor created before #{gone}");
        stuck_ready = stuck_ready.max(ready);
    }
    let ready_k3: BTreeMap<String, OsdKey> = before_fix
        .iter()
        .filter(|(_, key)| *key == k3)
        .map(|(n, k)| (n.clone(), k.clone()))
        .collect();
    timeline
        .check_rollout(&ready_k3, UpdateDomain::Osd)
        .map_err(fail)?;
    let k3_started = ready_k3
        .keys()
        .filter_map(|name| timeline.get(name).ok()?.deletion_started)
        .min()
        .unwrap_or(0);
    anyhow::ensure!(
        k3_started > stuck_ready,
        "k3 went down at #{k3_started} before the stuck OSDs' successors were Ready (#{stuck_ready})\n{}",
        rec.render()
    );
    Ok(())
}

// 6 ------------------------------------------------------------------------------------------

/// Waits until `want`'s pods have converged on `hash` and are the only pods of the namespace
/// (those of removed OSDs are gone); returns them by key.
async fn converged_alone(
    s: &Scenario,
    what: &str,
    want: &BTreeSet<OsdKey>,
    hash: &str,
) -> anyhow::Result<BTreeMap<OsdKey, Pod>> {
    s.wait_until(what, CONVERGE, || async {
        let pods = s.wait_converged(CR, want, hash, CONVERGE).await?;
        let all = s.list_pods().await?;
        Ok((all.len() == want.len()).then_some(pods))
    })
    .await
}

#[tokio::test]
async fn s6_removed_hosts_and_devices_lose_their_pods_added_ones_get_pods() -> anyhow::Result<()> {
    let s = Scenario::converge("membership").await?;
    let [w1, w2, w3] = s.hosts(["w1", "w2", "w3"]);
    let (hosts, data) = ([&w1, &w2], ["/dev/sdb", "/dev/sdc"]);
    let manifest = cephosd(CR, storage(&hosts, &data), "OSD", fast_sample_template()?);
    let Converged { hash, pods: v1, .. } =
        s.create_converged(&manifest, keys(&hosts, &data)).await?;

    // Device sdc removed from every host.
    s.patch_spec(CR, json!({"storage": storage(&[&w1, &w2], &["/dev/sdb"])}))
        .await?;
    let want = keys(&[&w1, &w2], &["/dev/sdb"]);
    let v2 = converged_alone(&s, "the sdc pods are gone", &want, &hash).await?;
    // Host w2 removed, host w3 and device sdd added.
    s.patch_spec(
        CR,
        json!({"storage": storage(&[&w1, &w3], &["/dev/sdb", "/dev/sdd"])}),
    )
    .await?;
    let want = keys(&[&w1, &w3], &["/dev/sdb", "/dev/sdd"]);
    let v3 = converged_alone(&s, "w2 gone, w3 and sdd added", &want, &hash).await?;
    // The pods of OSDs that stayed were never touched.
    let w1sdb = OsdKey::new(&w1, "/dev/sdb");
    anyhow::ensure!(uids(&v1)[&w1sdb] == uids(&v2)[&w1sdb]);
    anyhow::ensure!(uids(&v2)[&w1sdb] == uids(&v3)[&w1sdb]);
    let w2sdb = OsdKey::new(&w2, "/dev/sdb");
    anyhow::ensure!(uids(&v1)[&w2sdb] == uids(&v2)[&w2sdb]);
    s.assert_one_pod_per_key().await?;
    s.destroy().await
}

// 7 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn s7_deleting_the_cr_garbage_collects_its_pods() -> anyhow::Result<()> {
    let s = Scenario::converge("gc").await?;
    s.create_converged(
        &sample_cr(&s, "Host")?,
        keys(&s.hosts(SAMPLE_HOSTS), &SAMPLE_DATA),
    )
    .await?;
    s.crs.delete(CR, &DeleteParams::default()).await?;
    s.wait_until("the CR and all its pods are gone", CONVERGE, || async {
        let cr = s.crs.get_opt(CR).await?;
        let pods = s.list_pods().await?;
        Ok((cr.is_none() && pods.is_empty()).then_some(()))
    })
    .await?;
    s.assert_one_pod_per_key().await?;
    s.destroy().await
}

// 8 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn s8_reference_pods_are_adopted_with_one_label_write_and_no_restart() -> anyhow::Result<()> {
    let mut s = Scenario::create("adopt").await?;
    s.start_recorder().await?;
    s.create_cr(&sample_cr(&s, "Host")?).await?;
    let hosts = s.hosts(SAMPLE_HOSTS);
    let cr = s.crs.get(CR).await?;
    let hash = hash_of(&cr);
    // Laid down as the reference operator would have, before our operator runs.
    lay_reference_pods(&s, &cr, &hosts, &hash).await?;
    let want = keys(&hosts, &SAMPLE_DATA);
    let laid = s.wait_converged(CR, &want, &hash, CONVERGE).await?;
    for (key, pod) in &laid {
        anyhow::ensure!(
            pod.name_any().starts_with(&key.name_prefix()),
            "test bug: {} is not a reference name for {key}",
            pod.name_any()
        );
    }
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let mark = rec.len();

    s.start_operator(&OperatorOptions { resync_seconds: 2 })?;
    // The one write of adoption: each pod gets its update-domain label (the disruption budget
    // selects pods by it); nothing else of a pod changes and no pod is restarted.
    let labelled = s
        .wait_until(
            "every adopted pod labelled with its update domain",
            Duration::from_secs(30),
            || async {
                let pods = s.list_pods().await?;
                let all = pods.len() == laid.len()
                    && pods
                        .iter()
                        .all(|p| p.labels().contains_key(labels::UPDATE_DOMAIN));
                Ok(all.then_some(pods))
            },
        )
        .await?;
    check_only_labelled(&labelled, &laid)?;
    let versions = |pods: &[Pod]| -> BTreeMap<String, String> {
        pods.iter()
            .map(|p| (p.name_any(), p.resource_version().unwrap_or_default()))
            .collect()
    };
    let after_label = versions(&labelled);
    // Several more reconciles (resyncs every 2 s): no write at all.
    let reconciled = s.operator_log().matches("reconciled").count();
    s.wait_until(
        "the operator logged 3 more reconciles",
        Duration::from_secs(30),
        || async {
            let n = s.operator_log().matches("reconciled").count();
            Ok((n >= reconciled + 3).then_some(()))
        },
    )
    .await?;
    let now = versions(&s.list_pods().await?);
    anyhow::ensure!(
        now == after_label,
        "the operator wrote to adopted pods again: {after_label:?}\nnow {now:?}"
    );
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let events = rec.events();
    let modified = events[mark..]
        .iter()
        .filter(|e| e.kind == molecule_like_tests::recording::pods::EventKind::Modified)
        .count();
    anyhow::ensure!(
        events.len() == mark + laid.len() && modified == laid.len(),
        "pod events after the operator started (one label write per pod expected): {:?}\n{}",
        events[mark..]
            .iter()
            .map(|e| (e.kind, e.pod.name_any()))
            .collect::<Vec<_>>(),
        rec.render()
    );
    s.destroy().await
}

/// Lays down the sample's pods as the reference operator would have (its names, owner,
/// annotations) for `cr` on `hosts`.
async fn lay_reference_pods(
    s: &Scenario,
    cr: &CephOsd,
    hosts: &[String],
    hash: &str,
) -> anyhow::Result<()> {
    let cr_uid = cr.uid().unwrap_or_default();
    for host in hosts {
        for data in SAMPLE_DATA {
            // The reference's name: osd-<short host>-<device basename, \W → ->-<5 random>.
            let short = host.split('.').next().unwrap_or(host);
            let slot = data.rsplit('-').next().unwrap_or_default();
            let name = format!(
                "osd-{short}-pci-0000-5c-00-0-encl-0-7-0-slot-{slot}-{}",
                &random_suffix()[..5]
            );
            let pod = reference_pod(
                &cr.spec.pod_template,
                &cr_uid,
                &name,
                host,
                data,
                sample_db(data),
                hash,
            )?;
            s.pods.create(&PostParams::default(), &pod).await?;
        }
    }
    Ok(())
}

/// Adoption changed each pod only by its update-domain label: same uid, spec, annotations.
fn check_only_labelled(labelled: &[Pod], laid: &BTreeMap<OsdKey, Pod>) -> anyhow::Result<()> {
    for pod in labelled {
        let key = pod_key(pod).ok_or_else(|| anyhow::anyhow!("no key: {}", pod.name_any()))?;
        let before = laid
            .get(&key)
            .ok_or_else(|| anyhow::anyhow!("not laid: {key}"))?;
        let mut labels_before = before.labels().clone();
        labels_before.insert(
            labels::UPDATE_DOMAIN.to_owned(),
            labels::update_domain_label_value(&key.host),
        );
        anyhow::ensure!(
            pod.uid() == before.uid()
                && pod.spec == before.spec
                && pod.annotations() == before.annotations()
                && *pod.labels() == labels_before,
            "adoption changed pod {} beyond its update-domain label",
            pod.name_any()
        );
    }
    Ok(())
}

// 9 ------------------------------------------------------------------------------------------

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "a table of malformed CRs, one rejection each"
)]
async fn s9_malformed_crs_are_rejected_naming_the_field() -> anyhow::Result<()> {
    let s = Scenario::create("badinput").await?;
    let valid = sample_cr(&s, "Host")?;
    type Edit = fn(&mut Value);
    let cases: Vec<(&str, Edit, &[&str])> = vec![
        (
            "missing storage",
            |m| drop(m["spec"].as_object_mut().map(|o| o.remove("storage"))),
            &["spec.storage", "Required"],
        ),
        (
            "missing updateDomain",
            |m| drop(m["spec"].as_object_mut().map(|o| o.remove("updateDomain"))),
            &["spec.updateDomain", "Required"],
        ),
        (
            "missing podTemplate",
            |m| drop(m["spec"].as_object_mut().map(|o| o.remove("podTemplate"))),
            &["spec.podTemplate", "Required"],
        ),
        (
            "updateDomain host (wrong case)",
            |m| m["spec"]["updateDomain"] = json!("host"),
            &["spec.updateDomain", "host"],
        ),
        (
            "empty hosts list",
            |m| m["spec"]["storage"][0]["hosts"] = json!([]),
            &["spec.storage[0].hosts"],
        ),
        (
            "empty host string",
            |m| m["spec"]["storage"][0]["hosts"] = json!(["w1", ""]),
            &["spec.storage[0].hosts[1]"],
        ),
        (
            "empty osds list",
            |m| m["spec"]["storage"][0]["osds"] = json!([]),
            &["spec.storage[0].osds"],
        ),
        (
            "osd without data",
            |m| m["spec"]["storage"][0]["osds"] = json!([{"db": "/dev/sdz"}]),
            &["spec.storage[0].osds[0].data", "Required"],
        ),
        (
            "empty data",
            |m| m["spec"]["storage"][0]["osds"][1]["data"] = json!(""),
            &["spec.storage[0].osds[1].data"],
        ),
        (
            "empty db",
            |m| m["spec"]["storage"][0]["osds"][0]["db"] = json!(""),
            &["spec.storage[0].osds[0].db"],
        ),
        (
            "name of 56 characters",
            |m| m["metadata"]["name"] = json!("n".repeat(56)),
            &["metadata.name", "55"],
        ),
        (
            "hosts is a string",
            |m| m["spec"]["storage"][0]["hosts"] = json!("x"),
            &["spec.storage[0].hosts", "array"],
        ),
        (
            "storage is an object",
            |m| m["spec"]["storage"] = json!({"hosts": ["w1"]}),
            &["spec.storage", "array"],
        ),
        (
            "updateDomain is a number",
            |m| m["spec"]["updateDomain"] = json!(1),
            &["spec.updateDomain"],
        ),
        (
            "podTemplate is a string",
            |m| m["spec"]["podTemplate"] = json!("x"),
            &["spec.podTemplate", "object"],
        ),
        (
            "data is a number",
            |m| m["spec"]["storage"][0]["osds"][0]["data"] = json!(7),
            &["spec.storage[0].osds[0].data", "string"],
        ),
    ];
    let mut failures = Vec::new();
    for (i, (what, edit, needles)) in cases.iter().enumerate() {
        let mut manifest = valid.clone();
        manifest["metadata"]["name"] = json!(format!("bad-{i}"));
        edit(&mut manifest);
        manifest["metadata"]["namespace"] = json!(s.namespace);
        let obj: DynamicObject = serde_json::from_value(manifest)?;
        match s.raw_crs.create(&PostParams::default(), &obj).await {
            Ok(_) => failures.push(format!("{what}: accepted")),
            Err(kube::Error::Api(status)) => {
                let missing: Vec<&&str> = needles
                    .iter()
                    .filter(|n| !status.message.contains(**n))
                    .collect();
                if status.code != 422 || !missing.is_empty() {
                    failures.push(format!(
                        "{what}: got {} {:?} (missing {missing:?})",
                        status.code, status.message
                    ));
                }
            }
            Err(e) => failures.push(format!("{what}: unexpected error {e}")),
        }
    }
    // Controls: the valid manifest and a name of exactly 55 characters are accepted.
    for name in ["good".to_owned(), "n".repeat(55)] {
        let mut manifest = valid.clone();
        manifest["metadata"]["name"] = json!(name);
        manifest["metadata"]["namespace"] = json!(s.namespace);
        let obj: DynamicObject = serde_json::from_value(manifest)?;
        if let Err(e) = s.raw_crs.create(&PostParams::default(), &obj).await {
            failures.push(format!("valid CR {name} rejected: {e}"));
        }
    }
    anyhow::ensure!(
        failures.is_empty(),
        "{} of {} cases wrong:\n  {}",
        failures.len(),
        cases.len() + 2,
        failures.join("\n  ")
    );
    s.destroy().await
}
