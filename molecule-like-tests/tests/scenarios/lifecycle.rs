//! A CephOSD over its life: hosts and devices removed and added, the CR deleted,
//! reference pods adopted, malformed CRs rejected.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ceph_osd_operator::crd::CephOsd;
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{Converged, Scenario, CONVERGE};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, hash_of, keys, random_suffix, reference_pod, storage, CR,
};
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::kubernetes::pods::pod_key;
use serde_json::{json, Value};

use crate::common::{sample_cr, sample_db, SAMPLE_DATA, SAMPLE_HOSTS};

fn uids(pods: &BTreeMap<OsdKey, Pod>) -> BTreeMap<OsdKey, String> {
    pods.iter()
        .map(|(k, p)| (k.clone(), p.uid().unwrap_or_default()))
        .collect()
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
