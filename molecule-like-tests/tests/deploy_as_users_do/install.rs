//! Installed on the control plane as users do: `helm install`/`upgrade`/`uninstall` and
//! `kubectl apply -k deploy/`, admitted as restricted, reconciling as the ServiceAccount.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, ensure, Context};
use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::Scenario;
use molecule_like_tests::kubernetes::client::test_client;
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, random_suffix, storage, CR,
};
use molecule_like_tests::paths::kubeconfig_path;
use serde_json::{json, Value};

use crate::common::{args, helm_bin, kubectl_bin, output, run, CHART, OPERATOR_NAMESPACE};

const CRD_NAME: &str = "cephosds.ceph.elemental.net";
/// The journeys that change cluster-wide objects, one at a time.
static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// ---------------------------------------------------------------------------------------------

/// A namespace that enforces the restricted Pod Security Standard.
async fn restricted_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
    }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

/// The admission of `namespace` enforces the restricted standard: a privileged pod is refused
/// (server-side dry run), so the Deployment's admitted pods passed a check that can fail.
async fn check_restricted_admission(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let privileged: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "privileged-probe"},
        "spec": {"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": true}}]},
    }))?;
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match pods.create(&params, &privileged).await {
        Err(kube::Error::Api(status)) if status.message.contains("violates PodSecurity") => Ok(()),
        other => bail!("a privileged pod in {namespace} was not refused by PodSecurity: {other:?}"),
    }
}

/// Waits until Deployment `name`'s newest ReplicaSet has created its pods (the admission let
/// them in); fails with the ReplicaSet's failure condition if it says why not.
async fn wait_pods_admitted(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<usize> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    loop {
        let d = deployments.get(name).await?;
        let want = d.spec.replicas.unwrap_or(1);
        let selector = d
            .spec
            .selector
            .match_labels
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let count = pods
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .len();
        if count >= usize::try_from(want)? {
            return Ok(count);
        }
        if tokio::time::Instant::now() > deadline {
            let failures: Vec<String> = sets
                .list(&ListParams::default().labels(&selector))
                .await?
                .items
                .iter()
                .flat_map(|rs| rs.status.iter().flat_map(|s| s.conditions.iter().flatten()))
                .map(|c| format!("{:?}: {:?}", c.type_, c.message))
                .collect();
            bail!("Deployment {namespace}/{name}: {count} of {want} pods after 60 s; {failures:?}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A kubeconfig for ServiceAccount `namespace/account`: the admin's server and CA, a token.
fn service_account_kubeconfig(namespace: &str, account: &str, path: &Path) -> anyhow::Result<()> {
    let kubectl = kubectl_bin()?;
    let token = run(
        &kubectl,
        &[
            "create",
            "token",
            account,
            "--namespace",
            namespace,
            "--duration",
            "1h",
        ],
    )?;
    let admin: Value = serde_saphyr::from_str(&std::fs::read_to_string(kubeconfig_path())?)
        .map_err(|e| anyhow::anyhow!("admin kubeconfig: {e}"))?;
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": account, "user": {"token": token.trim()}}],
        "contexts": [{"name": "sa", "context": {"cluster": admin["clusters"][0]["name"], "user": account}}],
        "current-context": "sa",
    });
    std::fs::write(path, config.to_string())?;
    Ok(())
}

/// A CephOSD of 2 hosts × 2 OSDs reconciled by an operator running as ServiceAccount
/// `namespace/account` (a token of it, with the RBAC bound to it): one pod per OSD.
struct Reconciled {
    s: Scenario,
    want: BTreeSet<OsdKey>,
    /// The pod watch's length once every OSD's pod was Ready.
    converged_at: usize,
}

impl Reconciled {
    /// The pod watch since the CephOSD was created: never two pods for one disk, and no OSD
    /// without a Ready pod since they all came up (whatever was installed, upgraded or
    /// uninstalled meanwhile).
    async fn check_pod_watch(&self) -> anyhow::Result<()> {
        self.s.assert_one_pod_per_key().await?;
        self.s.recorder()?.assert_unavailable_domains_at_most(
            &self.want,
            UpdateDomain::Host,
            0,
            self.converged_at,
        )
    }
}

async fn reconciling_as(namespace: &str, account: &str, name: &str) -> anyhow::Result<Reconciled> {
    let mut s = Scenario::create(name).await?;
    s.start_recorder().await?;
    let kubeconfig = s.log_path.with_file_name(format!("{account}.kubeconfig"));
    service_account_kubeconfig(namespace, account, &kubeconfig)?;
    s.start_operator_with_args(
        &molecule_like_tests::kubernetes::operator::OperatorOptions::default(),
        &["--kubeconfig", kubeconfig.to_str().context("path")?],
    )?;
    let hosts = s.hosts(["a", "b"]);
    let data = ["/dev/sdb", "/dev/sdc"];
    let want = keys(&hosts, &data);
    s.create_converged(
        &cephosd(CR, storage(&hosts, &data), "Host", fast_sample_template()?),
        want.clone(),
    )
    .await?;
    let converged_at = s.pod_watch_mark().await?;
    Ok(Reconciled {
        s,
        want,
        converged_at,
    })
}

/// OSD pods of `namespace` by UID.
async fn pod_uids(client: &kube::Client, namespace: &str) -> anyhow::Result<BTreeSet<String>> {
    Ok(Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter_map(ResourceExt::uid)
        .collect())
}

#[tokio::test]
async fn helm_install_runs_the_operator_upgrade_rolls_it_uninstall_keeps_the_osds(
) -> anyhow::Result<()> {
    let _cluster = CLUSTER.lock().await;
    let helm = helm_bin()?;
    let client = test_client().await?;
    let tag = random_suffix();
    let (release, namespace) = (format!("mlt-helm-{tag}"), format!("mlt-helm-{tag}"));
    let fullname = format!("{release}-ceph-osd-operator");

    // Helm installs crds/ only where the CRD is absent: take it away first.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    delete_crd(&crds).await?;
    restricted_namespace(&client, &namespace).await?;
    check_restricted_admission(&client, &namespace).await?;
    // A PriorityClass of its own (the control plane's setup applies deploy/'s `ceph-osd`).
    let priority_class = format!("{release}-osd");
    let values = format!(
        "ceph.secretName=ceph-client,priorityClass.create=true,priorityClass.name={priority_class}"
    );
    let installed = run(
        &helm,
        &[
            "install",
            &release,
            CHART,
            "--namespace",
            &namespace,
            "--set",
            &values,
        ],
    )?;
    eprintln!("{installed}");
    let priority_classes: Api<PriorityClass> = Api::all(client.clone());
    ensure!(
        priority_classes.get_opt(&priority_class).await?.is_some(),
        "no PriorityClass {priority_class} after the install"
    );
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(crds.clone(), CRD_NAME, conditions::is_crd_established()),
    )
    .await
    .context("the CRD from crds/ not Established within 30 s")??;
    let crd_uid = crds.get(CRD_NAME).await?.uid();
    let admitted = wait_pods_admitted(&client, &namespace, &fullname).await?;
    eprintln!("[deploy] {admitted} operator pods admitted under the restricted standard");
    check_service_account_rights(&namespace, &fullname)?;
    // The operator binary as Helm's ServiceAccount, with Helm's RBAC: it reconciles a CephOSD.
    let reconciled = reconciling_as(&namespace, &fullname, "helm-osds").await?;
    let s = &reconciled.s;
    let before = pod_uids(&client, &s.namespace).await?;
    ensure!(before.len() == 4, "{} OSD pods", before.len());

    // Upgrade with a changed value: the Deployment's template changes, a new ReplicaSet rolls.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    upgrade_rolls(&helm, &client, &release, &namespace, &fullname).await?;

    // Uninstall: the CRD (same UID), the CephOSD and every OSD pod (same UIDs) stay.
    s.stop_operator();
    run(&helm, &["uninstall", &release, "--namespace", &namespace])?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    ensure!(
        crds.get(CRD_NAME).await?.uid() == crd_uid,
        "the CRD was replaced or removed"
    );
    ensure!(s.crs.get_opt(CR).await?.is_some(), "the CephOSD is gone");
    let after = pod_uids(&client, &s.namespace).await?;
    ensure!(
        after == before,
        "OSD pods changed by the uninstall: {before:?} → {after:?}"
    );
    let left = deployments.get_opt(&fullname).await?;
    ensure!(left.is_none(), "the Deployment outlived the uninstall");
    ensure!(
        priority_classes.get_opt(&priority_class).await?.is_none(),
        "the release's PriorityClass outlived the uninstall"
    );
    reconciled.check_pod_watch().await?;
    reconciled.s.destroy().await?;
    Api::<Namespace>::all(client.clone())
        .delete(&namespace, &DeleteParams::default())
        .await?;
    Ok(())
}

/// Deletes the CephOSD CRD when there is one and waits until it is gone.
async fn delete_crd(crds: &Api<CustomResourceDefinition>) -> anyhow::Result<()> {
    if let Some(uid) = crds.get_opt(CRD_NAME).await?.and_then(|crd| crd.uid()) {
        crds.delete(CRD_NAME, &DeleteParams::default()).await?;
        let gone = tokio::time::timeout(
            Duration::from_mins(1),
            await_condition(crds.clone(), CRD_NAME, conditions::is_deleted(&uid)),
        )
        .await;
        ensure!(gone.is_ok(), "the CRD was not deleted within 60 s");
    }
    Ok(())
}

/// What the chart's ServiceAccount may do cluster-wide, asked with `kubectl auth can-i`: no
/// Secrets, pods yes, the CephOSD status subresource yes.
fn check_service_account_rights(namespace: &str, fullname: &str) -> anyhow::Result<()> {
    let sa = format!("system:serviceaccount:{namespace}:{fullname}");
    let kubectl = kubectl_bin()?;
    for (verb, resource, subresource, expected) in [
        ("list", "secrets", "", "no"),
        ("get", "secrets", "", "no"),
        ("watch", "pods", "", "yes"),
        ("delete", "pods", "", "yes"),
        (
            "patch",
            "cephosds.ceph.elemental.net",
            "--subresource=status",
            "yes",
        ),
    ] {
        let mut words = vec![
            "auth",
            "can-i",
            verb,
            resource,
            "--all-namespaces",
            "--as",
            &sa,
        ];
        if !subresource.is_empty() {
            words.push(subresource);
        }
        let out = output(&kubectl, &words)?;
        let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        ensure!(
            said == expected,
            "{sa} can-i {verb} {resource}: {said}, expected {expected}"
        );
    }

    Ok(())
}

/// `helm upgrade` with a changed value: the Deployment's generation moves, its args carry the
/// value, a new ReplicaSet next to the old, the new pods admitted.
async fn upgrade_rolls(
    helm: &str,
    client: &kube::Client,
    release: &str,
    namespace: &str,
    fullname: &str,
) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let generation = deployments.get(fullname).await?.metadata.generation;
    run(
        helm,
        &[
            "upgrade",
            release,
            CHART,
            "--namespace",
            namespace,
            "--reuse-values",
            "--set",
            "resyncSeconds=60",
        ],
    )?;
    let upgraded = deployments.get(fullname).await?;
    ensure!(
        upgraded.metadata.generation > generation,
        "the Deployment's generation did not move: {generation:?} → {:?}",
        upgraded.metadata.generation
    );
    let rendered: Value = serde_json::to_value(&upgraded)?;
    ensure!(
        args(&rendered).contains("--resync-seconds=60"),
        "{:?}",
        args(&rendered)
    );
    let sets = Api::<ReplicaSet>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items
        .len();
    ensure!(
        sets == 2,
        "{sets} ReplicaSets after the upgrade, expected the old and the new"
    );
    wait_pods_admitted(client, namespace, fullname).await?;

    Ok(())
}

#[tokio::test]
async fn kubectl_apply_k_deploy_is_admitted_as_restricted_and_a_second_apply_changes_nothing(
) -> anyhow::Result<()> {
    let _cluster = CLUSTER.lock().await;
    let kubectl = kubectl_bin()?;
    let client = test_client().await?;
    run(&kubectl, &["apply", "-k", "deploy/", "--dry-run=server"])?;
    let first = run(&kubectl, &["apply", "-k", "deploy/"])?;
    eprintln!("{first}");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let labels = namespaces.get(OPERATOR_NAMESPACE).await?.labels().clone();
    ensure!(
        labels
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str)
            == Some("restricted"),
        "{OPERATOR_NAMESPACE} does not enforce the restricted standard: {labels:?}"
    );
    check_restricted_admission(&client, OPERATOR_NAMESPACE).await?;
    let admitted = wait_pods_admitted(&client, OPERATOR_NAMESPACE, "ceph-osd-operator").await;
    // The operator as the ServiceAccount, with the RBAC, that deploy/ makes.
    let reconciled =
        reconciling_as(OPERATOR_NAMESPACE, "ceph-osd-operator", "kustomize-osds").await;
    let second = run(&kubectl, &["apply", "-k", "deploy/"]);
    // deploy/'s Deployment and Service are what the control plane's setup does not apply:
    // they go again whatever happened (the rest is that setup's).
    let cleaned = run(
        &kubectl,
        &[
            "delete",
            "--ignore-not-found",
            "-f",
            "deploy/deployment.yaml",
            "-f",
            "deploy/service.yaml",
        ],
    );
    eprintln!(
        "[deploy] {} operator pods admitted under the restricted standard",
        admitted?
    );
    let reconciled = reconciled?;
    reconciled.check_pod_watch().await?;
    reconciled.s.destroy().await?;
    let second = second?;
    let changed: Vec<&str> = second
        .lines()
        .filter(|l| !l.ends_with(" unchanged"))
        .collect();
    ensure!(
        changed.is_empty() && !second.trim().is_empty(),
        "a second `kubectl apply -k deploy/` changed: {changed:?}"
    );
    cleaned?;
    Ok(())
}
