//! Counts the API requests the operator's client sends, by verb and resource, for the
//! `api_requests` metric: a settled operator should send none.

use crate::runtime::serve::metrics::Metrics;
use hyper::Request;
use kube::client::{Body, ClientBuilder};
use kube::{Client, Config};
use std::sync::Arc;
use tower::util::MapRequestLayer;

/// A client for `config` whose every request is counted in `metrics`.
pub fn counted_client(config: Config, metrics: Arc<Metrics>) -> Result<Client, kube::Error> {
    let count = MapRequestLayer::new(move |request: Request<Body>| {
        let watch = request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        let verb = if watch {
            "watch".to_owned()
        } else {
            request.method().as_str().to_ascii_lowercase()
        };
        metrics.api_request(verb, resource_of(request.uri().path()));
        request
    });
    Ok(ClientBuilder::try_from(config)?.with_layer(&count).build())
}

/// The resource an API path names: `pods` for `/api/v1/namespaces/ceph/pods/osd-a`.
fn resource_of(path: &str) -> String {
    let mut segments = path.trim_matches('/').split('/');
    let rest: Vec<&str> = match segments.next() {
        Some("api") => segments.skip(1).collect(),
        Some("apis") => segments.skip(2).collect(),
        _ => return "other".to_owned(),
    };
    match rest.as_slice() {
        ["namespaces", _, resource, ..] | [resource, ..] => (*resource).to_owned(),
        [] => "discovery".to_owned(),
    }
}

#[cfg(test)]
mod tests {
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
}
