//! The reference sample: its four pods as the reference operator makes them, a pod
//! deleted by hand recreated.

use std::collections::BTreeSet;

use ceph_osd_operator::crd::CephOsd;
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::api::DeleteParams;
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{Converged, Scenario, CONVERGE};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, with_kubelet_knobs, Knobs, CR,
};
use molecule_like_tests::kubernetes::pods::{annotation, is_ready};
use serde_json::json;

use crate::common::{sample_cr, sample_db, SAMPLE_DATA, SAMPLE_HOSTS};

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
