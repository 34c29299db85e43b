//! The record's I/O against a scripted Ceph and a scripted API server holding the
//! `kube-system` Namespace.

use super::*;
use crate::ceph::fake::{Call, ScriptedCeph};
use crate::runtime::scripted_api::scripted_client;
use hyper::StatusCode;
use serde_json::json;

const UID: &str = "5e1f-kube-system";

/// An API server answering `kube-system` with `UID`, or 403 when `forbidden`.
fn api(forbidden: bool) -> kube::Client {
    scripted_client("ceph", move |sent| async move {
        if forbidden || !sent.path.ends_with("/api/v1/namespaces/kube-system") {
            return (
                StatusCode::FORBIDDEN,
                json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                       "reason": "Forbidden", "code": 403, "message": "forbidden"}),
            );
        }
        (
            StatusCode::OK,
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "kube-system", "uid": UID}}),
        )
    })
    .1
}

fn record(forbidden: bool) -> LockPlaceRecord {
    LockPlaceRecord::new(api(forbidden), "cg2").settling(Duration::ZERO)
}

fn place(namespace: &str) -> LockPlace {
    LockPlace {
        kubernetes: UID.into(),
        namespace: namespace.into(),
    }
}

fn json_of(namespace: &str) -> String {
    PlaceRecord::new(&place(namespace), "cg/osds", Timestamp::now()).to_json()
}

fn written(ceph: &ScriptedCeph) -> Vec<PlaceRecord> {
    ceph.calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::ConfigKeySet(key, value) => {
                assert_eq!(key, PLACE_KEY);
                Some(serde_json::from_str(&value).expect("a record"))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn no_record_is_written_read_back_and_lets_the_step_start() {
    let ceph = ScriptedCeph::default()
        .on_config_key_get(Ok(None))
        .on_config_key_set(Ok(()))
        .on_config_key_get(Ok(Some(json_of("cg2"))));
    assert_eq!(record(false).check(&ceph, "cg2/osds").await, Ok(()));
    let calls = ceph.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0], Call::ConfigKeyGet(PLACE_KEY.into()));
    assert_eq!(calls[2], Call::ConfigKeyGet(PLACE_KEY.into()));
    let written = written(&ceph);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].place, place("cg2"));
    assert_eq!(written[0].writer, "cg2/osds");
}

#[tokio::test]
async fn losing_the_race_refuses_naming_the_winner() {
    // Both found no record; the other's write came later and is read back.
    let ceph = ScriptedCeph::default()
        .on_config_key_get(Ok(None))
        .on_config_key_set(Ok(()))
        .on_config_key_get(Ok(Some(json_of("cg"))));
    let Err(PlaceRefused::Differs(said)) = record(false).check(&ceph, "cg2/osds").await else {
        panic!("refused");
    };
    assert!(said.contains("names Lease namespace cg of"), "{said}");
    assert!(said.contains("--ceph-lock-namespace=cg "), "{said}");
}

#[tokio::test]
async fn another_places_fresh_record_refuses_without_writing() {
    let ceph = ScriptedCeph::default().on_config_key_get(Ok(Some(json_of("cg"))));
    let Err(PlaceRefused::Differs(said)) = record(false).check(&ceph, "cg2/osds").await else {
        panic!("refused");
    };
    assert!(
        said.contains(&format!("this operator's is {}", place("cg2"))),
        "{said}"
    );
    assert!(written(&ceph).is_empty());
}

#[tokio::test]
async fn our_recent_record_is_neither_written_nor_read_back() {
    let ceph = ScriptedCeph::default().on_config_key_get(Ok(Some(json_of("cg2"))));
    let record = record(false);
    assert_eq!(record.check(&ceph, "cg2/osds").await, Ok(()));
    assert_eq!(ceph.calls(), vec![Call::ConfigKeyGet(PLACE_KEY.into())]);
}

#[tokio::test]
async fn a_key_without_the_caps_fails_closed_naming_them() {
    let ceph = ScriptedCeph::default().on_config_key_get(Err(CephError::Failed {
        command: format!("config-key get {PLACE_KEY}"),
        exit_code: Some(13),
        stderr: "Error EACCES: access denied".into(),
    }));
    let Err(PlaceRefused::Failed(said)) = record(false).check(&ceph, "cg2/osds").await else {
        panic!("failed");
    };
    assert!(said.contains("EACCES"), "{said}");
    assert!(
        said.contains("allow command \"config-key get\" with key prefix ceph-osd-operator/"),
        "{said}"
    );
}

#[tokio::test]
async fn no_right_to_read_kube_system_fails_closed_before_asking_ceph() {
    let ceph = ScriptedCeph::default();
    let Err(PlaceRefused::Failed(said)) = record(true).check(&ceph, "cg2/osds").await else {
        panic!("failed");
    };
    assert!(said.contains("`get` on namespaces/kube-system"), "{said}");
    assert!(ceph.calls().is_empty());
}
