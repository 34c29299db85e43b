//! What only a real cluster shows: the scheduler places each OSD pod on its host, `kubectl
//! drain` evicts OSD pods (no `--force` needed: they have a controller), the namespace
//! controller and garbage collector remove a namespace's CephOSD and pods, and kubectl
//! lists, describes and explains CephOSDs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{Scenario, CONVERGE};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, CR,
};
use molecule_like_tests::kubernetes::pods::{is_ready, pod_key};
use molecule_like_tests::paths::kubectl;
use serde_json::json;

/// Runs kubectl as the cluster admin; its stdout, or an error with its output.
fn run_kubectl(args: &[&str]) -> anyhow::Result<String> {
    let kubectl =
        kubectl().context("no kubectl (control-plane up links one into its state dir)")?;
    let out = Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(molecule_like_tests::paths::kubeconfig_path())
        .args(args)
        .output()
        .with_context(|| format!("running {kubectl}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "kubectl {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(stdout)
}

fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// Two host names of the scenario's own (Nodes are cluster-wide and outlive a scenario, and a
/// disk belongs to one CephOSD in the whole cluster).
fn hosts(s: &Scenario, prefix: &str) -> [String; 2] {
    [format!("{prefix}-a"), format!("{prefix}-b")].map(|h| s.host(&h))
}

/// The CephOSD `CR` with one OSD (`/dev/sdb`) on each of two fresh hosts, converged.
async fn converged_one_osd_per_host(s: &Scenario, prefix: &str) -> anyhow::Result<()> {
    let hosts = hosts(s, prefix);
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let data = ["/dev/sdb"];
    s.create_converged(
        &cephosd(CR, storage(&hosts, &data), "OSD", fast_sample_template()?),
        keys(&hosts, &data),
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn k1_every_osd_pod_runs_on_the_node_its_host_names() -> anyhow::Result<()> {
    let s = Scenario::converge("schedule").await?;
    let hosts = hosts(&s, "sched");
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let data = ["/dev/sdb", "/dev/sdc"];
    let converged = s
        .create_converged(
            &cephosd(CR, storage(&hosts, &data), "OSD", fast_sample_template()?),
            keys(&hosts, &data),
        )
        .await?;
    for (key, pod) in &converged.pods {
        if node_name(pod) != Some(key.host.as_str()) {
            bail!(
                "pod {} of OSD {key} runs on {:?}",
                pod.name_any(),
                node_name(pod)
            );
        }
    }

    // A host without a Node: its pod stays Pending, and status and events say which OSD
    // waits for which node. (Patched directly: `patch_spec` would create the Node.)
    let nowhere = s.host("nonode");
    let mut storage_spec = storage(&hosts, &data);
    storage_spec[0]["hosts"]
        .as_array_mut()
        .context("storage hosts")?
        .push(json!(nowhere));
    s.crs
        .patch(
            CR,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": storage_spec}})),
        )
        .await?;
    let waiting = format!("{nowhere}:/dev/sdb waits for node {nowhere}: ");
    let status = s
        .wait_until(
            "status.unschedulable names the OSD and its node",
            CONVERGE,
            || async {
                let status = s.cr_status(CR).await?.unwrap_or_default();
                let told = status.unschedulable.iter().any(|w| w.starts_with(&waiting));
                Ok(told.then_some(status))
            },
        )
        .await?;
    let pending = s
        .owned_pods(CR)
        .await?
        .into_iter()
        .filter(|p| pod_key(p).is_some_and(|k| k.host == nowhere))
        .collect::<Vec<_>>();
    if pending.len() != data.len() || pending.iter().any(|p| node_name(p).is_some()) {
        bail!(
            "expected {} Pending pods for {nowhere}: {pending:?}",
            data.len()
        );
    }
    let progressing = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .context("Progressing condition")?;
    if progressing.reason != "WaitingForNodes" || !progressing.message.contains(&nowhere) {
        bail!("Progressing: {progressing:?}");
    }
    s.wait_until("an Unschedulable event", CONVERGE, || async {
        let events = s.cr_events(CR).await?;
        Ok(events
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("Unschedulable")
                    && e.note.as_deref().is_some_and(|n| n.contains(&waiting))
            })
            .then_some(()))
    })
    .await?;
    s.destroy().await
}

#[tokio::test]
async fn k2_drain_evicts_the_nodes_osd_pods_which_return_after_uncordon() -> anyhow::Result<()> {
    let s = Scenario::converge("drain").await?;
    let hosts = hosts(&s, "drain");
    let (drained, other) = (hosts[0].as_str(), hosts[1].as_str());
    let data = ["/dev/sdb", "/dev/sdc"];
    // Without the sample's toleration of cordoned nodes (it would not matter: no pod is
    // created on a cordoned node while the budget is managed).
    let mut template = fast_sample_template()?;
    template["spec"]["tolerations"] = json!([]);
    let converged = s
        .create_converged(
            &cephosd(CR, storage(&[drained, other], &data), "OSD", template),
            keys(&[drained, other], &data),
        )
        .await?;
    let untouched: BTreeMap<String, Option<String>> = converged
        .pods
        .iter()
        .filter(|(key, _)| key.host == other)
        .map(|(_, p)| (p.name_any(), p.uid()))
        .collect();

    run_kubectl(&[
        "drain",
        drained,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=60s",
    ])?;
    // Not recreated while the node is cordoned (the disruption budget's rule; the drain went
    // through one host at a time), and the status says why.
    s.wait_until(
        "the drained node's OSDs reported as waiting for their cordoned node",
        CONVERGE,
        || async {
            let status = s.cr_status(CR).await?.unwrap_or_default();
            let waiting = (status.unschedulable.iter())
                .filter(|u| u.contains(drained) && u.contains("cordoned"))
                .count();
            Ok((waiting == data.len()).then_some(()))
        },
    )
    .await?;
    let recreated = (s.owned_pods(CR).await?.iter())
        .filter(|p| pod_key(p).is_some_and(|k| k.host == drained))
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count();
    if recreated != 0 {
        bail!("{recreated} pods recreated on the cordoned node");
    }
    run_kubectl(&["uncordon", drained])?;
    let want = keys(&[drained, other], &data);
    let pods = s
        .wait_converged(CR, &want, &converged.hash, CONVERGE)
        .await?;
    for (key, pod) in &pods {
        if node_name(pod) != Some(key.host.as_str()) || !is_ready(pod) {
            bail!(
                "pod {} of OSD {key} is not Ready on its node",
                pod.name_any()
            );
        }
    }
    let now: BTreeMap<String, Option<String>> = pods
        .iter()
        .filter(|(key, _)| key.host == other)
        .map(|(_, p)| (p.name_any(), p.uid()))
        .collect();
    if now != untouched {
        bail!("the other node's OSD pods changed: {untouched:?} -> {now:?}");
    }
    s.recorder()?.assert_one_pod_per_key()?;
    s.destroy().await
}

#[tokio::test]
async fn k3_deleting_the_namespace_removes_the_cephosd_and_its_pods() -> anyhow::Result<()> {
    let s = Scenario::converge("nsdelete").await?;
    converged_one_osd_per_host(&s, "nsdel").await?;
    let namespaces: Api<Namespace> = Api::all(s.client.clone());
    namespaces
        .delete(&s.namespace, &DeleteParams::default())
        .await?;
    s.wait_until("the namespace gone", CONVERGE, || async {
        Ok(namespaces
            .get_opt(&s.namespace)
            .await?
            .is_none()
            .then_some(()))
    })
    .await?;
    s.destroy().await
}

#[tokio::test]
async fn k4_kubectl_gets_describes_and_explains_cephosds() -> anyhow::Result<()> {
    let s = Scenario::converge("kubectl").await?;
    converged_one_osd_per_host(&s, "kctl").await?;
    s.wait_until("status Ready", CONVERGE, || async {
        let table = run_kubectl(&["get", "cephosd", "-n", &s.namespace])?;
        Ok((table.contains(CR) && table.contains("Ready")).then_some(()))
    })
    .await?;
    let described = run_kubectl(&["describe", "cephosd", CR, "-n", &s.namespace])?;
    for expected in ["Update Domain:", "Events:", "Created"] {
        if !described.contains(expected) {
            bail!("kubectl describe lacks {expected:?}:\n{described}");
        }
    }
    let explained = run_kubectl(&["explain", "cephosd.spec"])?;
    for expected in ["updateDomain", "storage", "podTemplate"] {
        if !explained.contains(expected) {
            bail!("kubectl explain cephosd.spec lacks {expected:?}:\n{explained}");
        }
    }
    s.destroy().await
}
