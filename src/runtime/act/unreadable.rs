//! Reporting a CephOSD the operator cannot read: once per generation and reason, one log
//! line, a Warning event and the `InvalidSpec` condition (reason `Unreadable`, phase `Error`)
//! on that object. The object is otherwise left alone: its pods run on, nothing of it is
//! created, deleted or replaced, and the rest of its status (an open Ceph step included)
//! stays as written.

use crate::crd::CephOsd;
use crate::runtime::observe::watched_cephosd::{Unreadable, WatchedCephOsd};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Client, Resource};
use serde_json::{json, Value};
use std::collections::HashMap;
use tracing::warn;

/// The condition type and reason the report writes.
const CONDITION: &str = "InvalidSpec";
const REASON: &str = "Unreadable";

/// What was reported of each object (by uid): its generation and the words.
#[derive(Default)]
pub(crate) struct Reported(HashMap<String, (Option<i64>, String)>);

impl Reported {
    /// Whether `u` is new: another generation or another reason than last reported.
    pub(crate) fn is_new(&mut self, u: &Unreadable) -> bool {
        let uid = u.metadata.uid.clone().unwrap_or_default();
        let said = (u.metadata.generation, u.to_string());
        self.0.insert(uid, said.clone()) != Some(said)
    }
}

/// The sentence the log, the event and the condition share.
pub(crate) fn message(u: &Unreadable) -> String {
    format!(
        "the operator cannot read this CephOSD ({u}); it is left alone until it is fixed: its \
         pods run on, none is created, deleted or replaced"
    )
}

/// `conditions` with the `InvalidSpec` condition saying `message` (its transition time kept
/// when it already said so).
pub(crate) fn with_condition(
    conditions: &[Value],
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Value> {
    let previous = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(CONDITION));
    let since = previous
        .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(Time(now)));
    let mut out: Vec<Value> = conditions
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some(CONDITION))
        .cloned()
        .collect();
    out.push(json!({
        "type": CONDITION,
        "status": "True",
        "reason": REASON,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }));
    out
}

/// Reports `u` (when `writes`: this operator reconciles its namespace, so it writes the
/// event and the condition; otherwise only the log line).
pub(crate) async fn report(client: &Client, recorder: &Recorder, u: &Unreadable, writes: bool) {
    let (namespace, name) = (
        u.metadata.namespace.clone().unwrap_or_default(),
        u.metadata.name.clone().unwrap_or_default(),
    );
    let message = message(u);
    warn!(cephosd = %format!("{namespace}/{name}"), reason = %u, "a CephOSD cannot be read: skipped");
    if !writes {
        return;
    }
    let reference = ObjectReference {
        api_version: Some(CephOsd::api_version(&()).into_owned()),
        kind: Some(CephOsd::kind(&()).into_owned()),
        name: Some(name.clone()),
        namespace: Some(namespace.clone()),
        uid: u.metadata.uid.clone(),
        resource_version: u.metadata.resource_version.clone(),
        ..ObjectReference::default()
    };
    let event = Event {
        type_: EventType::Warning,
        reason: REASON.into(),
        note: Some(message.clone()),
        action: "Skip".into(),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, &reference).await {
        warn!(%error, "failed to publish event");
    }
    // A merge patch: the fields of the status it does not name stay as they are.
    let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH);
    let patch = json!({"status": {
        "phase": "Error",
        "conditions": with_condition(&u.conditions, &message, u.metadata.generation, now),
    }});
    let api: Api<WatchedCephOsd> = Api::namespaced(client.clone(), &namespace);
    if let Err(error) = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        warn!(%error, cephosd = %format!("{namespace}/{name}"), "failed to report an unreadable CephOSD in its status");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn unreadable(generation: i64, error: &str) -> Unreadable {
        Unreadable {
            metadata: ObjectMeta {
                uid: Some("u1".into()),
                generation: Some(generation),
                ..ObjectMeta::default()
            },
            field: "spec.partition".into(),
            error: error.into(),
            conditions: Vec::new(),
        }
    }

    #[test]
    fn each_generation_and_reason_is_reported_once() {
        let mut reported = Reported::default();
        assert!(reported.is_new(&unreadable(1, "too large")));
        assert!(!reported.is_new(&unreadable(1, "too large")));
        assert!(reported.is_new(&unreadable(2, "too large")));
        assert!(reported.is_new(&unreadable(2, "negative")));
    }

    #[test]
    fn the_condition_replaces_its_own_type_only_and_keeps_its_time() {
        let at = |s| Timestamp::from_second(s).expect("time");
        let others = vec![json!({"type": "Ready", "status": "True", "reason": "AllOsdsReady"})];
        let first = with_condition(&others, "cannot read", Some(3), at(10));
        assert_eq!(first.len(), 2);
        assert_eq!(first[0], others[0]);
        assert_eq!(first[1]["reason"], "Unreadable");
        assert_eq!(first[1]["lastTransitionTime"], json!(Time(at(10))));
        let again = with_condition(&first, "cannot read", Some(3), at(20));
        assert_eq!(again.len(), 2);
        assert_eq!(again[1]["lastTransitionTime"], json!(Time(at(10))));
        assert!(message(&unreadable(1, "invalid value"))
            .starts_with("the operator cannot read this CephOSD (spec.partition: invalid value)"));
    }
}
