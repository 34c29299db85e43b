//! The chart rendered and refused offline: lint, the variants kustomize builds, every
//! documented value, wrong types and unknown values named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{ensure, Context};
use molecule_like_tests::kubernetes::manifests::random_suffix;
use molecule_like_tests::paths::workspace_root;
use serde_json::{json, Value};

use crate::common::{
    args, container, helm_bin, kustomize, objects, only, output, run, scratch, CHART,
    OPERATOR_NAMESPACE,
};

fn repo(relative: &str) -> PathBuf {
    workspace_root().join(relative)
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

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> anyhow::Result<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .with_context(|| format!("no {kind} {name} among {}", kinds_and_names(objects)))
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
