//! The operator deployed the way users do it, against the real API server: the Helm chart with
//! Helm itself (built from its Go module by `control-plane install`) and deploy/ with
//! `kubectl apply -k`.
//!
//! - `helm lint --strict`; `helm template` with the defaults and with every value the chart
//!   documents changed (a check fails when values.yaml gains a value this test does not
//!   change); the chart's RBAC, Deployment and Ceph mounts equal the kustomize build's (one
//!   source of truth: a drift fails).
//! - `helm install` into a namespace that enforces the restricted Pod Security Standard (the
//!   real admission admits the Deployment's pods — KWOK fakes), the CRD from the chart's
//!   `crds/`; the operator run as the ServiceAccount Helm created, with the RBAC Helm created,
//!   reconciles a CephOSD; `helm upgrade` rolls the Deployment; `helm uninstall` leaves the
//!   CRD, the CephOSD and every OSD pod. Each journey's pod watch, recorded from the CephOSD's
//!   creation: never two pods for one disk, no OSD without a Ready pod once all were up.
//! - `kubectl apply -k deploy/`: `--dry-run=server` first, then for real, then again with
//!   every object unchanged; the namespace enforces the restricted standard on its pods.
//!
//! The Helm journey deletes the cluster-wide CRD first, so that Helm installs it (Helm installs
//! `crds/` only where absent): the journeys of this file hold one lock, and cargo runs no other
//! test binary meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
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
use molecule_like_tests::paths::{helm, kubectl, workspace_root};
use serde_json::{json, Value};

const CHART: &str = "deploy/helm/ceph-osd-operator";
const CRD_NAME: &str = "cephosds.ceph.elemental.net";
const OPERATOR_NAMESPACE: &str = "ceph-osd-operator";

/// The journeys that change cluster-wide objects, one at a time.
static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn repo(relative: &str) -> PathBuf {
    workspace_root().join(relative)
}

/// `program args` as the cluster admin (KUBECONFIG), from the repository root, finished.
fn output(program: &str, args: &[&str]) -> anyhow::Result<std::process::Output> {
    Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .env("KUBECONFIG", kubeconfig_path())
        // Helm keeps its caches and repositories here, not in the user's home.
        .env("HELM_CACHE_HOME", scratch().join("helm-cache"))
        .env("HELM_CONFIG_HOME", scratch().join("helm-config"))
        .env("HELM_DATA_HOME", scratch().join("helm-data"))
        .output()
        .with_context(|| format!("running {program}"))
}

/// [`output`] of a run that must succeed: its stdout, or an error with its stderr.
fn run(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = output(program, args)?;
    let shown = format!("{program} {}", args.join(" "));
    ensure!(
        out.status.success(),
        "`{shown}` failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim(),
        String::from_utf8_lossy(&out.stdout).trim()
    );
    eprintln!("[deploy] {shown}: ok");
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// [`output`] of a run that must fail: its stderr.
fn run_failing(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = output(program, args)?;
    ensure!(
        !out.status.success(),
        "`{program} {}` succeeded",
        args.join(" ")
    );
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

fn scratch() -> PathBuf {
    workspace_root().join("target").join("deploy-as-users-do")
}

fn helm_bin() -> anyhow::Result<String> {
    helm().context("no helm: `molecule-like-tests/control-plane install` builds it, `up` links it")
}

fn kubectl_bin() -> anyhow::Result<String> {
    kubectl().context("no kubectl: `molecule-like-tests/control-plane install` fetches it")
}

/// The objects of a multi-document YAML text (empty documents dropped).
fn objects(text: &str) -> anyhow::Result<Vec<Value>> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| anyhow::anyhow!("invalid YAML: {e}"))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// `helm template ceph-osd-operator <chart> --namespace ceph-osd-operator <args>`: with this
/// release name the chart's names are deploy/'s.
fn helm_template(args: &[&str]) -> anyhow::Result<Vec<Value>> {
    let kube_version = kubernetes_version()?;
    let mut all = vec![
        "template",
        "ceph-osd-operator",
        CHART,
        "--namespace",
        OPERATOR_NAMESPACE,
        "--kube-version",
        &kube_version,
    ];
    all.extend_from_slice(args);
    objects(&run(&helm_bin()?, &all)?)
}

/// The Kubernetes version the control plane is built from (offline, `helm template` renders
/// for an old default version, below the chart's `kubeVersion`).
fn kubernetes_version() -> anyhow::Result<String> {
    let go_mod = std::fs::read_to_string(repo("molecule-like-tests/kubernetes/go.mod"))?;
    go_mod
        .lines()
        .find_map(|l| l.strip_prefix("require k8s.io/kubernetes "))
        .map(|v| v.trim().to_owned())
        .context("no `require k8s.io/kubernetes` in molecule-like-tests/kubernetes/go.mod")
}

/// `kubectl kustomize` of deploy/ with `components` (paths under deploy/), from a
/// kustomization of its own outside deploy/ as the components' comments say.
fn kustomize(components: &[&str]) -> anyhow::Result<Vec<Value>> {
    let dir = scratch().join(format!("kustomize-{}", random_suffix()));
    std::fs::create_dir_all(&dir)?;
    // kustomize takes only relative roots: from target/deploy-as-users-do/<dir>/.
    let relative = |p: &str| format!("../../../{p}");
    let components: Vec<String> = components.iter().map(|c| relative(c)).collect();
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative("deploy")],
        "components": components,
    });
    std::fs::write(dir.join("kustomization.yaml"), kustomization.to_string())?;
    let out = run(
        &kubectl_bin()?,
        &[
            "kustomize",
            "--load-restrictor",
            "LoadRestrictionsNone",
            dir.to_str().context("path")?,
        ],
    )?;
    std::fs::remove_dir_all(&dir)?;
    objects(&out)
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> anyhow::Result<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .with_context(|| format!("no {kind} {name} among {}", kinds_and_names(objects)))
}

fn only<'a>(objects: &'a [Value], kind: &str) -> anyhow::Result<&'a Value> {
    let mut of_kind = objects.iter().filter(|o| o["kind"] == kind);
    let first = of_kind.next().with_context(|| format!("no {kind}"))?;
    ensure!(of_kind.next().is_none(), "more than one {kind}");
    Ok(first)
}

fn kinds_and_names(objects: &[Value]) -> String {
    objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or("?"),
                o["metadata"]["name"].as_str().unwrap_or("?")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn container(deployment: &Value) -> &Value {
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

fn args(deployment: &Value) -> BTreeSet<String> {
    container(deployment)["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect()
}

/// Every leaf of a values tree, as dotted paths (lists are leaves).
fn leaves(prefix: &str, value: &Value, out: &mut BTreeMap<String, Value>) {
    match value.as_object() {
        Some(map) if !map.is_empty() => {
            for (key, child) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                leaves(&path, child, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned(), value.clone());
        }
    }
}

// ---------------------------------------------------------------------------------------------

#[test]
fn helm_lints_the_chart_strictly_and_renders_what_kustomize_builds() -> anyhow::Result<()> {
    let helm = helm_bin()?;
    run(&helm, &["lint", "--strict", CHART])?;
    run(
        &helm,
        &[
            "lint",
            "--strict",
            CHART,
            "--set",
            "rbac.scope=namespaced,watchNamespace=ceph",
        ],
    )?;

    // The same objects where both describe them: RBAC rules and subjects, the Deployment's pod.
    check_default_variant()?;
    // Watching one namespace: the component deploy/namespaced/ and rbac.scope=namespaced.
    check_namespaced_variant()?;
    // The Ceph gate: the Secret mounted the same way, the same flags, no Secret RBAC.
    check_ceph_gate_variant()?;
    Ok(())
}

/// The chart and deploy/ describe the same objects alike: RBAC rules and subjects, the
/// Deployment's pod, every flag of deploy/'s in the chart's.
fn check_default_variant() -> anyhow::Result<()> {
    let chart = helm_template(&[])?;
    let built = kustomize(&[])?;
    for (kind, name) in [
        ("ClusterRole", "ceph-osd-operator"),
        ("ClusterRoleBinding", "ceph-osd-operator"),
        ("ClusterRole", "ceph-osd-operator-metrics-auth"),
        ("ClusterRoleBinding", "ceph-osd-operator-metrics-auth"),
        ("ClusterRole", "ceph-osd-operator-metrics-reader"),
        ("Role", "ceph-osd-operator-lease"),
        ("RoleBinding", "ceph-osd-operator-lease"),
    ] {
        let (a, b) = (find(&chart, kind, name)?, find(&built, kind, name)?);
        for field in ["rules", "subjects", "roleRef"] {
            ensure!(
                a[field] == b[field],
                "{kind} {name}: `{field}` differs between the chart and deploy/:\nchart:   {}\ndeploy/: {}",
                a[field],
                b[field]
            );
        }
    }
    let (a, b) = (only(&chart, "Deployment")?, only(&built, "Deployment")?);
    for pointer in [
        "/spec/replicas",
        "/spec/template/spec/securityContext",
        "/spec/template/spec/containers/0/securityContext",
        "/spec/template/spec/containers/0/ports",
        "/spec/template/spec/containers/0/livenessProbe",
        "/spec/template/spec/containers/0/readinessProbe",
        "/spec/template/spec/containers/0/resources",
        "/spec/template/spec/containers/0/env",
        "/spec/template/spec/terminationGracePeriodSeconds",
    ] {
        ensure!(
            a.pointer(pointer) == b.pointer(pointer),
            "Deployment {pointer} differs:\nchart:   {:?}\ndeploy/: {:?}",
            a.pointer(pointer),
            b.pointer(pointer)
        );
    }
    let missing: Vec<String> = args(b).difference(&args(a)).cloned().collect();
    ensure!(
        missing.is_empty(),
        "deploy/'s args the chart lacks: {missing:?}"
    );
    Ok(())
}

/// Watching one namespace: the component deploy/namespaced/ and `rbac.scope=namespaced`
/// describe the same RBAC, no rules in every namespace, `WATCH_NAMESPACE` set.
fn check_namespaced_variant() -> anyhow::Result<()> {
    let chart = helm_template(&["--set", "rbac.scope=namespaced,watchNamespace=ceph"])?;
    let built = kustomize(&["deploy/namespaced"])?;
    for (kind, name) in [
        ("Role", "ceph-osd-operator-watch"),
        ("RoleBinding", "ceph-osd-operator-watch"),
        ("ClusterRole", "ceph-osd-operator-cephosd-reader"),
        ("ClusterRoleBinding", "ceph-osd-operator-cephosd-reader"),
    ] {
        let (a, b) = (find(&chart, kind, name)?, find(&built, kind, name)?);
        for field in ["rules", "subjects", "roleRef"] {
            ensure!(a[field] == b[field], "{kind} {name}: `{field}` differs");
        }
        ensure!(
            a["metadata"]["namespace"] == b["metadata"]["namespace"],
            "{kind} {name}: namespace differs"
        );
    }
    for objects in [&chart, &built] {
        ensure!(
            find(objects, "ClusterRole", "ceph-osd-operator").is_err(),
            "rules in every namespace left in the namespaced variant: {}",
            kinds_and_names(objects)
        );
        let env = &container(only(objects, "Deployment")?)["env"];
        ensure!(
            env.as_array()
                .into_iter()
                .flatten()
                .any(|e| e["name"] == "WATCH_NAMESPACE" && e["value"] == "ceph"),
            "no WATCH_NAMESPACE=ceph: {env}"
        );
    }
    Ok(())
}

/// The Ceph gate: deploy/ceph-gate/ and `ceph.secretName` mount the Secret the same way,
/// pass the same flags, hold the same step-lock Role, and no rule on Secrets.
fn check_ceph_gate_variant() -> anyhow::Result<()> {
    let chart = helm_template(&["--set", "ceph.secretName=ceph-osd-operator-ceph"])?;
    let built = kustomize(&["deploy/ceph-gate"])?;
    // The step lock's Role in the operator's namespace and the read of kube-system (the lock's
    // place recorded in Ceph), the same both ways.
    for (kind, name) in [
        ("Role", "ceph-osd-operator-ceph-lock"),
        ("RoleBinding", "ceph-osd-operator-ceph-lock"),
        ("ClusterRole", "ceph-osd-operator-lock-place"),
        ("ClusterRoleBinding", "ceph-osd-operator-lock-place"),
    ] {
        let (a, b) = (find(&chart, kind, name)?, find(&built, kind, name)?);
        for field in ["rules", "subjects", "roleRef"] {
            ensure!(
                a[field] == b[field] && a["metadata"]["namespace"] == b["metadata"]["namespace"],
                "{kind} {name}: `{field}` differs between the chart and deploy/ceph-gate/:\nchart:   \
                 {a}\ndeploy/: {b}"
            );
        }
    }
    let (a, b) = (only(&chart, "Deployment")?, only(&built, "Deployment")?);
    for pointer in [
        "/spec/template/spec/volumes",
        "/spec/template/spec/containers/0/volumeMounts",
    ] {
        ensure!(
            a.pointer(pointer) == b.pointer(pointer) && a.pointer(pointer).is_some(),
            "Deployment {pointer} differs:\nchart:   {:?}\ndeploy/: {:?}",
            a.pointer(pointer),
            b.pointer(pointer)
        );
    }
    let ceph_args = |d: &Value| -> BTreeSet<String> {
        args(d)
            .into_iter()
            .filter(|a| {
                a.starts_with("--ceph-conf")
                    || a.starts_with("--ceph-keyring")
                    || a.starts_with("--ceph-id")
            })
            .collect()
    };
    ensure!(
        ceph_args(a) == ceph_args(b) && ceph_args(a).len() == 3,
        "Ceph flags differ: chart {:?}, deploy/ {:?}",
        ceph_args(a),
        ceph_args(b)
    );
    for objects in [&chart, &built] {
        let secret_rules: Vec<&Value> = objects
            .iter()
            .filter(|o| o["kind"] == "Role" || o["kind"] == "ClusterRole")
            .flat_map(|o| o["rules"].as_array().into_iter().flatten())
            .filter(|r| {
                r["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|x| x == "secrets" || x == "*")
            })
            .collect();
        ensure!(
            secret_rules.is_empty(),
            "rules on Secrets: {secret_rules:?}"
        );
    }

    // The alerts and the dashboard: deploy/monitoring/ and the chart's monitoring values.
    let chart = helm_template(&[
        "--set",
        "monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true",
    ])?;
    let built = kustomize(&["deploy/monitoring"])?;
    let (a, b) = (
        only(&chart, "PrometheusRule")?,
        only(&built, "PrometheusRule")?,
    );
    ensure!(
        a["spec"] == b["spec"] && a["spec"]["groups"][0]["rules"].is_array(),
        "the chart's PrometheusRule differs from deploy/monitoring/'s:\nchart:   {}\ndeploy/: {}",
        a["spec"],
        b["spec"]
    );
    let dashboard = "ceph-osd-operator-dashboard";
    let (a, b) = (
        find(&chart, "ConfigMap", dashboard)?,
        find(&built, "ConfigMap", dashboard)?,
    );
    let json = |c: &Value| -> anyhow::Result<Value> {
        let text = c["data"]["ceph-osd-operator.json"]
            .as_str()
            .context("no dashboard")?;
        Ok(serde_json::from_str(text)?)
    };
    ensure!(
        json(a)? == json(b)? && a["metadata"]["labels"]["grafana_dashboard"] == "1",
        "the chart's dashboard ConfigMap differs from deploy/monitoring/'s"
    );
    ensure!(
        b["metadata"]["labels"]["grafana_dashboard"] == "1",
        "deploy/monitoring/'s dashboard lacks the sidecar's label"
    );
    Ok(())
}

/// Every value values.yaml documents, changed; each change is seen in the rendered objects.
#[test]
#[expect(clippy::too_many_lines, reason = "a table of every documented value")]
fn helm_renders_every_documented_value_and_refuses_contradictions() -> anyhow::Result<()> {
    let helm = helm_bin()?;
    let defaults: Value = serde_saphyr::from_str(&std::fs::read_to_string(repo(&format!(
        "{CHART}/values.yaml"
    )))?)
    .map_err(|e| anyhow::anyhow!("values.yaml: {e}"))?;
    // Two sets of changes: rbac.create=false and service.enabled=false hide what the other
    // set's changes of the RBAC and the Service show.
    let changed = json!({
        "image": {"repository": "registry.example.com/op", "tag": "9.9.9", "pullPolicy": "Always"},
        "imagePullSecrets": [{"name": "pull-secret"}],
        "replicas": 3,
        "leaderElect": true,
        "leaseName": "my-lease",
        "watchNamespace": "ceph",
        "metricsAuth": false,
        "logFormat": "human",
        "resyncSeconds": 77,
        "httpPort": 9090,
        "ceph": {"secretName": "my-ceph", "id": "op2", "timeoutSeconds": 9, "maxNooutSeconds": 99, "lockNamespace": "ceph-locks"},
        "extraArgs": ["--ceph-pg-stats-lag-seconds=3"],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "nodeSelector": {"role": "infra"},
        "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "role", "operator": "In", "values": ["infra"]}]}]}}},
        "priorityClassName": "system-cluster-critical",
        "podAnnotations": {"example.com/note": "yes"},
        "podLabels": {"team": "storage"},
        "serviceAccount": {"create": true, "name": "custom-sa", "annotations": {"example.com/sa": "yes"}},
        "rbac": {"create": true, "scope": "namespaced"},
        "service": {"enabled": true, "port": 9999},
        "priorityClass": {"create": true, "name": "osd-prio", "value": 123},
        "monitoring": {
            "prometheusRule": {"enabled": true, "labels": {"release": "prom"}},
            "dashboard": {"enabled": true, "namespace": "grafana", "labels": {"grafana_dashboard": "yes", "dashboards": "ceph"}},
        },
    });
    let hiding = json!({"rbac": {"create": false}, "service": {"enabled": false}, "leaderElect": false, "replicas": 1, "serviceAccount": {"create": false}});
    let (mut documented, mut covered) = (BTreeMap::new(), BTreeMap::new());
    leaves("", &defaults, &mut documented);
    leaves("", &changed, &mut covered);
    leaves("", &hiding, &mut covered);
    // A documented leaf is changed when set to another value, or (an empty map by default)
    // when anything is set under it.
    let changes = |path: &str, default: &Value| {
        covered.get(path).is_some_and(|set| set != default)
            || covered.keys().any(|c| c.starts_with(&format!("{path}.")))
    };
    let unchanged: Vec<&String> = documented
        .iter()
        .filter(|(path, default)| !changes(path, default))
        .map(|(path, _)| path)
        .collect();
    ensure!(
        unchanged.is_empty(),
        "documented values this test does not change: {unchanged:?}"
    );

    let values = scratch().join("values-changed.json");
    std::fs::create_dir_all(scratch())?;
    std::fs::write(&values, changed.to_string())?;
    let out = helm_template(&["--values", values.to_str().context("path")?])?;
    let d = only(&out, "Deployment")?;
    let c = container(d);
    let pod = &d["spec"]["template"];
    let a = args(d);
    let checks: Vec<(&str, bool)> = vec![
        ("image", c["image"] == "registry.example.com/op:9.9.9"),
        ("image.pullPolicy", c["imagePullPolicy"] == "Always"),
        (
            "imagePullSecrets",
            pod["spec"]["imagePullSecrets"] == json!([{"name": "pull-secret"}]),
        ),
        ("replicas", d["spec"]["replicas"] == 3),
        (
            "leaseName",
            a.contains("--lease-name=my-lease") && a.contains("--leader-elect"),
        ),
        (
            "watchNamespace",
            c["env"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| e["name"] == "WATCH_NAMESPACE" && e["value"] == "ceph"),
        ),
        ("metricsAuth", a.contains("--metrics-auth=false")),
        ("logFormat", a.contains("--log-format=human")),
        ("resyncSeconds", a.contains("--resync-seconds=77")),
        (
            "httpPort",
            a.contains("--http-address=0.0.0.0:9090") && c["ports"][0]["containerPort"] == 9090,
        ),
        (
            "ceph.secretName",
            pod["spec"]["volumes"][0]["secret"]["secretName"] == "my-ceph",
        ),
        ("ceph.id", a.contains("--ceph-id=op2")),
        ("ceph.timeoutSeconds", a.contains("--ceph-timeout=9")),
        (
            "ceph.maxNooutSeconds",
            a.contains("--ceph-max-noout-seconds=99"),
        ),
        (
            "ceph.lockNamespace",
            a.contains("--ceph-lock-namespace=ceph-locks")
                && find(&out, "Role", "ceph-osd-operator-ceph-lock")
                    .is_ok_and(|r| r["metadata"]["namespace"] == "ceph-locks")
                && find(&out, "RoleBinding", "ceph-osd-operator-ceph-lock")
                    .is_ok_and(|r| r["metadata"]["namespace"] == "ceph-locks"),
        ),
        ("extraArgs", a.contains("--ceph-pg-stats-lag-seconds=3")),
        ("resources", c["resources"] == changed["resources"]),
        (
            "nodeSelector",
            pod["spec"]["nodeSelector"] == changed["nodeSelector"],
        ),
        (
            "tolerations",
            pod["spec"]["tolerations"] == changed["tolerations"],
        ),
        ("affinity", pod["spec"]["affinity"] == changed["affinity"]),
        (
            "priorityClassName",
            pod["spec"]["priorityClassName"] == "system-cluster-critical",
        ),
        (
            "podAnnotations",
            pod["metadata"]["annotations"]["example.com/note"] == "yes",
        ),
        ("podLabels", pod["metadata"]["labels"]["team"] == "storage"),
        (
            "serviceAccount.name",
            pod["spec"]["serviceAccountName"] == "custom-sa"
                && find(&out, "ServiceAccount", "custom-sa").is_ok(),
        ),
        (
            "serviceAccount.annotations",
            find(&out, "ServiceAccount", "custom-sa")
                .is_ok_and(|sa| sa["metadata"]["annotations"]["example.com/sa"] == "yes"),
        ),
        (
            "rbac.scope",
            find(&out, "Role", "ceph-osd-operator-watch")
                .is_ok_and(|r| r["metadata"]["namespace"] == "ceph")
                && find(&out, "ClusterRole", "ceph-osd-operator").is_err(),
        ),
        (
            "service.port",
            only(&out, "Service").is_ok_and(|s| s["spec"]["ports"][0]["port"] == 9999),
        ),
        (
            "priorityClass",
            find(&out, "PriorityClass", "osd-prio").is_ok_and(|p| p["value"] == 123),
        ),
        (
            "monitoring.prometheusRule",
            only(&out, "PrometheusRule")
                .is_ok_and(|r| r["metadata"]["labels"]["release"] == "prom"),
        ),
        (
            "monitoring.dashboard",
            find(&out, "ConfigMap", "ceph-osd-operator-dashboard").is_ok_and(|c| {
                c["metadata"]["namespace"] == "grafana"
                    && c["metadata"]["labels"]["dashboards"] == "ceph"
                    && c["metadata"]["labels"]["grafana_dashboard"] == "yes"
            }),
        ),
    ];
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(what, _)| *what)
        .collect();
    ensure!(
        failed.is_empty(),
        "values not rendered as set: {failed:?}\n{d:#}"
    );

    let hidden = scratch().join("values-hiding.json");
    std::fs::write(&hidden, hiding.to_string())?;
    let out = helm_template(&["--values", hidden.to_str().context("path")?])?;
    let left: Vec<String> = out
        .iter()
        .filter(|o| {
            matches!(
                o["kind"].as_str(),
                Some(
                    "Role"
                        | "ClusterRole"
                        | "RoleBinding"
                        | "ClusterRoleBinding"
                        | "Service"
                        | "ServiceAccount"
                )
            )
        })
        .map(|o| format!("{} {}", o["kind"], o["metadata"]["name"]))
        .collect();
    ensure!(
        left.is_empty(),
        "rbac.create/service.enabled/serviceAccount.create false still render {left:?}"
    );
    let d = only(&out, "Deployment")?;
    ensure!(
        args(d).contains("--leader-elect=false")
            && d["spec"]["template"]["spec"]["serviceAccountName"] == "default"
    );

    for (set, says) in [
        (
            "replicas=2,leaderElect=false",
            "replicas > 1 needs leaderElect: true",
        ),
        (
            "rbac.scope=everywhere",
            "at '/rbac/scope': value must be one of 'cluster', 'namespaced'",
        ),
        (
            "rbac.scope=namespaced",
            "rbac.scope: namespaced needs watchNamespace",
        ),
    ] {
        let version = kubernetes_version()?;
        let err = run_failing(
            &helm,
            &[
                "template",
                "x",
                CHART,
                "--kube-version",
                &version,
                "--set",
                set,
            ],
        )?;
        ensure!(err.contains(says), "--set {set}: {err}");
    }
    Ok(())
}

/// values.schema.json: `helm install --set` with a wrong type, a value outside its choices or
/// range, or a key the chart does not have fails before anything is installed, naming the
/// value; the defaults and every documented value pass (the tests above render them).
#[test]
fn helm_install_refuses_a_wrong_type_or_an_unknown_value_naming_it() -> anyhow::Result<()> {
    let helm = helm_bin()?;
    let release = format!("mlt-schema-{}", random_suffix());
    for (set, says) in [
        ("replicas=two", "at '/replicas': got string, want integer"),
        (
            "leaderElect=maybe",
            "at '/leaderElect': got string, want boolean",
        ),
        ("httpPort=70000", "at '/httpPort': maximum"),
        (
            "logFormat=xml",
            "at '/logFormat': value must be one of 'human', 'json'",
        ),
        (
            "ceph.timeoutSeconds=soon",
            "at '/ceph/timeoutSeconds': got string, want integer",
        ),
        (
            "replica=3",
            "at '': additional properties 'replica' not allowed",
        ),
        (
            "image.tags=1.0",
            "at '/image': additional properties 'tags' not allowed",
        ),
        (
            "monitoring.prometheusRule.enable=true",
            "at '/monitoring/prometheusRule': additional properties 'enable' not allowed",
        ),
        ("extraArgs=--x", "at '/extraArgs': got string, want array"),
    ] {
        let err = run_failing(
            &helm,
            &[
                "install",
                &release,
                CHART,
                "--namespace",
                OPERATOR_NAMESPACE,
                "--set",
                set,
            ],
        )?;
        ensure!(
            err.contains("values don't meet the specifications of the schema")
                && err.contains(says),
            "helm install --set {set}: expected {says:?}, got: {err}"
        );
    }
    let releases = run(
        &helm,
        &[
            "list",
            "--all",
            "--namespace",
            OPERATOR_NAMESPACE,
            "--short",
        ],
    )?;
    ensure!(
        !releases.lines().any(|r| r == release),
        "a refused install left release {release}: {releases}"
    );
    Ok(())
}

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
