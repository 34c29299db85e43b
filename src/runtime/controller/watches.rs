//! What the controller's watches bring to it: the CephOSDs it can read (the others reported
//! on their own), which spec changes concern every CephOSD, the OSD pods and which CephOSDs a
//! pod concerns, the objects carrying an owner label, and the watches' errors logged once.

use crate::crd::osd::OsdKey;
use crate::crd::CephOsd;
use crate::labels;
use crate::pod::pod_record::{bound_host, recorded_data};
use crate::runtime::act::unreadable::{self, Reported};
use crate::runtime::controller::context::in_scope;
use crate::runtime::observe::claims_registry::ClaimsRegistry;
use crate::runtime::observe::owned_objects::is_osd_pod;
use crate::runtime::observe::watched_cephosd::{split_event, Unreadable, WatchedCephOsd};
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use std::collections::HashMap;
use tracing::{debug, warn};

/// The CephOSD watch's events without the objects the operator cannot read, which are
/// reported on their own: never a failed LIST that stops every other CephOSD.
pub(super) fn readable_only(
    events: impl Stream<Item = Result<watcher::Event<WatchedCephOsd>, watcher::Error>> + Send,
    client: Client,
    recorder: Recorder,
    watched: Option<String>,
) -> impl Stream<Item = Result<watcher::Event<CephOsd>, watcher::Error>> + Send {
    let (found, unreadable) = futures::channel::mpsc::unbounded::<Unreadable>();
    tokio::spawn(report_unreadable(unreadable, client, recorder, watched));
    events
        .map_ok(split_event)
        .try_filter_map(move |(event, unreadable)| {
            if let Some(u) = unreadable {
                let _ = found.unbounded_send(u);
            }
            std::future::ready(Ok(event))
        })
}

/// Reports each unreadable CephOSD once per generation and reason; the operator whose scope
/// holds it writes the event and the condition.
async fn report_unreadable(
    mut found: futures::channel::mpsc::UnboundedReceiver<Unreadable>,
    client: Client,
    recorder: Recorder,
    watched: Option<String>,
) {
    let mut reported = Reported::default();
    while let Some(u) = found.next().await {
        if reported.is_new(&u) {
            let writes = in_scope(watched.as_deref(), u.metadata.namespace.as_deref());
            unreadable::report(&client, &recorder, &u, writes).await;
        }
    }
}

/// The spec version (generation) of every CephOSD seen by the watch, to tell spec changes
/// from status writes.
#[derive(Default)]
pub(super) struct SpecVersions(HashMap<String, Option<i64>>);

impl SpecVersions {
    /// Records `event`; true when a CephOSD appeared, went, or changed its spec.
    pub(super) fn changed_by(&mut self, event: &watcher::Event<CephOsd>) -> bool {
        match event {
            watcher::Event::Apply(cr) | watcher::Event::InitApply(cr) => {
                let uid = cr.uid().unwrap_or_default();
                self.0.insert(uid, cr.metadata.generation) != Some(cr.metadata.generation)
            }
            watcher::Event::Delete(cr) => self.0.remove(&cr.uid().unwrap_or_default()).is_some(),
            watcher::Event::Init | watcher::Event::InitDone => false,
        }
    }
}

/// The event as the pod cache takes it: a pod that is no OSD pod (any more) is removed, or
/// not listed.
pub(super) fn only_osd_pods(event: watcher::Event<Pod>) -> Option<watcher::Event<Pod>> {
    match event {
        watcher::Event::Apply(pod) if !is_osd_pod(&pod) => Some(watcher::Event::Delete(pod)),
        watcher::Event::InitApply(pod) if !is_osd_pod(&pod) => None,
        other => Some(other),
    }
}

/// The CephOSDs a pod event concerns: the one whose owner label it carries, the one that
/// controls it, and those listing a disk it may run on (waiting for it to be gone).
pub(super) fn cephosds_of_pod(
    pod: &Pod,
    claims: &ClaimsRegistry,
    watched: Option<&str>,
) -> Vec<ObjectRef<CephOsd>> {
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let labelled = pod
        .labels()
        .get(labels::OWNER)
        .and_then(|v| labels::owner_named_by(v));
    let controller = pod
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && crate::pod::owner_reference::is_cephosd(o))
        .map(|o| o.name.as_str());
    let mut refs: Vec<ObjectRef<CephOsd>> = [labelled, controller]
        .into_iter()
        .flatten()
        .map(|name| ObjectRef::new(name).within(namespace))
        .collect();
    let annotation = |k: &str| pod.annotations().get(k).map(String::as_str);
    let disks = [
        annotation(labels::HOST).zip(annotation(labels::DATA)),
        bound_host(pod).zip(recorded_data(pod)),
    ];
    let claims = claims.latest();
    for (host, data) in disks.into_iter().flatten() {
        for id in claims.listing(&OsdKey::new(host, data).device_id()) {
            if let Some((ns, name)) = id.split_once('/') {
                if in_scope(watched, Some(ns)) {
                    refs.push(ObjectRef::new(name).within(ns));
                }
            }
        }
    }
    refs.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    refs.dedup();
    refs
}

/// `events` without its errors, which are logged: the watch behind it retries by itself. An
/// error said once is said again only at debug level until the watch works again or fails
/// otherwise (a LIST failing every 2 s for an hour is one warning, not 1,800).
pub(super) fn logging_errors<K: Send + 'static>(
    events: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
    kind: &'static str,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
    let mut said: Option<String> = None;
    events.filter_map(move |event| {
        let kept = match event {
            Ok(object) => {
                said = None;
                Some(Ok(object))
            }
            Err(error) => {
                let words = watch_error(kind, &error);
                if said.as_deref() == Some(words.as_str()) {
                    debug!(error = %words, watch = kind, "watch still failing; retrying");
                } else {
                    warn!(error = %words, watch = kind, "watch failed; retrying");
                    said = Some(words);
                }
                None
            }
        };
        std::future::ready(kept)
    })
}

/// A watch's error in one line: the API server's status and message, and for the CephOSD
/// watch answered 404, that the CRD is not installed.
fn watch_error(kind: &str, error: &watcher::Error) -> String {
    let api = match error {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s),
        _ => None,
    };
    match api {
        Some(s) if s.code == 404 && kind == "CephOSD" => format!(
            "the CephOSD CRD is not installed (404 {}): apply crds/cephosds.ceph.elemental.net.yaml; \
             waiting for it",
            s.message
        ),
        Some(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        None => error.to_string(),
    }
}

/// The CephOSD an object belongs to, from its owner label `CephOSD-<name>`.
#[allow(clippy::needless_pass_by_value)] // the mapper signature `watches_stream` wants
pub(super) fn owner_of<K: ResourceExt>(object: K) -> Option<ObjectRef<CephOsd>> {
    let name = labels::owner_named_by(object.labels().get(labels::OWNER)?)?;
    Some(ObjectRef::new(name).within(&object.namespace()?))
}

#[cfg(test)]
mod watch_error_tests {
    use super::*;
    use kube::core::Status;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
    }

    #[test]
    fn a_missing_crd_is_said_as_such_in_one_line() {
        let missing = watcher::Error::InitialListFailed(api(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
        let words = watch_error("CephOSD", &missing);
        assert!(
            words.starts_with("the CephOSD CRD is not installed (404 the server could not find"),
            "{words}"
        );
        assert!(
            !words.contains('\n') && !words.contains("ErrorResponse"),
            "{words}"
        );
        // Another watch's 404, or another failure: the server's own words.
        let forbidden =
            watcher::Error::InitialListFailed(api(403, "Forbidden", "pods is forbidden"));
        assert_eq!(
            watch_error("Pod", &forbidden),
            "403 Forbidden: pods is forbidden"
        );
        assert!(watch_error("Pod", &missing).starts_with("404 NotFound"));
    }
}
