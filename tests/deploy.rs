//! The deployment manifests in deploy/: plain (kustomize) and the Helm chart.
//!
//! Offline and without kubectl/helm: every YAML file is parsed, the Deployment is checked
//! against the flags `ceph-osd-operator run` accepts and the port it serves probes on, and the
//! Helm chart's CRD copy against the generated CRD. The RBAC is checked in tests/rbac/.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const CHART: &str = "deploy/helm/ceph-osd-operator";
const CRD: &str = "crds/cephosds.ceph.elemental.net.yaml";

fn path(relative: &str) -> PathBuf {
    Path::new(ROOT).join(relative)
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(path(relative))
        .map_err(|e| format!("{relative}: {e}"))
        .expect("readable file")
}

fn docs(relative: &str) -> Vec<Value> {
    parse(relative, &read(relative))
}

fn parse(name: &str, text: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| format!("{name}: invalid YAML: {e}"))
        .expect("valid YAML");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn doc(relative: &str) -> Value {
    let mut all = docs(relative);
    assert_eq!(all.len(), 1, "{relative}: expected one document");
    all.remove(0)
}

/// Every .yaml/.yml under deploy/, minus Helm templates (Go templates, not YAML).
fn yaml_files() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))
            .expect("readable directory");
        for entry in entries {
            let p = entry.expect("dir entry").path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "templates") {
                    continue;
                }
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                out.push(p);
            }
        }
    }
    let mut found = Vec::new();
    walk(&path("deploy"), &mut found);
    let mut files: Vec<String> = found
        .iter()
        .map(|p| {
            p.strip_prefix(ROOT)
                .expect("under the crate")
                .to_string_lossy()
                .trim_start_matches('/')
                .to_string()
        })
        .collect();
    files.sort();
    files
}

fn deployment() -> Value {
    doc("deploy/deployment.yaml")
}

fn container(deployment: &Value) -> Value {
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1);
    containers[0].clone()
}

fn args(container: &Value) -> Vec<String> {
    container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect()
}

/// The port a probe or Service targets: a number, or the name of a container port.
fn resolve_port(container: &Value, port: &Value) -> u64 {
    if let Some(n) = port.as_u64() {
        return n;
    }
    let name = port.as_str().expect("port is a number or a name");
    container["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["containerPort"].as_u64())
        .ok_or_else(|| format!("no container port named {name}"))
        .expect("a named container port")
}

#[test]
fn every_yaml_file_in_deploy_parses() {
    let files = yaml_files();
    for expected in [
        "deploy/kustomization.yaml",
        "deploy/deployment.yaml",
        "deploy/clusterrole.yaml",
        "deploy/lease-rbac.yaml",
        "deploy/metrics-auth-rbac.yaml",
        "deploy/metrics-reader-clusterrole.yaml",
        "deploy/namespaced/kustomization.yaml",
        "deploy/namespaced/watch-rbac.yaml",
        "deploy/namespaced/cephosd-reader-rbac.yaml",
        "deploy/priorityclass.yaml",
        "deploy/helm/ceph-osd-operator/Chart.yaml",
        "deploy/helm/ceph-osd-operator/values.yaml",
        "deploy/helm/ceph-osd-operator/crds/cephosds.ceph.elemental.net.yaml",
    ] {
        assert!(files.iter().any(|f| f == expected), "{expected} not found");
    }
    let not_objects = [
        "kustomization.yaml",
        "Chart.yaml",
        "values.yaml",
        "alerts.test.yaml",
    ];
    for file in &files {
        let all = docs(file);
        assert!(!all.is_empty(), "{file}: empty");
        if not_objects.iter().any(|n| file.ends_with(n)) {
            continue;
        }
        for d in &all {
            assert!(
                d["apiVersion"].is_string() && d["kind"].is_string(),
                "{file}: a document without apiVersion/kind"
            );
            assert!(d["metadata"]["name"].is_string(), "{file}: unnamed object");
        }
    }
}

#[test]
fn kustomization_lists_the_manifests_inside_its_root() {
    let k = doc("deploy/kustomization.yaml");
    assert_eq!(k["kind"], "Kustomization");
    let resources: Vec<&str> = k["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r.as_str().expect("string"))
        .collect();
    for r in &resources {
        // kustomize's default load restrictor refuses files outside deploy/.
        assert!(!r.contains(".."), "{r}: outside the kustomization root");
        assert!(path(&format!("deploy/{r}")).is_file(), "{r}: missing");
    }
    let kinds: BTreeSet<String> = resources
        .iter()
        .flat_map(|r| docs(&format!("deploy/{r}")))
        .map(|d| d["kind"].as_str().expect("kind").to_string())
        .collect();
    for kind in [
        "CustomResourceDefinition",
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
    ] {
        assert!(kinds.contains(kind), "kustomization has no {kind}");
    }
    // The PriorityClass is optional and applied on its own.
    assert!(!kinds.contains("PriorityClass"));
    // `images:` rewrites the Deployment's placeholder image.
    let image = container(&deployment())["image"]
        .as_str()
        .expect("image")
        .to_string();
    let (name, _tag) = image.rsplit_once(':').expect("image with a tag");
    let images = k["images"].as_array().expect("images");
    assert!(
        images.iter().any(|i| i["name"] == name),
        "kustomization images: does not name {name}"
    );
}

#[test]
fn namespaced_objects_are_in_the_operator_namespace() {
    let ns = doc("deploy/namespace.yaml");
    assert_eq!(ns["kind"], "Namespace");
    let name = ns["metadata"]["name"].as_str().expect("name");
    for file in [
        "deploy/serviceaccount.yaml",
        "deploy/deployment.yaml",
        "deploy/service.yaml",
    ] {
        assert_eq!(doc(file)["metadata"]["namespace"], name, "{file}");
    }
}

#[test]
fn cluster_role_binding_binds_the_service_account() {
    let binding = doc("deploy/clusterrolebinding.yaml");
    let sa = doc("deploy/serviceaccount.yaml");
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(
        binding["roleRef"]["name"],
        doc("deploy/clusterrole.yaml")["metadata"]["name"]
    );
    let subject = &binding["subjects"][0];
    assert_eq!(subject["kind"], "ServiceAccount");
    assert_eq!(subject["name"], sa["metadata"]["name"]);
    assert_eq!(subject["namespace"], sa["metadata"]["namespace"]);
    assert_eq!(
        deployment()["spec"]["template"]["spec"]["serviceAccountName"],
        sa["metadata"]["name"]
    );
}

#[test]
fn deployment_runs_two_leader_elected_replicas_with_probes_on_the_served_port() {
    let d = deployment();
    assert_eq!(d["spec"]["replicas"], 2);
    let c = container(&d);
    let args = args(&c);
    assert_eq!(args.first().map(String::as_str), Some("run"));
    assert!(args.iter().any(|a| a == "--leader-elect"), "{args:?}");
    assert!(args.iter().any(|a| a == "--log-format=json"), "{args:?}");
    let address = args
        .iter()
        .find_map(|a| a.strip_prefix("--http-address="))
        .expect("--http-address=");
    let address: std::net::SocketAddr = address.parse().expect("a socket address");
    let port = u64::from(address.port());
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(resolve_port(&c, &get["port"]), port, "{probe} port");
    }
    let service = doc("deploy/service.yaml");
    let target = &service["spec"]["ports"][0]["targetPort"];
    assert_eq!(resolve_port(&c, target), port, "Service targetPort");
    let labels = &d["spec"]["template"]["metadata"]["labels"];
    for (k, v) in service["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(&labels[k], v, "Service selector {k}");
    }

    // Lease identity and namespace from the downward API.
    let env = c["env"].as_array().expect("env");
    for (name, field) in [
        ("POD_NAME", "metadata.name"),
        ("POD_NAMESPACE", "metadata.namespace"),
    ] {
        let var = env
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(var["valueFrom"]["fieldRef"]["fieldPath"], field);
    }

    // Hardening.
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(c["resources"]["requests"]["memory"].is_string());
    assert!(c["resources"]["limits"]["memory"].is_string());
}

/// The Deployment's arguments are ones `ceph-osd-operator run` accepts (clap validates every
/// argument before it reaches the trailing --help, which then exits without connecting).
#[test]
fn deployment_args_are_accepted_by_the_binary() {
    let mut argv = args(&container(&deployment()));
    argv.push("--help".into());
    let out = Command::new(env!("CARGO_BIN_EXE_ceph-osd-operator"))
        .args(&argv)
        .env_remove("WATCH_NAMESPACE")
        .env_remove("POD_NAMESPACE")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{argv:?} rejected: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--leader-elect",
        "--http-address",
        "--log-format",
        "--lease-name",
        "--lease-namespace",
        "--metrics-auth",
    ] {
        assert!(help.contains(flag), "`run --help` has no {flag}");
    }
}

#[test]
fn helm_chart_crd_is_the_generated_crd() {
    let generated = read(CRD);
    let copy = read(&format!("{CHART}/{CRD}"));
    assert!(
        copy == generated,
        "{CHART}/{CRD} differs from {CRD}: run `cp {CRD} {CHART}/crds/` \
         (kustomize and Helm both use that copy)"
    );
}

#[test]
fn helm_chart_ships_the_alerts_and_dashboard_of_deploy_monitoring_unchanged() {
    for file in ["prometheusrule.yaml", "dashboard.json"] {
        let (source, copy) = (
            format!("deploy/monitoring/{file}"),
            format!("{CHART}/files/{file}"),
        );
        assert!(
            read(&copy) == read(&source),
            "{copy} differs from {source}: run `cp {source} {CHART}/files/`"
        );
    }
}

#[test]
fn helm_chart_metadata_values_and_templates() {
    let chart = doc(&format!("{CHART}/Chart.yaml"));
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["name"], "ceph-osd-operator");
    assert_eq!(
        chart["appVersion"],
        env!("CARGO_PKG_VERSION"),
        "Chart.yaml appVersion should follow Cargo.toml's version"
    );
    let values = doc(&format!("{CHART}/values.yaml"));
    for key in [
        "/image/repository",
        "/image/tag",
        "/image/pullPolicy",
        "/replicas",
        "/leaderElect",
        "/watchNamespace",
        "/logFormat",
        "/resources/requests/memory",
        "/resources/limits/memory",
        "/nodeSelector",
        "/tolerations",
        "/httpPort",
        "/metricsAuth",
        "/rbac/scope",
        "/priorityClass/value",
    ] {
        assert!(values.pointer(key).is_some(), "values.yaml has no {key}");
    }
    assert_eq!(values["replicas"], 2);
    assert_eq!(values["leaderElect"], true);
    assert_eq!(values["metricsAuth"], true);
    assert_eq!(values["rbac"]["scope"], "cluster");
    assert_eq!(values["logFormat"], "json");
    assert_eq!(values["priorityClass"]["value"], 1_000_000_000);

    let deployment = read(&format!("{CHART}/templates/deployment.yaml"));
    for needle in [
        "--leader-elect",
        "--leader-elect=false",
        "--metrics-auth=false",
        "--http-address=0.0.0.0:{{ .Values.httpPort }}",
        "--log-format={{ .Values.logFormat }}",
        "containerPort: {{ .Values.httpPort }}",
        "path: /healthz",
        "path: /readyz",
        "port: http",
        "name: POD_NAME",
        "name: POD_NAMESPACE",
        "name: WATCH_NAMESPACE",
        ".Values.nodeSelector",
        ".Values.tolerations",
        ".Values.resources",
        ".Values.image.repository",
        "readOnlyRootFilesystem: true",
        "runAsNonRoot: true",
    ] {
        assert!(
            deployment.contains(needle),
            "chart deployment.yaml lacks {needle}"
        );
    }
    for template in [
        "serviceaccount.yaml",
        "clusterrole.yaml",
        "namespaced-rbac.yaml",
        "lease-rbac.yaml",
        "metrics-auth-rbac.yaml",
        "metrics-reader-clusterrole.yaml",
        "service.yaml",
        "priorityclass.yaml",
        "_helpers.tpl",
    ] {
        assert!(
            path(&format!("{CHART}/templates/{template}")).is_file(),
            "chart has no templates/{template}"
        );
    }
}

#[test]
fn priority_class_is_the_one_the_sample_names() {
    let pc = doc("deploy/priorityclass.yaml");
    assert_eq!(pc["kind"], "PriorityClass");
    assert_eq!(pc["value"], 1_000_000_000);
    assert_eq!(pc["globalDefault"], false);
    let sample = doc("deploy/samples/ceph-osds.yaml");
    assert_eq!(
        sample["spec"]["podTemplate"]["spec"]["priorityClassName"],
        pc["metadata"]["name"]
    );
}

/// The image (not built here: no container engine) as far as it can be checked offline: its
/// entrypoint is the binary the Deployment runs with `run …`, its user is the Deployment's
/// non-root user, and its base carries Debian's `ceph` CLI for the Ceph gate.
#[test]
fn dockerfile_runs_the_binary_as_the_deployments_user_with_the_ceph_cli() {
    let text = read("Dockerfile");
    let final_stage = text.rsplit("\nFROM ").next().expect("a final stage");
    assert!(
        final_stage.starts_with("docker.io/library/debian:"),
        "the final stage is not Debian: {final_stage}"
    );
    let line = |prefix: &str| {
        final_stage
            .lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in the final stage"))
            .trim()
            .to_owned()
    };
    assert!(final_stage.contains("apt-get install") && final_stage.contains("ceph-common"));
    assert!(line("COPY").ends_with(" /usr/local/bin/ceph-osd-operator"));
    assert_eq!(
        line("ENTRYPOINT"),
        r#"ENTRYPOINT ["/usr/local/bin/ceph-osd-operator"]"#
    );
    let user = line("USER");
    let deployment = deployment();
    let security = &deployment["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(
        user,
        format!("USER {}:{}", security["runAsUser"], security["runAsGroup"])
    );
    assert_eq!(security["runAsNonRoot"], true);
    assert_eq!(
        args(&container(&deployment)).first().map(String::as_str),
        Some("run")
    );
    assert!(
        text.contains("molecule-like-tests/image test"),
        "the Dockerfile must say how CI builds and runs it"
    );
}
