//! End-to-end scenarios of `kubectl ceph-osd` (the operator's binary run as
//! `kubectl-ceph_osd`) against the local control plane: a canary of one host holds and
//! `status --until partitioned` returns there, `plan` lists the order the recorded pod watch
//! then shows, `promote` lets the rollout finish and `status --until complete` returns at the
//! end; a stalled rollout makes `--until complete` fail. By failure domain (`updateDomain:
//! Topology`, the zones read by the operator from a node label): `status` groups hosts under
//! their zone and names a host in none with why, `plan` shows the zones with their hosts in
//! the order the recorded pod watch then shows.
//!
//! Needs the local control plane and a built operator (see `tests/scenarios/`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Instant;

use ceph_osd_operator::crd::{CephOsdStatus, UpdateDomain};
use ceph_osd_operator::labels;
use kube::ResourceExt;
use molecule_like_tests::journeys::plugin::kubectl_ceph_osd;
use molecule_like_tests::journeys::scenario::{Converged, Scenario};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, never_ready_revision, storage, CR,
};
use molecule_like_tests::kubernetes::pods::annotation;
use molecule_like_tests::recording::domains::Domains;
use serde_json::{json, Value};

/// The host each of `pods` (by name) runs on.
fn hosts_by_pod(
    pods: &BTreeMap<ceph_osd_operator::OsdKey, k8s_openapi::api::core::v1::Pod>,
) -> BTreeMap<String, String> {
    pods.iter()
        .map(|(key, pod)| (pod.name_any(), key.host.clone()))
        .collect()
}

/// The batches of a `plan -o json`.
fn batches(plan: &Value) -> Vec<Vec<String>> {
    serde_json::from_value(plan["plan"]["batches"].clone()).expect("batches")
}

/// The stored CR as `kubectl apply` would send it with template label `rev: 2`.
async fn next_template(s: &Scenario) -> anyhow::Result<ceph_osd_operator::crd::CephOsd> {
    let mut next = s.crs.get(CR).await?;
    next.metadata.managed_fields = None;
    next.status = None;
    next.spec.pod_template["metadata"]["labels"]["rev"] = json!("2");
    Ok(next)
}

/// Writes `cr` as YAML, named `name`, beside the scenario's log; its path.
fn write_manifest(
    s: &Scenario,
    cr: &ceph_osd_operator::crd::CephOsd,
    name: &str,
) -> anyhow::Result<String> {
    let file = s.log_path.parent().expect("dir").join(name);
    std::fs::write(&file, serde_saphyr::to_string(cr)?)?;
    Ok(file.to_string_lossy().into_owned())
}

/// `status -o json` carries the status as the operator wrote it, with the rollout measured.
async fn check_json_status(s: &Scenario) -> anyhow::Result<()> {
    // -o json carries the status as the operator wrote it.
    let (code, out, _) = kubectl_ceph_osd(s, &["status", "-o", "json"]).await?;
    anyhow::ensure!(code == 0);
    let shown: Value = serde_json::from_str(&out)?;
    let status: CephOsdStatus = serde_json::from_value(shown["status"].clone())?;
    anyhow::ensure!(
        Some(&status) == s.crs.get(CR).await?.status.as_ref(),
        "{out}"
    );
    let progress = status.rollout.expect("measured");
    anyhow::ensure!(
        progress.domains_done == 4 && progress.recent_domain_seconds.len() == 4,
        "{progress:?}"
    );
    Ok(())
}

#[tokio::test]
async fn k1_a_canary_holds_plan_shows_the_order_promote_finishes_it() -> anyhow::Result<()> {
    let s = Scenario::converge("plugin").await?;
    let hosts = s.hosts(["w1", "w2", "w3", "w4"]);
    let data = ["/dev/sdb", "/dev/sdc"];
    let mut manifest = cephosd(CR, storage(&hosts, &data), "Host", fast_sample_template()?);
    manifest["spec"]["canary"] = json!(1);
    let Converged { want, pods: v1, .. } =
        s.create_converged(&manifest, keys(&hosts, &data)).await?;
    let old_host = hosts_by_pod(&v1);

    // Usage errors exit 2 and say what is wrong.
    for command in ["status", "pause", "resume", "restart", "promote"] {
        let (code, _, err) = kubectl_ceph_osd(&s, &[command, "no-such-cephosd"]).await?;
        anyhow::ensure!(
            code == 2 && err.contains("no CephOSD no-such-cephosd") && err.lines().count() == 1,
            "{command}: {code} {err}"
        );
    }

    // A timeout is a failure, and says where the rollout is.
    let (code, _, err) =
        kubectl_ceph_osd(&s, &["status", "--until", "paused", "--timeout", "1s"]).await?;
    anyhow::ensure!(
        code == 1 && err.contains("timed out waiting"),
        "{code} {err}"
    );

    // The plan of the next template, from a file: the canary host, then the cut.
    let file = write_manifest(&s, &next_template(&s).await?, "next.yaml")?;
    let (code, out, err) = kubectl_ceph_osd(&s, &["plan", "-f", &file, "-o", "json"]).await?;
    anyhow::ensure!(code == 0, "plan -f: {code} {err}");
    let planned: Value = serde_json::from_str(&out)?;
    anyhow::ensure!(batches(&planned) == [[hosts[0].clone()]], "{out}");
    let held: Vec<String> = planned["plan"]["held"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    anyhow::ensure!(held == hosts[1..], "held {held:?}\n{out}");

    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let mark = rec.len();
    let (_, hash) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let (code, out, err) = kubectl_ceph_osd(
        &s,
        &["status", "--until", "partitioned", "--timeout", "120s"],
    )
    .await?;
    anyhow::ensure!(code == 0, "--until partitioned: {code} {err}\n{out}");
    anyhow::ensure!(
        out.contains("CanaryWaiting") && out.contains(&format!("promote {hash}")),
        "{out}"
    );
    let updated: Vec<String> = (s.owned_pods(CR).await?.iter())
        .filter(|p| annotation(p, labels::TEMPLATE_HASH) == Some(hash.as_str()))
        .filter_map(|p| annotation(p, labels::HOST).map(str::to_owned))
        .collect();
    anyhow::ensure!(
        updated == [hosts[0].clone(), hosts[0].clone()],
        "{updated:?}"
    );

    // The rest waits for the promotion, in the order the recorded watch must then show.
    let (code, out, err) = kubectl_ceph_osd(&s, &["plan", "-o", "json"]).await?;
    anyhow::ensure!(code == 0, "plan: {code} {err}");
    let waiting: Value = serde_json::from_str(&out)?;
    let held: Vec<String> = waiting["plan"]["held"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    anyhow::ensure!(batches(&waiting).is_empty() && held == hosts[1..], "{out}");
    let (code, out, err) = kubectl_ceph_osd(&s, &["promote"]).await?;
    anyhow::ensure!(
        code == 0 && out.contains(&format!("template {hash} promoted; next: {}", hosts[1])),
        "promote: {code} {err}\n{out}"
    );
    let started = Instant::now();
    let (code, out, err) =
        kubectl_ceph_osd(&s, &["status", "--until", "complete", "--timeout", "180s"]).await?;
    anyhow::ensure!(code == 0, "--until complete: {code} {err}\n{out}");
    anyhow::ensure!(out.contains("(Complete)"), "{out}");
    println!("promote to complete: {:?}", started.elapsed());

    // The watch: one pod per disk, one host down at most, the hosts in the planned order.
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;
    rec.assert_unavailable_domains_at_most(&want, UpdateDomain::Host, 1, mark)?;
    let mut order: Vec<String> = Vec::new();
    for (seq, name) in rec.timeline().deletions {
        if let (true, Some(host)) = (seq >= mark, old_host.get(&name)) {
            if order.last() != Some(host) {
                order.push(host.clone());
            }
        }
    }
    anyhow::ensure!(
        order == hosts,
        "deleted in order {order:?}\n{}",
        rec.render()
    );

    check_json_status(&s).await?;
    s.destroy().await
}

#[tokio::test]
async fn k2_until_complete_fails_on_a_stalled_rollout() -> anyhow::Result<()> {
    let s = Scenario::converge("plugin-stall").await?;
    let hosts = s.hosts(["w1", "w2"]);
    let data = ["/dev/sdb"];
    let mut manifest = cephosd(CR, storage(&hosts, &data), "Host", fast_sample_template()?);
    manifest["spec"]["progressDeadlineSeconds"] = json!(5);
    s.create_converged(&manifest, keys(&hosts, &data)).await?;
    s.patch_template_metadata(CR, never_ready_revision("2"))
        .await?;
    let (code, out, err) =
        kubectl_ceph_osd(&s, &["status", "--until", "complete", "--timeout", "120s"]).await?;
    anyhow::ensure!(
        code == 1 && err.contains("is Stalled") && err.contains("has not become Ready"),
        "{code} {err}\n{out}"
    );
    s.destroy().await
}

#[tokio::test]
async fn k3_pause_resume_restart_and_override_write_what_an_admin_would() -> anyhow::Result<()> {
    let s = Scenario::converge("plugin-steer").await?;
    let hosts = s.hosts(["w1", "w2"]);
    let data = ["/dev/sdb"];
    let manifest = cephosd(CR, storage(&hosts, &data), "Host", fast_sample_template()?);
    let Converged { hash: h1, .. } = s.create_converged(&manifest, keys(&hosts, &data)).await?;

    let (code, out, err) = kubectl_ceph_osd(&s, &["pause"]).await?;
    anyhow::ensure!(code == 0 && out.contains("paused"), "{code} {err}");
    anyhow::ensure!(s.crs.get(CR).await?.spec.paused == Some(true));
    let (code, _, err) =
        kubectl_ceph_osd(&s, &["status", "--until", "paused", "--timeout", "60s"]).await?;
    anyhow::ensure!(code == 0, "--until paused: {code} {err}");
    let (code, _, err) = kubectl_ceph_osd(&s, &["resume"]).await?;
    anyhow::ensure!(
        code == 0 && s.crs.get(CR).await?.spec.paused.is_none(),
        "{err}"
    );

    // restart: a new template annotation, every pod replaced.
    let (code, out, err) = kubectl_ceph_osd(&s, &["restart"]).await?;
    anyhow::ensure!(code == 0, "restart: {code} {err}");
    let cr = s.crs.get(CR).await?;
    let restarted = cr.spec.pod_template["metadata"]["annotations"]
        ["kubectl.kubernetes.io/restartedAt"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    anyhow::ensure!(!restarted.is_empty(), "{out}");
    let (code, _, err) =
        kubectl_ceph_osd(&s, &["status", "--until", "complete", "--timeout", "120s"]).await?;
    anyhow::ensure!(code == 0, "after restart: {code} {err}");
    let pods = s.owned_pods(CR).await?;
    anyhow::ensure!(
        pods.len() == 2
            && pods
                .iter()
                .all(|p| annotation(p, labels::TEMPLATE_HASH).is_some_and(|h| h != h1)),
        "not every pod replaced"
    );

    // A replacement that never becomes Ready: override refuses another pod, takes that one.
    s.patch_template_metadata(CR, never_ready_revision("3"))
        .await?;
    let stuck = s
        .wait_until("a replacement waiting for Ready", ROLLOUT_WAIT, || async {
            let status = s.crs.get(CR).await?.status.unwrap_or_default();
            let pods = s.owned_pods(CR).await?;
            Ok(pods.into_iter().find(|p| {
                status.current_update.contains(&hosts[0])
                    && annotation(p, labels::HOST) == Some(hosts[0].as_str())
                    && annotation(p, labels::POD_STATE) == Some("wait-for-ready")
            }))
        })
        .await?;
    let other = (s.owned_pods(CR).await?.into_iter())
        .find(|p| annotation(p, labels::HOST) == Some(hosts[1].as_str()))
        .expect("the second host's pod");
    let (code, _, err) =
        kubectl_ceph_osd(&s, &["override", &other.name_any(), "--reason", "x"]).await?;
    anyhow::ensure!(
        code == 2 && err.contains("not the pod the rollout") && err.contains("--force"),
        "{code} {err}"
    );
    let (code, out, err) = kubectl_ceph_osd(
        &s,
        &["override", &stuck.name_any(), "--reason", "checked by hand"],
    )
    .await?;
    anyhow::ensure!(
        code == 0 && out.contains("marked up-to-date (checked by hand)"),
        "{code} {err}\n{out}"
    );
    let marked = s.pods.get(&stuck.name_any()).await?;
    anyhow::ensure!(
        annotation(&marked, labels::POD_STATE) == Some("up-to-date")
            && annotation(&marked, "ceph.elemental.net/override-reason") == Some("checked by hand")
    );
    // The rollout goes on to the second host.
    s.wait_until("the second host replaced", ROLLOUT_WAIT, || async {
        let status = s.crs.get(CR).await?.status.unwrap_or_default();
        Ok(status.current_update.contains(&hosts[1]).then_some(()))
    })
    .await?;
    s.destroy().await
}

/// How long a step of these scenarios may take.
const ROLLOUT_WAIT: std::time::Duration = std::time::Duration::from_mins(1);

#[tokio::test]
async fn k4_the_eta_after_a_third_of_a_30_host_rollout_is_within_20_percent() -> anyhow::Result<()>
{
    let s = Scenario::converge("plugin-eta").await?;
    let hosts: Vec<String> = (1..=30).map(|h| s.host(&format!("e{h:02}"))).collect();
    let data = ["/dev/sdb"];
    let mut manifest = cephosd(CR, storage(&hosts, &data), "Host", fast_sample_template()?);
    // A soak makes each domain last seconds, so whole-second durations measure it well.
    manifest["spec"]["minReadySeconds"] = json!(3);
    s.create_converged(&manifest, keys(&hosts, &data)).await?;
    s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    s.wait_until("a third of the hosts done", ETA_WAIT, || async {
        let status = s.crs.get(CR).await?.status.unwrap_or_default();
        Ok(status.rollout.filter(|r| r.domains_done >= 10).map(|_| ()))
    })
    .await?;
    let (code, out, err) = kubectl_ceph_osd(&s, &["status", "-o", "json"]).await?;
    anyhow::ensure!(code == 0, "{err}");
    let asked = Instant::now();
    let shown: Value = serde_json::from_str(&out)?;
    let eta = shown["etaSeconds"][0]
        .as_f64()
        .expect("an ETA while rolling");
    let (code, _, err) =
        kubectl_ceph_osd(&s, &["status", "--until", "complete", "--timeout", "10m"]).await?;
    anyhow::ensure!(code == 0, "{err}");
    let actual = asked.elapsed().as_secs_f64();
    println!("ETA {eta:.0} s, actual {actual:.1} s");
    anyhow::ensure!(
        (eta - actual).abs() <= 0.2 * actual,
        "ETA {eta} s, actual {actual:.1} s\n{out}"
    );
    s.destroy().await
}

/// How long the 30-host rollout may take to reach a third.
const ETA_WAIT: std::time::Duration = std::time::Duration::from_mins(5);

/// The node label of the failure domains in `k5`.
const ZONE: &str = "topology.kubernetes.io/zone";

/// Sets label `ZONE` of the Node of `host` to `zone` (None: removes it).
async fn label_zone(s: &Scenario, host: &str, zone: Option<&str>) -> anyhow::Result<()> {
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(s.client.clone());
    nodes
        .patch(
            host,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {ZONE: zone}}})),
        )
        .await?;
    Ok(())
}

/// Waits until `status.failureDomains` is `buckets` (zone → hosts) and `unplaced`.
async fn wait_failure_domains(
    s: &Scenario,
    buckets: &BTreeMap<String, Vec<String>>,
    unplaced: &[&str],
) -> anyhow::Result<()> {
    s.wait_until(
        "the zones in status.failureDomains",
        ROLLOUT_WAIT,
        || async {
            let status = s.crs.get(CR).await?.status.unwrap_or_default();
            Ok(status
                .failure_domains
                .filter(|d| {
                    d.bucket_type.as_deref() == Some("zone")
                        && d.buckets == *buckets
                        && d.unplaced
                            .keys()
                            .map(String::as_str)
                            .eq(unplaced.iter().copied())
                })
                .map(|_| ()))
        },
    )
    .await
}

#[tokio::test]
async fn k5_by_zone_from_a_node_label_plan_shows_zones_with_their_hosts() -> anyhow::Result<()> {
    let s = Scenario::converge("plugin-zones").await?;
    let hosts = s.hosts(["z1", "z2", "z3", "z4", "z5"]);
    let data = ["/dev/sdb"];
    // The zones on the Nodes before the CephOSD: a and b of two hosts, c of one (z5 unlabelled).
    molecule_like_tests::kubernetes::nodes::ensure_nodes(
        &s.client,
        &hosts.iter().cloned().collect(),
    )
    .await?;
    for (host, zone) in hosts.iter().zip(["zone-a", "zone-a", "zone-b", "zone-b"]) {
        label_zone(&s, host, Some(zone)).await?;
    }
    let mut manifest = cephosd(
        CR,
        storage(&hosts, &data),
        "Topology",
        fast_sample_template()?,
    );
    manifest["spec"]["topology"] = json!({"bucketType": "zone", "topologyKey": ZONE});
    let Converged { want, pods: v1, .. } =
        s.create_converged(&manifest, keys(&hosts, &data)).await?;
    let zones = |c: &[&String]| -> BTreeMap<String, Vec<String>> {
        let mut zones = BTreeMap::from([
            (
                "zone-a".to_owned(),
                vec![hosts[0].clone(), hosts[1].clone()],
            ),
            (
                "zone-b".to_owned(),
                vec![hosts[2].clone(), hosts[3].clone()],
            ),
        ]);
        if !c.is_empty() {
            zones.insert(
                "zone-c".to_owned(),
                c.iter().map(|h| (*h).clone()).collect(),
            );
        }
        zones
    };

    // z5 has no zone: the status names it with why; the plan starts nothing and says so.
    wait_failure_domains(&s, &zones(&[]), &[hosts[4].as_str()]).await?;
    let why = format!("its Node has no label {ZONE}");
    let (code, out, err) = kubectl_ceph_osd(&s, &["status"]).await?;
    anyhow::ensure!(code == 0, "status: {code} {err}");
    anyhow::ensure!(
        out.contains("rollout   by failure domain (zone)")
            && out.contains("zone zone-a: 2/2 hosts updated")
            && out.contains("in no known failure domain: 1 host")
            && out.contains(&format!("{}  updated    1/1 ready  ({why})", hosts[4])),
        "{out}"
    );
    let next = next_template(&s).await?;
    let file = write_manifest(&s, &next, "next-zones.yaml")?;
    let (code, out, err) = kubectl_ceph_osd(&s, &["plan", "-f", &file, "-o", "json"]).await?;
    anyhow::ensure!(code == 0, "plan -f: {code} {err}");
    let planned: Value = serde_json::from_str(&out)?;
    anyhow::ensure!(
        batches(&planned).is_empty()
            && planned["plan"]["stops"].as_str()
                == Some(format!("host {} is in no known failure domain: {why}", hosts[4]).as_str()),
        "{out}"
    );

    // Labelled: z5 joins zone-c, and the plan is the three zones in order, hosts within.
    label_zone(&s, &hosts[4], Some("zone-c")).await?;
    wait_failure_domains(&s, &zones(&[&hosts[4]]), &[]).await?;
    let (code, out, err) = kubectl_ceph_osd(&s, &["plan", "-f", &file, "-o", "json"]).await?;
    anyhow::ensure!(code == 0, "plan -f: {code} {err}");
    let planned: Value = serde_json::from_str(&out)?;
    anyhow::ensure!(
        batches(&planned) == [["zone-a"], ["zone-b"], ["zone-c"]]
            && planned["plan"]["failureDomains"] == json!(zones(&[&hosts[4]])),
        "{out}"
    );
    let (code, out, err) = kubectl_ceph_osd(&s, &["plan", "-f", &file]).await?;
    anyhow::ensure!(
        code == 0
            && out.contains(&format!(
                "step 1     zone-a ({}, {})  +",
                hosts[0], hosts[1]
            ))
            && out.contains(&format!("step 3     zone-c ({})  +", hosts[4])),
        "plan -f: {code} {err}\n{out}"
    );

    // Bad input: a Topology manifest without spec.topology is refused, the field named.
    let mut bad = next.clone();
    bad.spec.topology = None;
    let bad_file = write_manifest(&s, &bad, "bad-zones.yaml")?;
    let (code, _, err) = kubectl_ceph_osd(&s, &["plan", "-f", &bad_file]).await?;
    anyhow::ensure!(
        code == 2 && err.contains("spec.topology: is required when spec.updateDomain is Topology"),
        "{code} {err}"
    );

    // The rollout goes as planned: zone by zone, one zone down at most.
    let bucket_of: BTreeMap<String, String> = (zones(&[&hosts[4]]).into_iter())
        .flat_map(|(zone, hosts)| hosts.into_iter().map(move |h| (h, zone.clone())))
        .collect();
    rolls_zone_by_zone(&s, &want, &hosts_by_pod(&v1), bucket_of).await?;
    s.destroy().await
}

/// Rolls CR to a new template and checks the recorded pod watch: one pod per disk, one zone
/// of `bucket_of` down at most, the zones deleted in order (`old_host`: each old pod's host).
async fn rolls_zone_by_zone(
    s: &Scenario,
    want: &std::collections::BTreeSet<ceph_osd_operator::OsdKey>,
    old_host: &BTreeMap<String, String>,
    bucket_of: BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    let mark = rec.len();
    s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let (code, out, err) =
        kubectl_ceph_osd(s, &["status", "--until", "complete", "--timeout", "180s"]).await?;
    anyhow::ensure!(code == 0, "--until complete: {code} {err}\n{out}");
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;
    rec.assert_unavailable_domains_at_most(want, Domains::Buckets(bucket_of.clone()), 1, mark)?;
    let mut order: Vec<String> = Vec::new();
    for (seq, name) in rec.timeline().deletions {
        if let (true, Some(zone)) = (
            seq >= mark,
            old_host.get(&name).and_then(|h| bucket_of.get(h)),
        ) {
            if order.last() != Some(zone) {
                order.push(zone.clone());
            }
        }
    }
    anyhow::ensure!(
        order == ["zone-a", "zone-b", "zone-c"],
        "deleted in order {order:?}\n{}",
        rec.render()
    );
    Ok(())
}
