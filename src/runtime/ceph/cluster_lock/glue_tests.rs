//! The step locks against a scripted API server holding Leases (resourceVersion checked on
//! every write, as the API server does), two operators' lock handles on one server.

use super::*;
use crate::ceph::fake::ScriptedCeph;
use crate::ceph::test_data::{healthy_status, FSID};
use crate::crd::UpdateDomain;
use crate::runtime::scripted_api::{scripted_client, Sent};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The Leases of the lock namespace, by name, each with its resourceVersion.
#[derive(Clone, Default)]
struct Leases(Arc<Mutex<HashMap<String, Value>>>);

fn status(code: u16, reason: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": reason,
           "code": code, "message": reason})
}

impl Leases {
    fn answer(&self, sent: &Sent) -> (StatusCode, Value) {
        let mut leases = locked(&self.0);
        let name = sent.path.rsplit('/').next().unwrap_or_default().to_owned();
        match sent.method {
            Method::GET => leases.get(&name).map_or_else(
                || (StatusCode::NOT_FOUND, status(404, "NotFound")),
                |l| (StatusCode::OK, l.clone()),
            ),
            Method::POST => {
                let name = sent.body["metadata"]["name"].as_str().unwrap_or_default();
                if leases.contains_key(name) {
                    return (StatusCode::CONFLICT, status(409, "AlreadyExists"));
                }
                let mut lease = sent.body.clone();
                lease["metadata"]["resourceVersion"] = json!("1");
                leases.insert(name.to_owned(), lease.clone());
                (StatusCode::CREATED, lease)
            }
            Method::PUT => {
                let Some(stored) = leases.get(&name) else {
                    return (StatusCode::NOT_FOUND, status(404, "NotFound"));
                };
                let version = &stored["metadata"]["resourceVersion"];
                if sent.body["metadata"]["resourceVersion"] != *version {
                    return (StatusCode::CONFLICT, status(409, "Conflict"));
                }
                let next: u64 = version.as_str().and_then(|v| v.parse().ok()).unwrap_or(0) + 1;
                let mut lease = sent.body.clone();
                lease["metadata"]["resourceVersion"] = json!(next.to_string());
                leases.insert(name, lease.clone());
                (StatusCode::OK, lease)
            }
            _ => (
                StatusCode::METHOD_NOT_ALLOWED,
                status(405, "MethodNotAllowed"),
            ),
        }
    }

    fn lease(&self) -> Lease {
        let leases = locked(&self.0);
        let lease = leases
            .get(&format!("ceph-osd-step-{FSID}"))
            .expect("the Lease exists");
        serde_json::from_value(lease.clone()).expect("a Lease")
    }

    fn client(&self) -> kube::Client {
        let leases = self.clone();
        scripted_client("locks", move |sent| {
            let reply = leases.answer(&sent);
            async move { reply }
        })
        .1
    }
}

fn cephosd(namespace: &str, name: &str, uid: &str) -> CephOsd {
    let mut cr = crate::plan::tests::cr(UpdateDomain::Host, &["h1"], &["/dev/sdb"], "1");
    cr.metadata.namespace = Some(namespace.into());
    cr.metadata.name = Some(name.into());
    cr.metadata.uid = Some(uid.into());
    cr
}

fn ceph() -> ScriptedCeph {
    ScriptedCeph::default().on_status(Ok(healthy_status()))
}

#[tokio::test]
async fn a_second_cephosd_waits_naming_the_first_until_its_step_ends() {
    let server = Leases::default();
    // Two operators (two namespaced ones, say) on one lock namespace.
    let (locks_a, locks_b) = (
        CephStepLocks::new(server.client(), "locks"),
        CephStepLocks::new(server.client(), "locks"),
    );
    let (ceph_a, ceph_b) = (ceph(), ceph());
    let a = cephosd("team-a", "osds", "uid-a");
    let b = cephosd("team-b", "osds", "uid-b");

    let held = locks_a.take(&ceph_a, &a, &["h1:/dev/sdb".into()]).await;
    assert_eq!(held, LockState::Held);
    let lease = server.lease();
    let spec = lease.spec.clone().expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("team-a/osds/uid-a"));
    assert_eq!(spec.lease_duration_seconds, Some(60));
    assert_eq!(
        lease.annotations().get(STEP_KEYS).map(String::as_str),
        Some("h1:/dev/sdb")
    );

    let busy = locks_b.take(&ceph_b, &b, &["h3:/dev/sdb".into()]).await;
    let blocker = busy.blocker().expect("busy");
    assert_eq!(blocker.category(), "CephClusterBusy");
    assert_eq!(
        blocker.to_string(),
        format!(
            "a step of CephOSD team-a/osds (on h1:/dev/sdb) holds the Ceph cluster (Lease \
             locks/ceph-osd-step-{FSID}): one step at a time per Ceph cluster"
        )
    );

    // While the step is open the holder keeps it (renewed only when due).
    assert_eq!(locks_a.keep(&ceph_a, &a).await, (LockState::Held, None));
    // Its step ended: released; the other takes it.
    locks_a.release(&ceph_a, &a).await;
    assert_eq!(server.lease().spec.expect("spec").holder_identity, None);
    let held = locks_b.take(&ceph_b, &b, &["h3:/dev/sdb".into()]).await;
    assert_eq!(held, LockState::Held);
    let spec = server.lease().spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("team-b/osds/uid-b"));
    assert_eq!(spec.lease_transitions, Some(2));
    // Releasing what another holds does nothing.
    locks_a.release(&ceph_a, &a).await;
    assert_eq!(
        server
            .lease()
            .spec
            .expect("spec")
            .holder_identity
            .as_deref(),
        Some("team-b/osds/uid-b")
    );
    // The fsid was asked once per operator.
    assert_eq!(ceph_a.calls().len(), 1);
    assert_eq!(ceph_b.calls().len(), 1);
}

/// Two CephOSDs asking at the same moment: one holds the lock, the other is told who does;
/// never both.
#[tokio::test]
async fn two_takers_at_once_never_both_hold_it() {
    for _ in 0..20 {
        let server = Leases::default();
        let (locks_a, locks_b) = (
            CephStepLocks::new(server.client(), "locks"),
            CephStepLocks::new(server.client(), "locks"),
        );
        let (ceph_a, ceph_b) = (ceph(), ceph());
        let a = cephosd("team-a", "osds", "uid-a");
        let b = cephosd("team-b", "osds", "uid-b");
        let (keys_a, keys_b) = (["h1:/dev/sdb".to_owned()], ["h3:/dev/sdb".to_owned()]);
        let (got_a, got_b) = futures::join!(
            locks_a.take(&ceph_a, &a, &keys_a),
            locks_b.take(&ceph_b, &b, &keys_b),
        );
        let held = [&got_a, &got_b]
            .iter()
            .filter(|s| ***s == LockState::Held)
            .count();
        assert!(held <= 1, "{got_a:?} {got_b:?}");
        let holder = server.lease().spec.expect("spec").holder_identity;
        match holder.as_deref() {
            Some("team-a/osds/uid-a") => assert!(got_b.blocker().is_some(), "{got_b:?}"),
            Some("team-b/osds/uid-b") => assert!(got_a.blocker().is_some(), "{got_a:?}"),
            other => panic!("held by {other:?}"),
        }
    }
}

#[tokio::test]
async fn no_fsid_no_step() {
    let server = Leases::default();
    let locks = CephStepLocks::new(server.client(), "locks");
    let ceph = ScriptedCeph::default().on_status(Err(CephError::Timeout {
        command: "status".into(),
        timeout: std::time::Duration::from_secs(10),
    }));
    let state = locks
        .take(&ceph, &cephosd("team-a", "osds", "uid-a"), &[])
        .await;
    let blocker = state.blocker().expect("failed");
    assert_eq!(blocker.category(), "CephUnavailable");
    assert!(
        blocker.to_string().contains("fsid is not known"),
        "{blocker}"
    );
    assert!(locked(&server.0).is_empty());
}

/// A CephOSD with more steps to go lets a waiting one have the next turn: its next question
/// finds the lock claimed, gives it up and waits; the claimant takes it; the one that gave it
/// up then claims the turn after.
#[tokio::test]
async fn the_holder_lets_a_waiting_cephosd_have_the_next_turn() {
    let server = Leases::default();
    let (locks_a, locks_b) = (
        CephStepLocks::new(server.client(), "locks"),
        CephStepLocks::new(server.client(), "locks"),
    );
    let (ceph_a, ceph_b) = (ceph(), ceph());
    let a = cephosd("team-a", "osds", "uid-a");
    let b = cephosd("team-b", "osds", "uid-b");
    let (keys_a, keys_b) = (["h1:/dev/sdb".to_owned()], ["h3:/dev/sdb".to_owned()]);
    let next_holder = || server.lease().annotations().get(NEXT_HOLDER).cloned();
    assert_eq!(locks_a.take(&ceph_a, &a, &keys_a).await, LockState::Held);
    // B waits and claims the next turn.
    assert!(locks_b.take(&ceph_b, &b, &keys_b).await.blocker().is_some());
    let lease = server.lease();
    assert_eq!(
        lease.annotations().get(NEXT_HOLDER).map(String::as_str),
        Some("team-b/osds/uid-b")
    );
    // A's step is open: it keeps the lock.
    assert_eq!(locks_a.keep(&ceph_a, &a).await, (LockState::Held, None));
    // A's step ended; its next step yields to B.
    let yielded = locks_a.take(&ceph_a, &a, &keys_a).await;
    let blocker = yielded.blocker().expect("yielded");
    assert!(
        blocker
            .to_string()
            .starts_with("CephOSD team-b/osds has the next turn on the Ceph cluster"),
        "{blocker}"
    );
    assert_eq!(server.lease().spec.expect("spec").holder_identity, None);
    // A asks again before B: still B's turn.
    assert!(locks_a.take(&ceph_a, &a, &keys_a).await.blocker().is_some());
    assert_eq!(locks_b.take(&ceph_b, &b, &keys_b).await, LockState::Held);
    let lease = server.lease();
    assert_eq!(
        lease.spec.clone().expect("spec").holder_identity.as_deref(),
        Some("team-b/osds/uid-b")
    );
    // B's claim stands until its step opens (Ceph may yet say wait at its turn): A's question
    // claims nothing meanwhile.
    assert_eq!(
        lease.annotations().get(NEXT_HOLDER).map(String::as_str),
        Some("team-b/osds/uid-b")
    );
    assert!(locks_a.take(&ceph_a, &a, &keys_a).await.blocker().is_some());
    assert_eq!(next_holder().as_deref(), Some("team-b/osds/uid-b"));
    // B said wait by Ceph lets the lock go: the turn stays B's.
    locks_b.release(&ceph_b, &b).await;
    assert!(locks_a.take(&ceph_a, &a, &keys_a).await.blocker().is_some());
    assert_eq!(locks_b.take(&ceph_b, &b, &keys_b).await, LockState::Held);
    // B's step opened: its first look spends the claim; A's next question claims the turn
    // after B's step.
    assert_eq!(locks_b.keep(&ceph_b, &b).await, (LockState::Held, None));
    assert_eq!(next_holder(), None);
    assert!(locks_a.take(&ceph_a, &a, &keys_a).await.blocker().is_some());
    assert_eq!(next_holder().as_deref(), Some("team-a/osds/uid-a"));
}
