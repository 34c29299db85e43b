//! The installs as they would be applied: deploy/ (and its component deploy/namespaced/) as
//! kustomize builds it, the chart's templates as Helm renders them in either scope.

use super::*;

/// The objects of a kustomization's `resources` (files only).
pub(super) fn kustomize_resources(dir: &str) -> Vec<Value> {
    let k = parse(dir, &read(&format!("{dir}/kustomization.yaml"))).remove(0);
    strings(&k["resources"], "resources")
        .iter()
        .flat_map(|r| docs(&format!("{dir}/{r}")))
        .collect()
}

pub(super) fn deploy() -> Install {
    Install {
        what: "deploy/".into(),
        docs: kustomize_resources("deploy"),
        account: ("ceph-osd-operator".into(), "ceph-osd-operator".into()),
        watched: None,
        own: "ceph-osd-operator".into(),
    }
}

/// deploy/ with the component deploy/namespaced/, as kustomize builds it: the objects its
/// patches delete go, its resources come, in the namespace its Deployment patch watches.
pub(super) fn deploy_namespaced() -> Install {
    let dir = "deploy/namespaced";
    let component = parse(dir, &read(&format!("{dir}/kustomization.yaml"))).remove(0);
    assert_eq!(component["kind"], "Component");
    let mut deleted = Vec::new();
    let mut watched = None;
    for patch in component["patches"].as_array().expect("patches") {
        let body = parse("patch", patch["patch"].as_str().expect("inline patch"));
        match body.first() {
            Some(Value::Object(o)) if o.get("$patch").is_some_and(|p| p == "delete") => {
                deleted.push((o["kind"].clone(), o["metadata"]["name"].clone()));
            }
            Some(Value::Array(ops)) => {
                for op in ops {
                    if op["value"]["name"] == "WATCH_NAMESPACE" {
                        watched = op["value"]["value"].as_str().map(str::to_owned);
                    }
                }
            }
            other => panic!("{dir}: unexpected patch {other:?}"),
        }
    }
    let watched = watched.expect("the component sets WATCH_NAMESPACE");
    // Its Role and RoleBinding follow WATCH_NAMESPACE (replacements), and are written so.
    let targets: Vec<(Value, Value)> = component["replacements"][0]["targets"]
        .as_array()
        .expect("replacements")
        .iter()
        .map(|t| (t["select"]["kind"].clone(), t["select"]["name"].clone()))
        .collect();
    let own = kustomize_resources(dir);
    for d in &own {
        if d["metadata"]["namespace"].is_string() {
            assert_eq!(
                d["metadata"]["namespace"],
                watched.as_str(),
                "{dir}: {}",
                d["metadata"]["name"]
            );
            assert!(
                targets.contains(&(d["kind"].clone(), d["metadata"]["name"].clone())),
                "{dir}: the namespace of {} {} does not follow WATCH_NAMESPACE",
                d["kind"],
                d["metadata"]["name"]
            );
        }
    }
    let mut all: Vec<Value> = deploy()
        .docs
        .into_iter()
        .filter(|d| !deleted.contains(&(d["kind"].clone(), d["metadata"]["name"].clone())))
        .collect();
    assert_eq!(deleted.len(), 2, "{dir}: deletes {deleted:?}");
    all.extend(own);
    Install {
        what: "deploy/ + deploy/namespaced/".into(),
        docs: all,
        account: ("ceph-osd-operator".into(), "ceph-osd-operator".into()),
        watched: Some(watched),
        own: "ceph-osd-operator".into(),
    }
}

/// A chart template as Helm would render it for release `ceph-osd-operator` in namespace
/// `operators`, watchNamespace `ceph`: the names and namespaces filled in, the other
/// template lines (labels, the file's one condition) dropped. The condition must be `when`.
pub(super) fn helm(template: &str, when: &str) -> Vec<Value> {
    let text = read(&format!("{TEMPLATES}/{template}"));
    let first = text.lines().next().unwrap_or_default();
    assert_eq!(first, when, "{template}: its condition");
    let plain: String = text
        .replace(
            "{{ include \"ceph-osd-operator.fullname\" . }}",
            "ceph-osd-operator",
        )
        .replace(
            "{{ include \"ceph-osd-operator.serviceAccountName\" . }}",
            "ceph-osd-operator",
        )
        .replace(
            "{{ include \"ceph-osd-operator.leaseName\" . | quote }}",
            "\"ceph-osd-operator\"",
        )
        .replace(
            "{{ .Values.ceph.lockNamespace | default .Release.Namespace }}",
            "operators",
        )
        .replace("{{ .Release.Namespace }}", "operators")
        .replace("{{ .Values.watchNamespace }}", "ceph")
        .lines()
        .filter(|l| !l.contains("{{"))
        .map(|l| format!("{l}\n"))
        .collect();
    parse(template, &plain)
}

pub(super) fn helm_install(scope: &str, watched: Option<&str>) -> Install {
    let rules = if scope == "cluster" {
        helm(
            "clusterrole.yaml",
            "{{- if and .Values.rbac.create (eq .Values.rbac.scope \"cluster\") }}",
        )
    } else {
        helm(
            "namespaced-rbac.yaml",
            "{{- if and .Values.rbac.create (eq .Values.rbac.scope \"namespaced\") }}",
        )
    };
    let mut docs = rules;
    docs.extend(helm(
        "lease-rbac.yaml",
        "{{- if and .Values.rbac.create .Values.leaderElect }}",
    ));
    docs.extend(helm(
        "metrics-auth-rbac.yaml",
        "{{- if and .Values.rbac.create .Values.metricsAuth }}",
    ));
    Install {
        what: format!("the chart, rbac.scope {scope}"),
        docs,
        account: ("operators".into(), "ceph-osd-operator".into()),
        watched: watched.map(str::to_owned),
        own: "operators".into(),
    }
}
