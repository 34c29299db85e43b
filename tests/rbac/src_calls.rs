//! A coarse guard against the source moving ahead of the RBAC: the API calls found in src/
//! must be granted by deploy/ where they are made.

use super::*;

/// Every Rust source under `dir`, folders included, one after the other.
fn sources(dir: &Path) -> String {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("a source folder")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    entries
        .iter()
        .map(|path| {
            if path.is_dir() {
                sources(path)
            } else {
                std::fs::read_to_string(path).unwrap_or_default()
            }
        })
        .collect()
}

/// A coarse guard against the source moving ahead of the RBAC: API calls found in src/ must be
/// granted where they are made.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a table of every API call the operator makes"
)]
fn deploy_covers_the_api_calls_in_src() {
    let install = deploy();
    let granted = granted(&install);
    let src = |file: &str| read(&format!("src/{file}"));
    let executor = src("runtime/act/executor.rs");
    let lease = src("runtime/serve/lease.rs");
    let auth = src("runtime/serve/metrics_auth.rs");
    let all = sources(&Path::new(ROOT).join("src"));
    let own = Some("ceph-osd-operator");
    // (namespace, apiGroup, resource, verb, object name, whether src makes the call)
    type Use<'a> = (
        Option<&'a str>,
        &'a str,
        &'a str,
        &'a str,
        Option<&'a str>,
        bool,
    );
    let needed: Vec<Use> = vec![
        (
            None,
            "",
            "pods",
            "create",
            None,
            executor.contains("pods.create("),
        ),
        (
            None,
            "",
            "pods",
            "delete",
            None,
            executor.contains("pods.delete("),
        ),
        (
            None,
            "",
            "pods",
            "patch",
            None,
            executor.contains("pods.patch("),
        ),
        (
            None,
            "",
            "pods",
            "update",
            None,
            executor.contains("pods.replace("),
        ),
        (
            own,
            "coordination.k8s.io",
            "leases",
            "get",
            Some(LEASE),
            lease.contains(".get"),
        ),
        (
            own,
            "coordination.k8s.io",
            "leases",
            "create",
            None,
            lease.contains(".create("),
        ),
        (
            own,
            "coordination.k8s.io",
            "leases",
            "update",
            Some(LEASE),
            lease.contains(".replace("),
        ),
        (
            own,
            "coordination.k8s.io",
            "leases",
            "patch",
            Some(LEASE),
            lease.contains(".patch("),
        ),
        (
            own,
            "coordination.k8s.io",
            "leases",
            "delete",
            Some(LEASE),
            lease.contains(".delete("),
        ),
        (
            None,
            "authentication.k8s.io",
            "tokenreviews",
            "create",
            None,
            auth.contains("Api::<TokenReview>"),
        ),
        (
            None,
            "authorization.k8s.io",
            "subjectaccessreviews",
            "create",
            None,
            auth.contains("Api::<SubjectAccessReview>"),
        ),
        (
            None,
            "ceph.elemental.net",
            "cephosds/status",
            "patch",
            None,
            all.contains("patch_status("),
        ),
        (
            None,
            "ceph.elemental.net",
            "cephosds/status",
            "update",
            None,
            all.contains("replace_status("),
        ),
        (
            None,
            "ceph.elemental.net",
            "cephosds",
            "patch",
            None,
            all.contains("crs.patch("),
        ),
        (
            None,
            "ceph.elemental.net",
            "cephosds",
            "list",
            None,
            all.contains("Api<CephOsd>"),
        ),
        (
            None,
            "",
            "namespaces",
            "get",
            None,
            all.contains("Api<Namespace>"),
        ),
        (
            None,
            "events.k8s.io",
            "events",
            "create",
            None,
            all.contains("Recorder"),
        ),
        (
            None,
            "apps",
            "replicasets",
            "delete",
            None,
            executor.contains("replica_sets.delete("),
        ),
        (
            None,
            "apps",
            "replicasets",
            "list",
            None,
            all.contains("Api<ReplicaSet>"),
        ),
        (
            None,
            "apps",
            "replicasets",
            "watch",
            None,
            all.contains("Api<ReplicaSet>"),
        ),
        (None, "", "pods", "watch", None, all.contains(".watches")),
        (None, "", "pods", "list", None, all.contains(".watches")),
    ];
    for (namespace, group, resource, verb, name, used) in needed {
        if used {
            let need = Grant {
                namespace: namespace.map(str::to_owned),
                group: group.into(),
                resource: resource.into(),
                verb: verb.into(),
                name: name.map(str::to_owned),
            };
            assert!(
                granted.iter().any(|g| g.covers(&need)),
                "src uses {need:?}; not granted"
            );
        }
    }
}
