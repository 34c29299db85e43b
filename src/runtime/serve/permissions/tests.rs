use super::*;
use std::time::Duration;

fn lease() -> LeaseSettings {
    LeaseSettings {
        namespace: "op".into(),
        name: "ceph-osd-operator".into(),
        identity: "me".into(),
        duration: Duration::from_secs(15),
        retry: Duration::from_secs(3),
    }
}

fn shown(needed: &[Permission]) -> Vec<String> {
    needed.iter().map(ToString::to_string).collect()
}

#[test]
fn a_namespaced_operator_needs_its_namespace_but_reads_cephosds_everywhere() {
    let all = shown(&needed(Some("ceph"), Some(&lease()), Some("locks"), true));
    for expected in [
        "watch pods in namespace ceph",
        "delete replicasets.apps in namespace ceph",
        "list cephosds.ceph.elemental.net cluster-wide",
        "patch cephosds/status.ceph.elemental.net in namespace ceph",
        "patch cephosds.ceph.elemental.net in namespace ceph",
        "get namespaces ceph in namespace ceph",
        "create events.events.k8s.io in namespace ceph",
        "update leases.coordination.k8s.io ceph-osd-operator in namespace op",
        "create leases.coordination.k8s.io in namespace op",
        "update leases.coordination.k8s.io in namespace locks",
        "get leases.coordination.k8s.io in namespace locks",
        "get namespaces kube-system cluster-wide",
        "create tokenreviews.authentication.k8s.io cluster-wide",
        "create subjectaccessreviews.authorization.k8s.io cluster-wide",
    ] {
        assert!(
            all.iter().any(|p| p == expected),
            "{expected} not in {all:#?}"
        );
    }
    assert!(
        !all.iter().any(|p| p.contains("pods cluster-wide")),
        "{all:#?}"
    );
}

#[test]
fn without_lease_or_metrics_auth_none_of_their_permissions_are_needed() {
    let all = shown(&needed(None, None, None, false));
    assert!(
        all.iter().any(|p| p == "list pods cluster-wide"),
        "{all:#?}"
    );
    assert!(
        !all.iter()
            .any(|p| p.contains("leases") || p.contains("reviews") || p.contains("kube-system")),
        "{all:#?}"
    );
}
