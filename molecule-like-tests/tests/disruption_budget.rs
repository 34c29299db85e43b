//! End-to-end scenarios of the disruption budget that node drains and the rollout share: the
//! PodDisruptionBudget kube-controller-manager's disruption controller evaluates, `kubectl
//! drain` against it (the real eviction API), a stuck rollout holding it, a drain holding the
//! rollout, drains racing template changes, someone else's budget, and the CephOSD's own budget
//! taken back after `kubectl delete --cascade=orphan` and a re-creation. Every scenario records
//! the pod watch and checks that no more than `maxUnavailable` hosts were ever down and never
//! two live pods per disk.
//!
//! Needs the local control plane (`molecule-like-tests/control-plane install && ... up`) and a
//! built operator (`cargo build -p ceph-osd-operator`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context};
use ceph_osd_operator::crd::{CephOsdStatus, UpdateDomain};
use ceph_osd_operator::labels;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{hold, Converged, Scenario, CONVERGE, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, never_ready_revision, ready_again_revision, storage, CR,
};
use molecule_like_tests::kubernetes::pods::annotation;
use molecule_like_tests::paths::kubeconfig_path;
use molecule_like_tests::paths::{kubectl, workspace_root};
use serde_json::{json, Value};

const DEVICES: [&str; 2] = ["/dev/sdb", "/dev/sdc"];
/// The budget's name for CR `CR`.
const BUDGET: &str = "ceph-osds-osds";

/// `kubectl args…` against the test control plane: (succeeded, stdout + stderr).
async fn kubectl_run(args: &[&str]) -> anyhow::Result<(bool, String)> {
    let program = kubectl().context("no kubectl: `molecule-like-tests/control-plane install`")?;
    let out = tokio::process::Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .env("KUBECONFIG", kubeconfig_path())
        .output()
        .await
        .context("running kubectl")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

/// `kubectl drain host` giving up after `timeout` seconds: (drained, output).
async fn drain(host: &str, timeout: u64) -> anyhow::Result<(bool, String)> {
    let timeout = format!("--timeout={timeout}s");
    kubectl_run(&[
        "drain",
        host,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        &timeout,
    ])
    .await
}

async fn uncordon(host: &str) -> anyhow::Result<()> {
    let (ok, out) = kubectl_run(&["uncordon", host]).await?;
    ensure!(ok, "kubectl uncordon {host}: {out}");
    Ok(())
}

/// A CephOSD of `DEVICES` on `hosts`, update domain Host, converged.
async fn create_osds(s: &Scenario, hosts: &[String], extra: Value) -> anyhow::Result<Converged> {
    let mut manifest = cephosd(
        CR,
        storage(hosts, &DEVICES),
        "Host",
        fast_sample_template()?,
    );
    if let (Some(spec), Some(extra)) = (manifest["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    s.create_converged(&manifest, keys(hosts, &DEVICES)).await
}

fn budgets(s: &Scenario) -> Api<PodDisruptionBudget> {
    Api::namespaced(s.client.clone(), &s.namespace)
}

/// Waits until the budget exists and the disruption controller counts `healthy` healthy pods
/// and allows `allowed` disruptions for its latest generation.
async fn wait_budget(
    s: &Scenario,
    healthy: i32,
    allowed: i32,
) -> anyhow::Result<PodDisruptionBudget> {
    let api = budgets(s);
    s.wait_until(
        &format!("PodDisruptionBudget {BUDGET}: {healthy} healthy, {allowed} allowed"),
        CONVERGE,
        || async {
            let Some(budget) = api.get_opt(BUDGET).await? else {
                return Ok(None);
            };
            let status = budget.status.clone().unwrap_or_default();
            let caught_up = status.observed_generation == budget.metadata.generation;
            let counts = (status.current_healthy, status.disruptions_allowed);
            Ok((caught_up && counts == (Some(healthy), Some(allowed))).then_some(budget))
        },
    )
    .await
}

async fn status(s: &Scenario) -> anyhow::Result<CephOsdStatus> {
    s.cr_status(CR).await?.context("no status")
}

/// The pods of `host` by name, with their uids.
async fn pods_on(s: &Scenario, host: &str) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(s.owned_pods(CR)
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| annotation(p, labels::HOST) == Some(host))
        .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
        .collect())
}

/// The recorded watch: one pod per disk throughout, at most `max` hosts down from event
/// `from` on (the CephOSD's convergence).
fn check_watch(s: &Scenario, c: &Converged, max: usize, from: usize) -> anyhow::Result<()> {
    let recorder = s.recorder()?;
    recorder.assert_one_pod_per_key()?;
    recorder.assert_unavailable_domains_at_most(&c.want, UpdateDomain::Host, max, from)
}

/// Waits until every pod runs template `hash` again.
async fn wait_rolled(s: &Scenario, c: &Converged, hash: &str) -> anyhow::Result<()> {
    s.wait_converged(CR, &c.want, hash, ROLLOUT)
        .await
        .map(|_| ())
}

#[tokio::test]
async fn drains_share_the_budget_and_a_second_waits_for_the_first_host() -> anyhow::Result<()> {
    let s = Scenario::converge("budget-drains").await?;
    let hosts: Vec<String> = s.hosts(["d1", "d2", "d3"]).into();
    let c = create_osds(&s, &hosts, json!({})).await?;
    let converged_at = s.pod_watch_mark().await?;
    // The shape: integer minAvailable over the 6 pods, 1 allowed, no sync failure.
    let budget = wait_budget(&s, 6, 1).await?;
    let spec = budget.spec.clone().context("spec")?;
    ensure!(
        spec.min_available
            == Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(5)),
        "minAvailable {:?}",
        spec.min_available
    );
    let conditions = budget
        .status
        .clone()
        .unwrap_or_default()
        .conditions
        .unwrap_or_default();
    ensure!(
        conditions.iter().any(|c| c.type_ == "DisruptionAllowed"
            && c.status == "True"
            && c.reason == "SufficientPods"),
        "conditions {conditions:?}"
    );
    ensure!(
        budget
            .owner_references()
            .iter()
            .any(|o| o.kind == "CephOSD" && o.controller == Some(true)),
        "not controlled by the CephOSD"
    );
    // The first host drains; its pods are not recreated while it is cordoned.
    let (drained, out) = drain(&hosts[0], 90).await?;
    ensure!(drained, "first drain failed:\n{out}\n{}", s.operator_log());
    s.wait_until("d1 reported as waiting for its node", CONVERGE, || async {
        let st = status(&s).await?;
        let waits = st
            .unschedulable
            .iter()
            .any(|u| u.contains(&hosts[0]) && u.contains("cordoned"));
        Ok(waits.then_some(()))
    })
    .await?;
    ensure!(
        pods_on(&s, &hosts[0]).await?.is_empty(),
        "d1 pods recreated while cordoned"
    );
    // The second host's drain is refused; its pods keep their uids.
    let before = pods_on(&s, &hosts[1]).await?;
    let (drained, out) = drain(&hosts[1], 15).await?;
    ensure!(!drained, "the second drain went through:\n{out}");
    ensure!(
        out.contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{out}"
    );
    ensure!(pods_on(&s, &hosts[1]).await? == before, "d2's pods changed");
    let said = status(&s).await?.budget.context("status.budget")?;
    ensure!(
        said.allowed_domains == 0 && said.unavailable_domains == [hosts[0].clone()],
        "{said:?}"
    );
    let events = s.cr_events(CR).await?;
    ensure!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("DrainHeld")),
        "no DrainHeld event"
    );
    // The first host returns; then the second drains.
    uncordon(&hosts[0]).await?;
    uncordon(&hosts[1]).await?;
    s.wait_converged(CR, &c.want, &c.hash, CONVERGE).await?;
    wait_budget(&s, 6, 1).await?;
    let (drained, out) = drain(&hosts[1], 90).await?;
    ensure!(
        drained,
        "the second drain after the first host returned:\n{out}"
    );
    uncordon(&hosts[1]).await?;
    s.wait_converged(CR, &c.want, &c.hash, CONVERGE).await?;
    check_watch(&s, &c, 1, converged_at)?;
    s.destroy().await
}

#[tokio::test]
async fn a_stuck_replacement_holds_the_budget_but_its_own_host_drains() -> anyhow::Result<()> {
    let s = Scenario::converge("budget-stuck").await?;
    let hosts: Vec<String> = s.hosts(["s1", "s2", "s3"]).into();
    let c = create_osds(&s, &hosts, json!({})).await?;
    let converged_at = s.pod_watch_mark().await?;
    wait_budget(&s, 6, 1).await?;
    let (_, stuck_hash) = s
        .patch_template_metadata(CR, never_ready_revision("stuck"))
        .await?;
    // The first host in rollout order is replaced and never becomes Ready.
    s.wait_until(
        "s1 replaced by pods that never become Ready",
        ROLLOUT,
        || async {
            let pods = s.owned_pods(CR).await?;
            let replaced = pods.iter().any(|p| {
                annotation(p, labels::HOST) == Some(hosts[0].as_str())
                    && annotation(p, labels::TEMPLATE_HASH) == Some(stuck_hash.as_str())
            });
            Ok(replaced.then_some(()))
        },
    )
    .await?;
    wait_budget(&s, 4, 0).await?;
    let before = pods_on(&s, &hosts[1]).await?;
    let (drained, out) = drain(&hosts[1], 15).await?;
    ensure!(
        !drained,
        "a drain of another host went through during the stuck step:\n{out}"
    );
    ensure!(pods_on(&s, &hosts[1]).await? == before, "s2's pods changed");
    let (drained, out) = drain(&hosts[0], 60).await?;
    ensure!(
        drained,
        "the drain of the host being replaced failed:\n{out}"
    );
    uncordon(&hosts[0]).await?;
    uncordon(&hosts[1]).await?;
    let (_, fixed) = s
        .patch_template_metadata(CR, ready_again_revision("fixed"))
        .await?;
    wait_rolled(&s, &c, &fixed).await?;
    check_watch(&s, &c, 1, converged_at)?;
    s.destroy().await
}

#[tokio::test]
async fn a_drain_holds_the_rollout_until_the_node_is_uncordoned() -> anyhow::Result<()> {
    let s = Scenario::converge("budget-hold").await?;
    let hosts: Vec<String> = s.hosts(["h1", "h2", "h3"]).into();
    let c = create_osds(&s, &hosts, json!({})).await?;
    let converged_at = s.pod_watch_mark().await?;
    wait_budget(&s, 6, 1).await?;
    // A cordoned node whose pods still run: its drain goes first, the rollout waits.
    let (ok, out) = kubectl_run(&["cordon", &hosts[2]]).await?;
    ensure!(ok, "{out}");
    let (_, new_hash) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    s.wait_until(
        "the rollout waits for the disruption budget",
        CONVERGE,
        || async {
            let st = status(&s).await?;
            let waiting = st.conditions.iter().any(|c| {
                c.type_ == "Progressing"
                    && c.reason == "WaitingForDisruptionBudget"
                    && c.message.contains("cordoned")
            });
            Ok(waiting.then_some(()))
        },
    )
    .await?;
    let all_before: Vec<String> = s
        .owned_pods(CR)
        .await?
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    // Drained: that host is down, no other starts.
    let (drained, out) = drain(&hosts[2], 90).await?;
    ensure!(drained, "{out}");
    hold(Duration::from_secs(8), || async {
        let pods = s.owned_pods(CR).await?;
        let gone_elsewhere = all_before.iter().any(|name| {
            !name.contains(hosts[2].as_str())
                && pods
                    .iter()
                    .all(|p| p.name_any() != *name || p.metadata.deletion_timestamp.is_some())
        });
        ensure!(
            !gone_elsewhere,
            "a pod of another host went down during the drain"
        );
        Ok(())
    })
    .await?;
    uncordon(&hosts[2]).await?;
    wait_rolled(&s, &c, &new_hash).await?;
    check_watch(&s, &c, 1, converged_at)?;
    s.destroy().await
}

#[tokio::test]
async fn drains_racing_template_changes_never_take_two_hosts_down() -> anyhow::Result<()> {
    let s = Scenario::converge("budget-race").await?;
    let hosts: Vec<String> = s.hosts(["r1", "r2", "r3", "r4"]).into();
    let c = create_osds(&s, &hosts, json!({})).await?;
    let converged_at = s.pod_watch_mark().await?;
    wait_budget(&s, 8, 1).await?;
    let mut hash;
    for round in 0..3usize {
        // Pseudo-random but reproducible: which hosts drain, and how late the edit comes.
        let (a, b) = (round % 4, (round * 3 + 1) % 4);
        let delay = Duration::from_millis(300 * u64::try_from(round)?);
        let edit = async {
            tokio::time::sleep(delay).await;
            s.patch_template_metadata(CR, json!({"labels": {"rev": round.to_string()}}))
                .await
        };
        let (first, second, edited) =
            tokio::join!(drain(&hosts[a], 20), drain(&hosts[b], 20), edit);
        hash = edited?.1;
        eprintln!(
            "round {round}: drain {} → {}, drain {} → {}",
            hosts[a], first?.0, hosts[b], second?.0
        );
        for host in &hosts {
            uncordon(host).await?;
        }
        wait_rolled(&s, &c, &hash).await?;
    }
    check_watch(&s, &c, 1, converged_at)?;
    s.destroy().await
}

#[tokio::test]
async fn someone_elses_budget_over_the_osd_pods_means_none_of_ours() -> anyhow::Result<()> {
    let s = Scenario::converge("budget-foreign").await?;
    let hosts: Vec<String> = s.hosts(["f1", "f2"]).into();
    let c = create_osds(&s, &hosts, json!({})).await?;
    let converged_at = s.pod_watch_mark().await?;
    wait_budget(&s, 4, 1).await?;
    let users: PodDisruptionBudget = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "users-own"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"role": "osd"}}},
    }))?;
    budgets(&s).create(&PostParams::default(), &users).await?;
    s.wait_until("ours removed and ForeignBudget said", CONVERGE, || async {
        let ours = budgets(&s).get_opt(BUDGET).await?;
        let st = status(&s).await?;
        let said = st.conditions.iter().any(|c| {
            c.type_ == "DisruptionBudget"
                && c.reason == "ForeignBudget"
                && c.message.contains("users-own")
        });
        Ok((ours.is_none() && said).then_some(()))
    })
    .await?;
    // Drains follow the user's budget alone (2 of 4 may go), without the 500 of a pod under
    // two budgets.
    let (drained, out) = drain(&hosts[0], 60).await?;
    ensure!(
        drained && !out.contains("more than one PodDisruptionBudget"),
        "{out}"
    );
    uncordon(&hosts[0]).await?;
    s.wait_converged(CR, &c.want, &c.hash, CONVERGE).await?;
    // Turned off: nothing comes back when the user's budget goes.
    s.patch_spec(CR, json!({"disruptionBudget": "Off"})).await?;
    budgets(&s)
        .delete("users-own", &DeleteParams::default())
        .await?;
    s.wait_until("BudgetOff said", CONVERGE, || async {
        let st = status(&s).await?;
        let off = st
            .conditions
            .iter()
            .any(|c| c.type_ == "DisruptionBudget" && c.reason == "BudgetOff");
        Ok(off.then_some(()))
    })
    .await?;
    ensure!(
        budgets(&s).get_opt(BUDGET).await?.is_none(),
        "a budget while Off"
    );
    check_watch(&s, &c, 1, converged_at)?;
    s.destroy().await
}

/// `kubectl delete cephosd --cascade=orphan`, then the same manifest applied again: the pods
/// and the budget the garbage collector orphaned are the new CephOSD's, none restarted; the
/// budget is adopted (controlled by the new uid, never said foreign) and follows the spec.
#[tokio::test]
async fn a_cephosd_deleted_with_cascade_orphan_and_recreated_takes_its_budget_back(
) -> anyhow::Result<()> {
    let s = Scenario::converge("budget-orphan").await?;
    let hosts: Vec<String> = s.hosts(["o1", "o2", "o3"]).into();
    let manifest = cephosd(
        CR,
        storage(&hosts, &DEVICES),
        "Host",
        fast_sample_template()?,
    );
    let c = s
        .create_converged(&manifest, keys(&hosts, &DEVICES))
        .await?;
    let converged_at = s.recorder()?.len();
    wait_budget(&s, 6, 1).await?;
    let old_uid = s.crs.get(CR).await?.uid().context("uid")?;
    let pod_uids = |pods: Vec<k8s_openapi::api::core::v1::Pod>| -> BTreeMap<String, String> {
        (pods.into_iter())
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
            .collect()
    };
    let before = pod_uids(s.owned_pods(CR).await?);

    s.crs.delete(CR, &DeleteParams::orphan()).await?;
    s.wait_until(
        "the CephOSD gone, its budget orphaned",
        CONVERGE,
        || async {
            let gone = s.crs.get_opt(CR).await?.is_none();
            let budget = budgets(&s).get_opt(BUDGET).await?;
            let orphaned = budget.is_some_and(|b| b.owner_references().is_empty());
            Ok((gone && orphaned).then_some(()))
        },
    )
    .await?;
    s.create_cr(&manifest).await?;
    let new_uid = s.crs.get(CR).await?.uid().context("uid")?;
    ensure!(new_uid != old_uid, "the same uid after a re-creation");
    let budget = s
        .wait_until(
            "the budget controlled by the new CephOSD",
            CONVERGE,
            || async {
                let budget = budgets(&s).get_opt(BUDGET).await?;
                Ok(budget.filter(|b| {
                    b.owner_references().iter().any(|o| {
                        o.kind == "CephOSD" && o.uid == new_uid && o.controller == Some(true)
                    })
                }))
            },
        )
        .await?;
    ensure!(
        budget.owner_references().len() == 1,
        "owners {:?}",
        budget.owner_references()
    );
    s.wait_until("DisruptionBudget True BudgetManaged", CONVERGE, || async {
        let st = status(&s).await?;
        let managed = st.conditions.iter().any(|c| {
            c.type_ == "DisruptionBudget" && c.status == "True" && c.reason == "BudgetManaged"
        });
        Ok(managed.then_some(()))
    })
    .await?;
    let events = s.cr_events(CR).await?;
    ensure!(
        events.iter().all(|e| !e
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("ForeignBudget"))
            && events.iter().any(|e| e.reason.as_deref() == Some("Adopted")
                && e.note.as_deref().unwrap_or_default().contains(BUDGET)),
        "events:\n{}",
        molecule_like_tests::journeys::scenario::describe_events(&events)
    );
    let st = status(&s).await?;
    ensure!(
        !st.conditions.iter().any(|c| c.reason == "ForeignBudget"),
        "conditions {:?}",
        st.conditions
    );
    // Adopted without a restart: the same pods.
    s.wait_converged(CR, &c.want, &c.hash, CONVERGE).await?;
    ensure!(
        pod_uids(s.owned_pods(CR).await?) == before,
        "the pods changed across the re-creation"
    );
    // Its size follows the spec: 2 hosts of 2 pods may go.
    s.patch_spec(CR, json!({"maxUnavailable": 2})).await?;
    let budget = wait_budget(&s, 6, 2).await?;
    ensure!(
        budget.spec.as_ref().and_then(|s| s.min_available.clone())
            == Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(4)),
        "minAvailable {:?}",
        budget.spec.as_ref().map(|s| &s.min_available)
    );
    check_watch(&s, &c, 0, converged_at)?;
    s.destroy().await
}
