//! The RBAC of deploy/ (kustomize, and its component deploy/namespaced/) and of the Helm chart
//! (rbac.scope cluster and namespaced), offline: the permissions each gives the operator's
//! ServiceAccount, resolved through its bindings, must be exactly what the operator calls,
//! in the scope it calls it (every namespace or the watched one, cluster-wide, its own
//! namespace), and nothing more. The installs are read as kustomize and Helm build them
//! (`installs`); the calls found in src/ are checked against deploy/ (`src_calls`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use installs::{deploy, deploy_namespaced, helm, helm_install, kustomize_resources};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TEMPLATES: &str = "deploy/helm/ceph-osd-operator/templates";
const LEASE: &str = "ceph-osd-operator";

/// Where the operator makes a call.
#[derive(Clone, Copy, Debug)]
enum Scope {
    /// Where its CephOSDs are: every namespace, or the one it watches.
    Watched,
    /// Cluster-wide, whatever it watches.
    Cluster,
    /// Its own namespace (the Lease).
    Own,
}

/// (where, apiGroup, resource, verbs, the one object it names).
type Calls = &'static [(
    Scope,
    &'static str,
    &'static str,
    &'static [&'static str],
    Option<&'static str>,
)];

/// Every call the operator makes. Keep src/runtime/serve/permissions.rs, deploy/, the chart and deploy/README.md in step.
const REQUIRED: Calls = &[
    // Every pod watched; OSD pods created, patched and deleted in rollouts.
    (
        Scope::Watched,
        "",
        "pods",
        &["create", "delete", "get", "list", "patch", "watch"],
        None,
    ),
    // The Ansible operator's ReplicaSets: watched, listed per CephOSD, deleted when migrated.
    (
        Scope::Watched,
        "apps",
        "replicasets",
        &["delete", "get", "list", "watch"],
        None,
    ),
    // Each CephOSD's PodDisruptionBudget: created, patched, deleted; every budget watched.
    (
        Scope::Watched,
        "policy",
        "poddisruptionbudgets",
        &["create", "delete", "get", "list", "patch", "watch"],
        None,
    ),
    // Cordoned nodes (cluster-scoped objects): read only.
    (Scope::Cluster, "", "nodes", &["list", "watch"], None),
    // A disk listed by two CephOSDs in different namespaces belongs to the older one.
    (
        Scope::Cluster,
        "ceph.elemental.net",
        "cephosds",
        &["get", "list", "watch"],
        None,
    ),
    (
        Scope::Watched,
        "ceph.elemental.net",
        "cephosds/status",
        &["get", "patch", "update"],
        None,
    ),
    // The operator's finalizer on each CephOSD it reconciles (a metadata patch), and whether
    // a deleted CephOSD's namespace is being deleted too.
    (
        Scope::Watched,
        "ceph.elemental.net",
        "cephosds",
        &["patch"],
        None,
    ),
    (Scope::Watched, "", "namespaces", &["get"], None),
    // kube-runtime's Recorder (events.k8s.io/v1) creates events and patches series; core v1
    // for older clients.
    (
        Scope::Watched,
        "events.k8s.io",
        "events",
        &["create", "patch"],
        None,
    ),
    (Scope::Watched, "", "events", &["create", "patch"], None),
    // Leader election: get_opt and replace of its Lease; create, which names no object.
    (
        Scope::Own,
        "coordination.k8s.io",
        "leases",
        &["get", "update"],
        Some(LEASE),
    ),
    (
        Scope::Own,
        "coordination.k8s.io",
        "leases",
        &["create"],
        None,
    ),
    // The /metrics check.
    (
        Scope::Cluster,
        "authentication.k8s.io",
        "tokenreviews",
        &["create"],
        None,
    ),
    (
        Scope::Cluster,
        "authorization.k8s.io",
        "subjectaccessreviews",
        &["create"],
        None,
    ),
];

/// Granted on top of REQUIRED, and why: pods carry `blockOwnerDeletion: true`, which the
/// OwnerReferencesPermissionEnforcement admission plugin only allows to a creator that may
/// update the owner's finalizers.
const ALSO_ALLOWED: Calls = &[(
    Scope::Watched,
    "ceph.elemental.net",
    "cephosds/finalizers",
    &["update"],
    None,
)];

/// One permission: `verb` on `group`/`resource`, in `namespace` (None: every namespace),
/// limited to the object `name` (None: any).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    namespace: Option<String>,
    group: String,
    resource: String,
    verb: String,
    name: Option<String>,
}

impl Grant {
    /// Whether this grant allows the call `need` describes.
    fn covers(&self, need: &Grant) -> bool {
        self.group == need.group
            && self.resource == need.resource
            && self.verb == need.verb
            && (self.namespace.is_none() || self.namespace == need.namespace)
            && (self.name.is_none() || self.name == need.name)
    }
}

/// An install: its objects, the operator's ServiceAccount, and where it acts.
struct Install {
    what: String,
    docs: Vec<Value>,
    /// (namespace, name) of the operator's ServiceAccount.
    account: (String, String),
    /// The namespace it watches; None: every namespace.
    watched: Option<String>,
    /// Its own namespace (the Lease's).
    own: String,
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(relative))
        .map_err(|e| format!("{relative}: {e}"))
        .expect("readable file")
}

fn parse(name: &str, text: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| format!("{name}: invalid YAML: {e}"))
        .expect("valid YAML");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn docs(relative: &str) -> Vec<Value> {
    parse(relative, &read(relative))
}

fn strings(value: &Value, what: &str) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not a list: {value}"))
        .iter()
        .map(|v| v.as_str().expect("string").to_owned())
        .collect()
}

fn concrete(install: &Install, table: Calls) -> BTreeSet<Grant> {
    let mut out = BTreeSet::new();
    for (scope, group, resource, verbs, name) in table {
        let namespace = match scope {
            Scope::Watched => install.watched.clone(),
            Scope::Cluster => None,
            Scope::Own => Some(install.own.clone()),
        };
        for verb in *verbs {
            out.insert(Grant {
                namespace: namespace.clone(),
                group: (*group).to_owned(),
                resource: (*resource).to_owned(),
                verb: (*verb).to_owned(),
                name: name.map(str::to_owned),
            });
        }
    }
    out
}

fn find<'a>(
    docs: &'a [Value],
    kind: &str,
    name: &str,
    namespace: Option<&str>,
) -> Option<&'a Value> {
    docs.iter().find(|d| {
        d["kind"] == kind
            && d["metadata"]["name"] == name
            && namespace.is_none_or(|ns| d["metadata"]["namespace"] == ns)
    })
}

/// Every permission the install's bindings give its ServiceAccount.
fn granted(install: &Install) -> BTreeSet<Grant> {
    let mut out = BTreeSet::new();
    let (sa_ns, sa_name) = &install.account;
    for binding in &install.docs {
        let kind = binding["kind"].as_str().unwrap_or_default();
        if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
            continue;
        }
        let binds_us = binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| {
                s["kind"] == "ServiceAccount" && s["name"] == *sa_name && s["namespace"] == *sa_ns
            });
        if !binds_us {
            continue;
        }
        let namespace = binding["metadata"]["namespace"].as_str().map(str::to_owned);
        let role_kind = binding["roleRef"]["kind"].as_str().expect("roleRef kind");
        let role_name = binding["roleRef"]["name"].as_str().expect("roleRef name");
        let role = find(
            &install.docs,
            role_kind,
            role_name,
            namespace.as_deref().filter(|_| role_kind == "Role"),
        )
        .unwrap_or_else(|| {
            panic!(
                "{}: {kind} binds a missing {role_kind} {role_name}",
                install.what
            )
        });
        let scope = if kind == "RoleBinding" {
            namespace.clone()
        } else {
            None
        };
        for rule in role["rules"].as_array().expect("rules") {
            assert!(
                rule.get("nonResourceURLs").is_none(),
                "{}: the operator is granted non-resource URLs: {rule}",
                install.what
            );
            let names: Vec<Option<String>> = match rule.get("resourceNames") {
                Some(names) => strings(names, "resourceNames")
                    .into_iter()
                    .map(Some)
                    .collect(),
                None => vec![None],
            };
            for group in strings(&rule["apiGroups"], "apiGroups") {
                for resource in strings(&rule["resources"], "resources") {
                    for verb in strings(&rule["verbs"], "verbs") {
                        for name in &names {
                            out.insert(Grant {
                                namespace: scope.clone(),
                                group: group.clone(),
                                resource: resource.clone(),
                                verb: verb.clone(),
                                name: name.clone(),
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// Every call is allowed where the operator makes it; nothing else is granted (no wildcard,
/// nothing in a wider scope, no Lease but its own).
fn check(install: &Install) {
    let what = &install.what;
    let granted = granted(install);
    let required = concrete(install, REQUIRED);
    let missing: Vec<_> = required
        .iter()
        .filter(|need| !granted.iter().any(|g| g.covers(need)))
        .collect();
    assert!(missing.is_empty(), "{what}: not granted: {missing:#?}");
    let allowed: BTreeSet<Grant> = required
        .union(&concrete(install, ALSO_ALLOWED))
        .cloned()
        .collect();
    let extra: Vec<_> = granted.difference(&allowed).collect();
    assert!(
        extra.is_empty(),
        "{what}: grants more than the operator needs: {extra:#?}"
    );
}

#[test]
fn deploy_grants_exactly_what_the_operator_uses_in_every_namespace() {
    check(&deploy());
}

#[test]
fn the_namespaced_component_grants_exactly_what_the_operator_uses_in_its_namespace() {
    let install = deploy_namespaced();
    assert_eq!(install.watched.as_deref(), Some("ceph"));
    check(&install);
}

#[test]
fn the_chart_grants_exactly_what_the_operator_uses_in_either_scope() {
    check(&helm_install("cluster", None));
    check(&helm_install("namespaced", Some("ceph")));
}

/// With the Ceph gate: the step lock of the Ceph cluster (a Lease `ceph-osd-step-<fsid>`, its
/// name unknown at install) read, taken, renewed and released in the lock namespace (the
/// operator's by default), and the kube-system Namespace read (the Kubernetes cluster's
/// identity in the lock's place recorded in Ceph), nothing else.
#[test]
fn the_ceph_gate_grants_the_step_lock_in_the_lock_namespace_only() {
    let expected = |namespace: &str| -> BTreeSet<Grant> {
        let mut grants: BTreeSet<Grant> = ["create", "get", "update"]
            .into_iter()
            .map(|verb| Grant {
                namespace: Some(namespace.to_owned()),
                group: "coordination.k8s.io".into(),
                resource: "leases".into(),
                verb: verb.into(),
                name: None,
            })
            .collect();
        grants.insert(Grant {
            namespace: None,
            group: String::new(),
            resource: "namespaces".into(),
            verb: "get".into(),
            name: Some("kube-system".into()),
        });
        grants
    };
    let component = Install {
        what: "deploy/ceph-gate/".into(),
        docs: kustomize_resources("deploy/ceph-gate"),
        account: ("ceph-osd-operator".into(), "ceph-osd-operator".into()),
        watched: None,
        own: "ceph-osd-operator".into(),
    };
    assert_eq!(granted(&component), expected("ceph-osd-operator"));
    let chart = Install {
        what: "the chart's ceph-lock-rbac.yaml".into(),
        docs: helm(
            "ceph-lock-rbac.yaml",
            "{{- if and .Values.rbac.create .Values.ceph.secretName }}",
        ),
        account: ("operators".into(), "ceph-osd-operator".into()),
        watched: None,
        own: "operators".into(),
    };
    assert_eq!(granted(&chart), expected("operators"));
}

/// The check itself: a grant too wide, too narrow or missing is found.
#[test]
fn the_check_finds_a_missing_a_wider_and_an_unnamed_grant() {
    let fails = |install: Install| std::panic::catch_unwind(|| check(&install)).is_err();
    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut install = deploy_namespaced();
        for d in &mut install.docs {
            edit(d);
        }
        install
    };
    // The watched namespace's rules bound cluster-wide.
    assert!(fails(edited(&|d| {
        if d["kind"] == "RoleBinding" && d["metadata"]["name"] == "ceph-osd-operator-watch" {
            d["kind"] = "ClusterRoleBinding".into();
            d["roleRef"]["kind"] = "ClusterRole".into();
        }
        if d["kind"] == "Role" && d["metadata"]["name"] == "ceph-osd-operator-watch" {
            d["kind"] = "ClusterRole".into();
        }
    })));
    // Any Lease, not only its own.
    assert!(fails(edited(&|d| {
        if d["kind"] == "Role" && d["metadata"]["name"] == "ceph-osd-operator-lease" {
            d["rules"][0]
                .as_object_mut()
                .expect("rule")
                .remove("resourceNames");
        }
    })));
    // Another Lease than its own.
    assert!(fails(edited(&|d| {
        if d["kind"] == "Role" && d["metadata"]["name"] == "ceph-osd-operator-lease" {
            d["rules"][0]["resourceNames"] = serde_json::json!(["other"]);
        }
    })));
    // CephOSDs read only in the watched namespace.
    assert!(fails(edited(&|d| {
        if d["kind"] == "ClusterRoleBinding"
            && d["metadata"]["name"] == "ceph-osd-operator-cephosd-reader"
        {
            d["metadata"]["name"] = "unbound".into();
            d["subjects"] = serde_json::json!([]);
        }
    })));
    assert!(!fails(deploy_namespaced()));
}

#[test]
fn the_metrics_reader_role_allows_get_on_metrics_and_is_not_the_operators() {
    let plain = kustomize_resources("deploy");
    let helm = helm(
        "metrics-reader-clusterrole.yaml",
        "{{- if .Values.rbac.create }}",
    );
    for (what, docs) in [("deploy/", &plain), ("the chart", &helm)] {
        let role = find(
            docs,
            "ClusterRole",
            "ceph-osd-operator-metrics-reader",
            None,
        )
        .unwrap_or_else(|| panic!("{what}: no ClusterRole ceph-osd-operator-metrics-reader"));
        assert_eq!(
            role["rules"],
            serde_json::json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
            "{what}"
        );
    }
    assert!(
        !plain
            .iter()
            .any(|d| d["roleRef"]["name"] == "ceph-osd-operator-metrics-reader"),
        "deploy/ binds the metrics reader role: it is for the scraper to bind"
    );
}

mod installs;
mod src_calls;
