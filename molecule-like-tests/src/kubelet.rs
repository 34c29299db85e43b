//! The test kubelet: what a node's kubelet does to a pod's status, without containers.
//!
//! Level-driven and restart-safe: every decision is derived from the pod itself
//! (`creationTimestamp`, annotations, `deletionTimestamp`, `terminationGracePeriodSeconds`).
//!
//! - A live pod is `Pending` (scheduled) until `creationTimestamp + ready-after-seconds`
//!   (annotation `testing.local/ready-after-seconds`, default 1), then `Running` and Ready.
//!   With `testing.local/ready: "never"` it is `Running` but never Ready.
//! - A pod being deleted that carries the `testing.local/kubelet` finalizer keeps running for
//!   `terminationGracePeriodSeconds` (default 30) × the grace scale, counted from its
//!   `deletionTimestamp`; then the finalizer is removed and the API server deletes it.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::{json, Value};

use crate::rewrite::KUBELET_FINALIZER;

/// Annotation: seconds after creation until the pod becomes Ready (a number, may be fractional).
pub const READY_AFTER_ANNOTATION: &str = "testing.local/ready-after-seconds";
/// Annotation: `"never"` keeps the pod Running but not Ready.
pub const READY_ANNOTATION: &str = "testing.local/ready";
const DEFAULT_READY_AFTER: f64 = 1.0;
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// Settings of the test kubelet.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `terminationGracePeriodSeconds` is multiplied by this.
    pub grace_scale: f64,
}

struct Ctx {
    client: Client,
    settings: Settings,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

/// What the kubelet wants to happen to a pod now.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing to do (maybe look again after a while).
    Wait(Option<Duration>),
    /// Patch the status with this merge patch, then look again after a while (if set).
    PatchStatus(Value, Option<Duration>),
    /// The grace period is over: remove our finalizer (at this index).
    RemoveFinalizer(usize),
}

fn secs_f64(d: f64) -> Duration {
    Duration::from_secs_f64(d.max(0.0))
}

/// Deterministic pod IP from the uid (never contacted; only has to look like one).
fn pod_ip(uid: &str) -> String {
    let h = uid
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    format!("10.244.{}.{}", (h >> 8) % 256, (h % 254) + 1)
}

fn condition(type_: &str, ok: bool, since: &str, existing: &Value) -> Value {
    let status = if ok { "True" } else { "False" };
    let prev = existing
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        });
    let ltt = match prev {
        Some(c) if c.get("status").and_then(Value::as_str) == Some(status) => c
            .get("lastTransitionTime")
            .and_then(Value::as_str)
            .unwrap_or(since)
            .to_string(),
        _ => since.to_string(),
    };
    json!({"type": type_, "status": status, "lastTransitionTime": ltt})
}

fn ts(t: jiff::Timestamp) -> String {
    // RFC 3339 with second precision, as the API server stores `Time`.
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The pure decision for one pod at `now`.
pub fn decide(pod: &Pod, now: jiff::Timestamp, settings: &Settings) -> Decision {
    let meta = &pod.metadata;
    if let Some(deleted) = &meta.deletion_timestamp {
        let Some(idx) = meta
            .finalizers
            .as_ref()
            .and_then(|f| f.iter().position(|x| x == KUBELET_FINALIZER))
        else {
            return Decision::Wait(None);
        };
        let grace = pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(DEFAULT_GRACE_SECONDS);
        #[allow(clippy::cast_precision_loss)]
        let scaled = grace.max(0) as f64 * settings.grace_scale;
        let elapsed = now.duration_since(deleted.0).as_secs_f64();
        if elapsed >= scaled {
            return Decision::RemoveFinalizer(idx);
        }
        return Decision::Wait(Some(secs_f64(scaled - elapsed)));
    }

    let annotations = pod.annotations();
    let never = annotations.get(READY_ANNOTATION).map(String::as_str) == Some("never");
    let ready_after = annotations
        .get(READY_AFTER_ANNOTATION)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .unwrap_or(DEFAULT_READY_AFTER);
    let created = meta.creation_timestamp.as_ref().map_or(now, |t| t.0);
    let since_created = now.duration_since(created).as_secs_f64();
    let started = never || since_created >= ready_after;
    let ready = started && !never;

    let existing = pod
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or(Value::Null);
    let phase = if started { "Running" } else { "Pending" };
    let now_s = ts(now);
    let start_time = existing
        .get("startTime")
        .and_then(Value::as_str)
        .map_or_else(|| ts(created), str::to_string);
    let uid = meta.uid.clone().unwrap_or_default();
    let containers: Vec<Value> = pod
        .spec
        .as_ref()
        .map(|s| {
            s.containers
                .iter()
                .map(|c| {
                    let mut st = json!({
                        "name": c.name,
                        "image": c.image.clone().unwrap_or_default(),
                        "imageID": "",
                        "ready": ready,
                        "started": started,
                        "restartCount": 0,
                    });
                    st["state"] = if started {
                        json!({"running": {"startedAt": start_time}})
                    } else {
                        json!({"waiting": {"reason": "ContainerCreating"}})
                    };
                    st
                })
                .collect()
        })
        .unwrap_or_default();
    let desired = json!({
        "phase": phase,
        "hostIP": "127.0.0.1",
        "podIP": pod_ip(&uid),
        "podIPs": [{"ip": pod_ip(&uid)}],
        "startTime": start_time,
        "conditions": [
            condition("PodScheduled", true, &now_s, &existing),
            condition("Initialized", true, &now_s, &existing),
            condition("ContainersReady", ready, &now_s, &existing),
            condition("Ready", ready, &now_s, &existing),
        ],
        "containerStatuses": containers,
    });
    let next = if started {
        None
    } else {
        Some(secs_f64(ready_after - since_created))
    };
    if status_matches(&existing, &desired) {
        Decision::Wait(next)
    } else {
        Decision::PatchStatus(json!({"status": desired}), next)
    }
}

fn status_matches(existing: &Value, desired: &Value) -> bool {
    let cond = |v: &Value, t: &str| {
        v.get("conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
            })
            .and_then(|c| c.get("status"))
            .cloned()
    };
    ["phase", "podIP", "startTime"]
        .iter()
        .all(|k| existing.get(*k) == desired.get(*k))
        && ["PodScheduled", "Initialized", "ContainersReady", "Ready"]
            .iter()
            .all(|t| cond(existing, t) == cond(desired, t))
        && existing
            .get("containerStatuses")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
            == desired
                .get("containerStatuses")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
}

async fn reconcile(pod: Arc<Pod>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let ns = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let requeue = |d: Option<Duration>| match d {
        // A little slack so the next look is past the deadline.
        Some(d) => Action::requeue(d + Duration::from_millis(50)),
        None => Action::await_change(),
    };
    match decide(&pod, jiff::Timestamp::now(), &ctx.settings) {
        Decision::Wait(d) => Ok(requeue(d)),
        Decision::PatchStatus(patch, d) => {
            tracing::info!(pod = %format!("{ns}/{name}"), phase = %patch["status"]["phase"],
                ready = %patch["status"]["conditions"][3]["status"], "status");
            match api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => Ok(requeue(d)),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(Action::await_change()),
                Err(e) => Err(e.into()),
            }
        }
        Decision::RemoveFinalizer(idx) => {
            tracing::info!(pod = %format!("{ns}/{name}"), "grace period over: removing finalizer");
            // Merge patch of the whole list, guarded by resourceVersion (409 if it changed).
            let mut finalizers = pod.finalizers().to_vec();
            finalizers.remove(idx);
            let patch = json!({"metadata": {
                "resourceVersion": pod.resource_version(),
                "finalizers": finalizers,
            }});
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => Ok(Action::await_change()),
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 422 || e.code == 409 => {
                    // Gone already, or the finalizer list changed under us: look again.
                    Ok(Action::requeue(Duration::from_millis(200)))
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}

fn error_policy(_pod: Arc<Pod>, err: &Error, _ctx: Arc<Ctx>) -> Action {
    tracing::warn!(error = %err, "reconcile failed");
    Action::requeue(Duration::from_millis(500))
}

/// Runs the test kubelet for all pods until the process ends.
pub async fn run(client: Client, settings: Settings) -> anyhow::Result<()> {
    tracing::info!(?settings, "test kubelet watching pods");
    let api: Api<Pod> = Api::all(client.clone());
    let ctx = Arc::new(Ctx { client, settings });
    Controller::new(api, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "controller");
            }
        })
        .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).expect("pod")
    }

    fn at(s: &str) -> jiff::Timestamp {
        s.parse().expect("ts")
    }

    const S: Settings = Settings { grace_scale: 0.1 };

    #[test]
    fn becomes_ready_after_delay() {
        let p = pod(json!({"metadata": {"name": "a", "uid": "u1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {READY_AFTER_ANNOTATION: "5"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}));
        match decide(&p, at("2026-01-01T00:00:02Z"), &S) {
            Decision::PatchStatus(patch, Some(d)) => {
                assert_eq!(patch["status"]["phase"], "Pending");
                assert_eq!(d, Duration::from_secs(3));
            }
            other => panic!("{other:?}"),
        }
        match decide(&p, at("2026-01-01T00:00:05Z"), &S) {
            Decision::PatchStatus(patch, None) => {
                assert_eq!(patch["status"]["phase"], "Running");
                assert_eq!(patch["status"]["conditions"][3]["type"], "Ready");
                assert_eq!(patch["status"]["conditions"][3]["status"], "True");
                assert_eq!(patch["status"]["containerStatuses"][0]["ready"], true);
                // Applying the patch makes the decision a no-op.
                let mut applied = p.clone();
                applied.status = serde_json::from_value(patch["status"].clone()).ok();
                assert_eq!(
                    decide(&applied, at("2026-01-01T00:00:09Z"), &S),
                    Decision::Wait(None)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn never_ready() {
        let p = pod(
            json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {READY_ANNOTATION: "never"}}, "spec": {"containers": []}}),
        );
        match decide(&p, at("2026-01-01T00:00:00Z"), &S) {
            Decision::PatchStatus(patch, None) => {
                assert_eq!(patch["status"]["phase"], "Running");
                assert_eq!(patch["status"]["conditions"][3]["status"], "False");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn graceful_termination_from_deletion_timestamp() {
        let mut p = pod(
            json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z",
            "finalizers": ["other", KUBELET_FINALIZER]},
            "spec": {"containers": [], "terminationGracePeriodSeconds": 20}}),
        );
        p.metadata.deletion_timestamp = Some(Time(at("2026-01-01T00:01:00Z")));
        assert_eq!(
            decide(&p, at("2026-01-01T00:01:01Z"), &S),
            Decision::Wait(Some(Duration::from_secs(1)))
        );
        assert_eq!(
            decide(&p, at("2026-01-01T00:01:02Z"), &S),
            Decision::RemoveFinalizer(1)
        );
        p.metadata.finalizers = Some(vec!["other".into()]);
        assert_eq!(
            decide(&p, at("2026-01-01T00:01:05Z"), &S),
            Decision::Wait(None)
        );
    }

    #[test]
    fn default_grace_is_30s() {
        let mut p = pod(
            json!({"metadata": {"name": "a", "finalizers": [KUBELET_FINALIZER]},
            "spec": {"containers": []}}),
        );
        p.metadata.deletion_timestamp = Some(Time(at("2026-01-01T00:00:00Z")));
        assert_eq!(
            decide(&p, at("2026-01-01T00:00:00Z"), &S),
            Decision::Wait(Some(Duration::from_secs(3)))
        );
    }
}
