use super::resource_of;

#[test]
fn the_resource_is_read_from_the_path() {
    for (path, resource) in [
        ("/api/v1/namespaces/ceph/pods", "pods"),
        ("/api/v1/namespaces/ceph/pods/osd-a", "pods"),
        (
            "/apis/ceph.elemental.net/v1alpha1/namespaces/ceph/cephosds/osds/status",
            "cephosds",
        ),
        ("/apis/events.k8s.io/v1/namespaces/ceph/events", "events"),
        (
            "/apis/coordination.k8s.io/v1/namespaces/ceph/leases/op",
            "leases",
        ),
        ("/api/v1/pods", "pods"),
        ("/api/v1/namespaces/ceph", "namespaces"),
        ("/api/v1", "discovery"),
        ("/version", "other"),
    ] {
        assert_eq!(resource_of(path), resource, "{path}");
    }
}
