//! Template edits rolled by key and by host; a replacement never Ready halts the
//! rollout until overridden or fixed.

use std::collections::BTreeMap;
use std::time::Duration;

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{hold, Converged, Scenario, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, never_ready_revision, ready_again_revision, storage, CR,
};
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::kubernetes::pods::{annotation, is_ready, names_by_key, pod_key};
use molecule_like_tests::recording::pods::PodRecorder;
use serde_json::json;

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
