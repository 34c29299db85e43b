//! The executor against a scripted API (a tower service in place of the cluster): what it
//! sends, in which order, and what it makes of the answers.

use super::*;
use crate::ceph::OsdId;
use crate::crd::osd::OsdKey;
use crate::plan::says::actions::{CreateReason, DeleteReason};
use crate::plan::says::failure::Failure;
use crate::runtime::scripted_api::{scripted_client, Received, Sent};
use crate::testing::CephOsdBuilder;
use hyper::{Method, StatusCode};
use kube::runtime::events::Reporter;
use std::sync::{Arc, Mutex};

/// A scripted API: answers each request with `answer(method, path)` (a status code and a
/// message; success echoes the request body back, or for a status patch the CephOSD with
/// that status), and records what was sent.
#[derive(Clone)]
struct ScriptedApi {
    received: Received,
}

impl ScriptedApi {
    fn client(answer: fn(&Method, &str) -> (StatusCode, &'static str)) -> (Self, kube::Client) {
        let (received, client) = scripted_client("ceph", move |sent: Sent| async move {
            let (code, message) = answer(&sent.method, &sent.path);
            let reply = if code.is_success() && sent.path.ends_with("/status") {
                let mut cr = serde_json::to_value(cr()).expect("cr");
                cr["status"] = sent.body["status"].clone();
                cr
            } else if code.is_success() {
                sent.body
            } else {
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": message, "reason": code.canonical_reason(),
                       "code": code.as_u16()})
            };
            (code, reply)
        });
        (Self { received }, client)
    }

    fn sent(&self) -> Vec<Sent> {
        self.received.all()
    }

    /// (method, path) of each request other than Events.
    fn writes(&self) -> Vec<(Method, String)> {
        self.sent()
            .into_iter()
            .filter(|s| !s.path.contains("/events"))
            .map(|s| (s.method, s.path))
            .collect()
    }

    /// The reasons of the Events posted.
    fn event_reasons(&self) -> Vec<String> {
        self.sent()
            .into_iter()
            .filter(|s| s.path.contains("/events") && s.method == Method::POST)
            .filter_map(|s| s.body["reason"].as_str().map(str::to_owned))
            .collect()
    }
}

/// What an executor borrows: the event recorder of `client`, and the CephOSD.
struct Fixture {
    client: kube::Client,
    recorder: Recorder,
    cr: CephOsd,
}

impl Fixture {
    fn new(client: &kube::Client, cr: CephOsd) -> Self {
        let reporter = Reporter {
            controller: "test".into(),
            instance: None,
        };
        Self {
            client: client.clone(),
            recorder: Recorder::new(client.clone(), reporter),
            cr,
        }
    }

    fn executor(&self) -> Executor<'_> {
        Executor {
            pods: Api::namespaced(self.client.clone(), "ceph"),
            budgets: Api::namespaced(self.client.clone(), "ceph"),
            replica_sets: Api::namespaced(self.client.clone(), "ceph"),
            crs: Api::namespaced(self.client.clone(), "ceph"),
            recorder: &self.recorder,
            cr: &self.cr,
            ceph: None,
        }
    }
}

fn cr() -> CephOsd {
    CephOsdBuilder::new("ceph-osds")
        .namespace("ceph")
        .uid("cr-uid")
        .build()
        .expect("a CephOSD")
}

fn create(name: &str) -> Action {
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ceph"},
    }))
    .expect("pod");
    Action::Create {
        key: OsdKey::new("h1", format!("/dev/{name}")),
        pod: Box::new(pod),
        reason: CreateReason::New,
    }
}

fn delete(name: &str) -> Action {
    Action::Delete {
        name: name.into(),
        uid: Some("pod-uid".into()),
        key: Some(OsdKey::new("h1", "/dev/sdb")),
        reason: DeleteReason::Superfluous,
    }
}

async fn apply_all(
    client: &kube::Client,
    actions: &[Action],
) -> (Result<(), ExecuteError>, Vec<String>) {
    let fixture = Fixture::new(client, cr());
    let told = Mutex::new(Vec::new());
    let result = fixture
        .executor()
        .apply_actions(actions, &CephOsdStatus::default(), &|action| {
            if let Action::Create { pod, .. } = action {
                told.lock().expect("lock").push(pod.name_any());
            }
        })
        .await;
    (result, told.into_inner().expect("lock"))
}

#[tokio::test]
async fn creations_stop_at_the_first_refusal_and_say_so() {
    let (api, client) = ScriptedApi::client(|method, path| match (method, path) {
        (&Method::POST, "/api/v1/namespaces/ceph/pods") => (StatusCode::CREATED, ""),
        _ => (StatusCode::OK, ""),
    });
    let actions: Vec<Action> = ["sdb", "sdc", "sdd", "sde"].map(create).into();
    let (result, told) = apply_all(&client, &actions).await;
    assert!(result.is_ok());
    assert_eq!(told, ["sdb", "sdc", "sdd", "sde"]);
    assert_eq!(api.event_reasons(), ["Created"; 4]);

    let (api, client) = ScriptedApi::client(|method, path| match (method, path) {
        (&Method::POST, "/api/v1/namespaces/ceph/pods") => (
            StatusCode::FORBIDDEN,
            "pods \"x\" is forbidden: exceeded quota: one-pod",
        ),
        _ => (StatusCode::OK, ""),
    });
    let (result, told) = apply_all(&client, &actions).await;
    let error = result.expect_err("refused");
    assert_eq!(error.category(), Failure::Create);
    assert!(
        error.summary().contains("exceeded quota"),
        "{}",
        error.summary()
    );
    assert!(!error.may_have_applied());
    // One request (the first creation goes alone), nothing told, no event.
    assert_eq!(api.writes().len(), 1, "{:?}", api.writes());
    assert!(told.is_empty());
    assert!(api.event_reasons().is_empty());
}

#[tokio::test]
async fn writes_start_alone_and_widen_with_each_success_up_to_the_cap() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Each creation takes 2 ms; the API records how many were in flight when one arrived,
    // and how many had succeeded by then.
    let (in_flight, succeeded) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (counters, record) = ((in_flight.clone(), succeeded.clone()), seen.clone());
    let (_, client) = scripted_client("ceph", move |sent: Sent| {
        let ((in_flight, succeeded), record) = (counters.clone(), record.clone());
        async move {
            if sent.path == "/api/v1/namespaces/ceph/pods" {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                record
                    .lock()
                    .expect("lock")
                    .push((now, succeeded.load(Ordering::SeqCst)));
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                succeeded.fetch_add(1, Ordering::SeqCst);
            }
            (StatusCode::CREATED, sent.body)
        }
    });
    let actions: Vec<Action> = (0..300).map(|i| create(&format!("sd{i}"))).collect();
    let (result, told) = apply_all(&client, &actions).await;
    assert!(result.is_ok());
    assert_eq!(told.len(), 300);
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 300);
    assert_eq!(seen[0], (1, 0), "the first creation goes alone");
    for (in_flight, succeeded) in &seen {
        assert!(
            *in_flight <= succeeded + 1,
            "{in_flight} in flight after {succeeded} successes"
        );
        assert!(*in_flight <= MAX_CONCURRENT_WRITES);
    }
    let widest = seen.iter().map(|(n, _)| *n).max().unwrap_or_default();
    assert!(
        widest > MAX_CONCURRENT_WRITES / 2,
        "never wider than {widest}"
    );
}

#[tokio::test]
async fn a_delete_that_finds_nothing_is_no_error_and_no_event() {
    let (api, client) = ScriptedApi::client(|method, _| match *method {
        Method::DELETE => (StatusCode::NOT_FOUND, "pods \"gone\" not found"),
        _ => (StatusCode::OK, ""),
    });
    let (result, _) = apply_all(&client, &[delete("gone")]).await;
    assert!(result.is_ok());
    assert_eq!(
        api.writes(),
        [(
            Method::DELETE,
            "/api/v1/namespaces/ceph/pods/gone".to_owned()
        )]
    );
    assert!(api.event_reasons().is_empty());
    // The delete is conditional on the uid: never a new pod of the same name.
    let sent = api.sent();
    assert_eq!(sent[0].body["preconditions"]["uid"], "pod-uid");
}

#[tokio::test]
async fn a_delete_that_fails_otherwise_stops_and_may_have_applied() {
    let (api, client) = ScriptedApi::client(|method, _| match *method {
        Method::DELETE => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "etcdserver: request timed out",
        ),
        _ => (StatusCode::OK, ""),
    });
    let (result, _) = apply_all(&client, &[delete("a"), create("sdc")]).await;
    let error = result.expect_err("fails");
    assert_eq!(error.category(), Failure::Delete);
    assert!(error.may_have_applied(), "a 500 may come after the write");
    assert_eq!(api.writes().len(), 1, "the creation after it is not sent");
}

#[tokio::test]
async fn the_status_is_a_server_side_apply_of_the_status_subresource() {
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
    let fixture = Fixture::new(&client, cr());
    let status = CephOsdStatus {
        desired: 3,
        ..CephOsdStatus::default()
    };
    fixture
        .executor()
        .write_status(&status)
        .await
        .expect("written");
    let sent = api.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].method, Method::PATCH);
    assert_eq!(
        sent[0].path,
        "/apis/ceph.elemental.net/v1alpha1/namespaces/ceph/cephosds/ceph-osds/status"
    );
    assert_eq!(sent[0].body["status"]["desired"], 3);
    assert_eq!(sent[0].body["kind"], "CephOSD");
    assert!(
        sent[0].body.get("spec").is_none(),
        "only the status is applied"
    );
}

fn planned(cr: &CephOsd) -> Plan {
    crate::plan::plan(
        cr,
        &crate::plan::Observed::pods(&[]),
        &mut crate::crd::osd::CountingSuffix::default(),
        Timestamp::from_second(100).expect("time"),
    )
}

fn cr_with_two_osds() -> CephOsd {
    let mut cr = cr();
    cr.spec.storage = vec![crate::crd::StorageEntry {
        hosts: vec!["h1".into(), "h2".into()],
        osds: vec![crate::crd::OsdDevices {
            data: "/dev/sdb".into(),
            db: None,
            wal: None,
        }],
    }];
    cr.spec.pod_template = json!({"spec": {"containers": [{"name": "osd", "image": "ceph"}]}});
    cr
}

async fn carry_out(client: &kube::Client, cr: &CephOsd, plan: &Plan) -> Outcome {
    Fixture::new(client, cr.clone())
        .executor()
        .carry_out(plan, Timestamp::from_second(100).expect("time"), &|_| {})
        .await
}

#[tokio::test]
async fn a_refused_write_is_a_warning_event_and_a_condition_on_the_planned_status() {
    let (api, client) = ScriptedApi::client(|method, path| match (method, path) {
        (&Method::POST, "/api/v1/namespaces/ceph/pods") => (
            StatusCode::FORBIDDEN,
            "admission webhook \"deny.example.com\" denied the request",
        ),
        _ => (StatusCode::OK, ""),
    });
    let cr = cr_with_two_osds();
    let plan = planned(&cr);
    assert_eq!(plan.actions.len(), 2);
    let outcome = carry_out(&client, &cr, &plan).await;
    let failed = outcome.failed.expect("failed");
    assert_eq!(failed.category(), Failure::Create);
    assert_eq!(api.event_reasons(), ["CreateFailed"]);
    let status = outcome.status.expect("the failure is in the status");
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == "ReconcileFailed")
        .expect("ReconcileFailed");
    assert_eq!(condition.reason, "CreateFailed");
    assert!(
        condition.message.contains("deny.example.com"),
        "{}",
        condition.message
    );
    // The counts are those the plan computed.
    assert_eq!(status.desired, 2);
    let writes = api.writes();
    assert_eq!(
        writes
            .last()
            .map(|(m, p)| (m.clone(), p.ends_with("/status"))),
        Some((Method::PATCH, true))
    );

    // The next reconcile succeeds: its status has no such condition.
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::CREATED, ""));
    let mut cr = cr;
    cr.status = Some(status);
    let plan = planned(&cr);
    let outcome = carry_out(&client, &cr, &plan).await;
    assert!(outcome.failed.is_none());
    let status = outcome.status.expect("written");
    assert!(status
        .conditions
        .iter()
        .all(|c| c.type_ != "ReconcileFailed"));
    assert_eq!(api.event_reasons(), ["Created", "Created"]);
}

#[tokio::test]
async fn an_unchanged_status_is_not_written() {
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
    let mut cr = cr();
    let plan = planned(&cr);
    cr.status = Some(plan.status.clone());
    let plan = planned(&cr);
    assert!(!plan.status_changed && plan.actions.is_empty());
    let outcome = carry_out(&client, &cr, &plan).await;
    assert!(outcome.failed.is_none() && outcome.status.is_none());
    assert!(api.sent().is_empty(), "{:?}", api.sent());
}

/// An OSD dump where `noout` is set on `with_noout` of osd.3 and osd.4.
fn dump(with_noout: &[u32]) -> crate::ceph::OsdDump {
    let osds = [3, 4]
        .map(|id| {
            let info = crate::ceph::OsdInfo {
                id: OsdId(id),
                up: true,
                is_in: true,
                up_from: 5,
                noout: with_noout.contains(&id),
                state: vec!["exists".into(), "up".into()],
            };
            (OsdId(id), info)
        })
        .into();
    crate::ceph::OsdDump {
        epoch: 9,
        osds,
        require_osd_release: None,
        placement: crate::ceph::Placement::default(),
    }
}

/// Records the step, sets noout on osd.3 and osd.4 and deletes a pod, Ceph's `osd dump`
/// showing noout on `confirmed`.
async fn gated_step(
    confirmed: &[u32],
) -> (
    ScriptedApi,
    crate::ceph::fake::ScriptedCeph,
    Result<(), ExecuteError>,
) {
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
    let ceph = crate::ceph::fake::ScriptedCeph::default()
        .on_add_noout(Ok(()))
        .on_osd_dump(Ok(dump(confirmed)));
    let fixture = Fixture::new(&client, cr());
    let executor = Executor {
        ceph: Some(&ceph),
        ..fixture.executor()
    };
    let actions = [
        Action::RecordCephStep,
        Action::SetNoout {
            ids: vec![OsdId(3), OsdId(4)],
            covered: vec![OsdId(3), OsdId(4)],
        },
        delete("osd-h1-sdb-x"),
    ];
    let result = executor
        .apply_actions(&actions, &CephOsdStatus::default(), &|_| {})
        .await;
    (api, ceph, result)
}

#[tokio::test]
async fn a_noout_read_back_that_disagrees_stops_before_any_delete() {
    use crate::ceph::fake::Call;
    let (api, ceph, result) = gated_step(&[3]).await;
    let error = result.expect_err("noout on osd.4 is not confirmed");
    assert_eq!(error.category(), Failure::NooutNotConfirmed);
    assert_eq!(
        error.summary(),
        "noout was set on osd.3, osd.4 but `ceph osd dump` shows it missing on osd.4: no pod is \
         taken down"
    );
    assert_eq!(
        api.writes(),
        [(
            Method::PATCH,
            "/apis/ceph.elemental.net/v1alpha1/namespaces/ceph/cephosds/ceph-osds/status"
                .to_owned()
        )],
        "the step recorded first, then nothing"
    );
    assert_eq!(
        ceph.calls(),
        [Call::AddNoout(vec![OsdId(3), OsdId(4)]), Call::OsdDump]
    );

    // Confirmed: the delete follows.
    let (api, _, result) = gated_step(&[3, 4]).await;
    result.expect("applied");
    let methods: Vec<Method> = api.writes().into_iter().map(|(m, _)| m).collect();
    assert_eq!(methods, [Method::PATCH, Method::DELETE]);
    assert!(api.event_reasons().contains(&"Noout".to_owned()));
}

#[tokio::test]
async fn noout_without_ceph_configured_is_an_error_not_a_silent_skip() {
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
    let actions = [
        Action::SetNoout {
            ids: vec![OsdId(3)],
            covered: vec![OsdId(3)],
        },
        delete("osd-h1-sdb-x"),
    ];
    let (result, _) = apply_all(&client, &actions).await;
    let error = result.expect_err("no Ceph");
    assert_eq!(error.category(), Failure::Ceph);
    assert!(api.writes().is_empty());
}

#[tokio::test]
async fn a_step_handed_over_sets_noout_deletes_then_clears_the_ended_steps() {
    use crate::ceph::fake::Call;
    let setting_and_clearing = |dumped: &[u32]| {
        crate::ceph::fake::ScriptedCeph::default()
            .on_add_noout(Ok(()))
            .on_rm_noout(Ok(()))
            .on_osd_dump(Ok(dump(dumped)))
            .on_osd_dump(Ok(dump(dumped)))
    };
    let actions = [
        Action::SetNoout {
            ids: vec![OsdId(4)],
            // The ended step's osd.3 is its own CephOSD's.
            covered: vec![OsdId(3), OsdId(4)],
        },
        delete("osd-h1-sdb-x"),
        Action::ClearNoout {
            ids: vec![OsdId(3)],
        },
    ];
    let actions = &actions[..];
    let run = |ceph: crate::ceph::fake::ScriptedCeph| async move {
        let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
        let fixture = Fixture::new(&client, cr());
        let executor = Executor {
            ceph: Some(&ceph),
            ..fixture.executor()
        };
        let result = executor
            .apply_actions(actions, &CephOsdStatus::default(), &|_| {})
            .await;
        (api, ceph.calls(), result)
    };
    let (api, calls, result) = run(setting_and_clearing(&[4])).await;
    result.expect("confirmed");
    assert_eq!(
        calls,
        [
            Call::AddNoout(vec![OsdId(4)]),
            Call::OsdDump,
            Call::RmNoout(vec![OsdId(3)]),
            Call::OsdDump,
        ]
    );
    let methods: Vec<Method> = api.writes().into_iter().map(|(m, _)| m).collect();
    assert_eq!(methods, [Method::DELETE]);
    assert!(api.event_reasons().contains(&"Noout".to_owned()));

    // The ended step's noout still shows after the clear: the pod is down already (the next
    // step's noout was confirmed), the failure is told.
    let (api, _, result) = run(setting_and_clearing(&[3, 4])).await;
    let error = result.expect_err("osd.3 still has noout");
    assert_eq!(error.category(), Failure::NooutNotConfirmed);
    let methods: Vec<Method> = api.writes().into_iter().map(|(m, _)| m).collect();
    assert_eq!(methods, [Method::DELETE]);

    // The next step's noout not confirmed: nothing is taken down, nothing cleared.
    let (api, calls, result) = run(setting_and_clearing(&[3])).await;
    assert_eq!(
        result.expect_err("osd.4 lacks noout").category(),
        Failure::NooutNotConfirmed
    );
    assert!(api.writes().is_empty(), "{:?}", api.writes());
    assert_eq!(calls, [Call::AddNoout(vec![OsdId(4)]), Call::OsdDump]);
}

/// Marks osd.3 and osd.4 out (`out`) or in, Ceph's `osd dump` showing `in_after` in.
async fn marked(
    out: bool,
    in_after: &[u32],
) -> (
    ScriptedApi,
    crate::ceph::fake::ScriptedCeph,
    Result<(), ExecuteError>,
) {
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
    let mut after = dump(&[]);
    for info in after.osds.values_mut() {
        info.is_in = in_after.contains(&info.id.0);
    }
    let ceph = crate::ceph::fake::ScriptedCeph::default()
        .on_osd_out(Ok(()))
        .on_osd_in(Ok(()))
        .on_osd_dump(Ok(after));
    let fixture = Fixture::new(&client, cr());
    let executor = Executor {
        ceph: Some(&ceph),
        ..fixture.executor()
    };
    let ids = vec![OsdId(3), OsdId(4)];
    let action = if out {
        Action::MarkOut { ids }
    } else {
        Action::MarkIn { ids }
    };
    let result = executor
        .apply_actions(
            &[action, delete("osd-h1-sdb-x")],
            &CephOsdStatus::default(),
            &|_| {},
        )
        .await;
    (api, ceph, result)
}

#[tokio::test]
async fn out_and_in_are_confirmed_by_osd_dump_before_anything_else() {
    use crate::ceph::fake::Call;
    let (api, ceph, result) = marked(true, &[4]).await;
    let error = result.expect_err("osd.4 is still in");
    assert_eq!(
        error.summary(),
        "osd.3, osd.4 was marked out but `ceph osd dump` does not show osd.4 so"
    );
    assert!(api.writes().is_empty(), "no pod deleted");
    assert_eq!(
        ceph.calls(),
        [Call::OsdOut(vec![OsdId(3), OsdId(4)]), Call::OsdDump]
    );
    let (api, _, result) = marked(true, &[]).await;
    result.expect("both out");
    assert!(api.event_reasons().contains(&"Drain".to_owned()));
    let (_, ceph, result) = marked(false, &[3, 4]).await;
    result.expect("both in");
    assert_eq!(ceph.calls()[0], Call::OsdIn(vec![OsdId(3), OsdId(4)]));
}

#[tokio::test]
async fn a_noout_read_back_beside_another_steps_flag_is_cleared_and_nothing_goes_down() {
    use crate::ceph::fake::Call;
    // The step on osd.3 was asked about alone; osd.4's noout (another step, opened meanwhile)
    // shows in the read-back.
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
    let ceph = crate::ceph::fake::ScriptedCeph::default()
        .on_add_noout(Ok(()))
        .on_osd_dump(Ok(dump(&[3, 4])))
        .on_rm_noout(Ok(()))
        .on_osd_dump(Ok(dump(&[4])));
    let fixture = Fixture::new(&client, cr());
    let executor = Executor {
        ceph: Some(&ceph),
        ..fixture.executor()
    };
    let actions = [
        Action::SetNoout {
            ids: vec![OsdId(3)],
            covered: vec![OsdId(3)],
        },
        delete("osd-h1-sdb-x"),
    ];
    let result = executor
        .apply_actions(&actions, &CephOsdStatus::default(), &|_| {})
        .await;
    let error = result.expect_err("steps crossed");
    assert_eq!(error.category(), Failure::StepsCrossed);
    assert_eq!(
        error.summary(),
        "another step opened on this Ceph cluster meanwhile: `ceph osd dump` shows noout on \
         osd.4, which the question before this step did not cover; the noout just set on osd.3 \
         was cleared again and no pod is taken down (Ceph is asked again, about both)"
    );
    assert!(api.writes().is_empty(), "{:?}", api.writes());
    assert_eq!(
        ceph.calls(),
        [
            Call::AddNoout(vec![OsdId(3)]),
            Call::OsdDump,
            Call::RmNoout(vec![OsdId(3)]),
            Call::OsdDump,
        ]
    );
}

/// `RequireOsdRelease` on the scripted Ceph whose `osd dump` reads back `after`.
async fn raised(after: Option<crate::ceph::Release>) -> (ScriptedApi, Result<(), ExecuteError>) {
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
    let mut dump = dump(&[]);
    dump.require_osd_release = after;
    let ceph = crate::ceph::fake::ScriptedCeph::default()
        .on_require_osd_release(Ok(()))
        .on_osd_dump(Ok(dump));
    let fixture = Fixture::new(&client, cr());
    let executor = Executor {
        ceph: Some(&ceph),
        ..fixture.executor()
    };
    let action = Action::RequireOsdRelease {
        release: crate::ceph::Release::REEF,
    };
    let result = executor
        .apply_actions(&[action], &CephOsdStatus::default(), &|_| {})
        .await;
    (api, result)
}

#[tokio::test]
async fn a_raised_release_is_confirmed_by_osd_dump_and_said() {
    use crate::ceph::Release;
    let (api, result) = raised(Some(Release::REEF)).await;
    result.expect("raised");
    assert!(api.event_reasons().contains(&"Finalize".to_owned()));
    let (api, result) = raised(Some(Release::PACIFIC)).await;
    let error = result.expect_err("not raised");
    assert_eq!(
        error.summary(),
        "require_osd_release was raised to reef (18) but `ceph osd dump` shows pacific (16)"
    );
    assert!(!api.event_reasons().contains(&"Finalize".to_owned()));
}

/// Destroys osd.3 as planned at OSD map epoch 9, Ceph's `osd dump` at `epoch_now` before, and
/// showing it destroyed after.
async fn destroyed_at(
    epoch_now: u64,
) -> (
    ScriptedApi,
    crate::ceph::fake::ScriptedCeph,
    Result<(), ExecuteError>,
) {
    let (api, client) = ScriptedApi::client(|_, _| (StatusCode::OK, ""));
    let before = crate::ceph::OsdDump {
        epoch: epoch_now,
        ..dump(&[])
    };
    let mut after = before.clone();
    for info in after.osds.values_mut().filter(|o| o.id == OsdId(3)) {
        info.state.push("destroyed".to_owned());
    }
    let ceph = crate::ceph::fake::ScriptedCeph::default()
        .on_osd_dump(Ok(before))
        .on_osd_destroy(Ok(()))
        .on_osd_dump(Ok(after));
    let fixture = Fixture::new(&client, cr());
    let executor = Executor {
        ceph: Some(&ceph),
        ..fixture.executor()
    };
    let result = executor
        .apply_actions(
            &[Action::DestroyOsd {
                id: OsdId(3),
                epoch: 9,
            }],
            &CephOsdStatus::default(),
            &|_| {},
        )
        .await;
    (api, ceph, result)
}

#[tokio::test]
async fn a_destroy_is_made_only_at_the_epoch_its_safe_to_destroy_passed_at() {
    use crate::ceph::fake::Call;
    let (api, ceph, result) = destroyed_at(9).await;
    result.expect("destroyed");
    assert_eq!(
        ceph.calls(),
        [Call::OsdDump, Call::OsdDestroy(OsdId(3)), Call::OsdDump]
    );
    assert!(api.event_reasons().contains(&"DiskReplacement".to_owned()));
    // The map moved on between the answer and the destroy: nothing destroyed, asked again.
    let (_, ceph, result) = destroyed_at(10).await;
    let error = result.expect_err("the epoch moved");
    assert!(
        error
            .summary()
            .contains("moved from epoch 9 (where safe-to-destroy passed) to 10"),
        "{}",
        error.summary()
    );
    assert_eq!(ceph.calls(), [Call::OsdDump]);
}
