//! The operator as seen from outside: its Events, leader election, no writes in steady
//! state, `/metrics` and the probes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::Phase;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, ListParams, WatchParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{
    describe_events, hold, Converged, Scenario, CONVERGE, ROLLOUT,
};
use molecule_like_tests::kubernetes::manifests::CR;
use molecule_like_tests::kubernetes::operator::{
    free_port, http_get, lease_holder, OperatorOptions, OperatorProcess,
};
use molecule_like_tests::recording::pods::{EventKind, WatchRecorder};
use serde_json::json;

use crate::common::{check_converged_status, create_osds, wait_ready, wait_status};

// 5 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c5_events_tell_the_story_of_a_host_rollout() -> anyhow::Result<()> {
    let s = Scenario::converge("events").await?;
    let hosts = s.hosts(["w1", "w2"]);
    let data = ["/dev/sdb"];
    let [k1, k2] = hosts.clone().map(|h| OsdKey::new(h, "/dev/sdb"));
    let Converged {
        want, cr, pods: v1, ..
    } = create_osds(&s, &hosts, &data, "Host", json!({})).await?;
    let cr_uid = cr.uid().unwrap_or_default();
    let (cr, h2) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let v2 = s.wait_converged(CR, &want, &h2, ROLLOUT).await?;
    wait_ready(&s, "Ready", &cr).await?;

    const ACTIONS: [&str; 4] = ["Created", "Replacing", "Recreated", "Deleted"];
    let events = s
        .wait_until("six action events", Duration::from_secs(10), || async {
            let events = s.cr_events(CR).await?;
            let n = events
                .iter()
                .filter(|e| ACTIONS.contains(&e.reason.as_deref().unwrap_or("")))
                .count();
            Ok((n >= 6).then_some(events))
        })
        .await?;
    let story = describe_events(&events);
    let actions: Vec<&K8sEvent> = events
        .iter()
        .filter(|e| ACTIONS.contains(&e.reason.as_deref().unwrap_or("")))
        .collect();
    let got: Vec<(&str, String)> = actions
        .iter()
        .map(|e| {
            (
                e.reason.as_deref().unwrap_or(""),
                e.related
                    .as_ref()
                    .and_then(|r| r.name.clone())
                    .unwrap_or_default(),
            )
        })
        .collect();
    let name = |pods: &BTreeMap<OsdKey, Pod>, k: &OsdKey| pods[k].name_any();
    let mut first_two = vec![got[0].clone(), got[1].clone()];
    first_two.sort();
    let mut created: Vec<(&str, String)> =
        vec![("Created", name(&v1, &k1)), ("Created", name(&v1, &k2))];
    created.sort();
    let expected_rest = vec![
        ("Replacing", name(&v1, &k1)),
        ("Created", name(&v2, &k1)),
        ("Replacing", name(&v1, &k2)),
        ("Created", name(&v2, &k2)),
    ];
    anyhow::ensure!(
        got.len() == 6 && first_two == created && got[2..] == expected_rest[..],
        "events (reason, pod) {got:?}\nexpected {created:?} then {expected_rest:?}\n{story}"
    );
    // Each note names the pod and the OSD key; all on this CephOSD, Normal, from us.
    let key_of = |pod: &str| -> Option<OsdKey> {
        [&v1, &v2]
            .iter()
            .flat_map(|m| m.iter())
            .find(|(_, p)| p.name_any() == pod)
            .map(|(k, _)| k.clone())
    };
    for e in &actions {
        let pod = e
            .related
            .as_ref()
            .and_then(|r| r.name.clone())
            .unwrap_or_default();
        let key = key_of(&pod).ok_or_else(|| anyhow::anyhow!("event about unknown pod {pod}"))?;
        let note = e.note.as_deref().unwrap_or("");
        let regarding = e.regarding.as_ref();
        anyhow::ensure!(
            note.contains(&pod)
                && note.contains(&key.to_string())
                && e.type_.as_deref() == Some("Normal")
                && e.reporting_controller.as_deref() == Some("ceph-osd-operator")
                && regarding.and_then(|r| r.uid.as_deref()) == Some(cr_uid.as_str())
                && e.related.as_ref().and_then(|r| r.kind.as_deref()) == Some("Pod"),
            "event {e:?}\n{story}"
        );
    }
    anyhow::ensure!(
        !events.iter().any(|e| e.type_.as_deref() == Some("Warning")),
        "a Warning in a clean rollout:\n{story}"
    );
    s.destroy().await
}

// 6 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c6_standby_replica_does_nothing_until_the_leader_stops() -> anyhow::Result<()> {
    let mut s = Scenario::create("leader").await?;
    s.start_recorder().await?;
    let ns = s.namespace.clone();
    // The Lease in the test's namespace: the operator's Lease Role there too.
    molecule_like_tests::kubernetes::rbac::grant_lease_in(&s.client, &ns).await?;
    let args = ["--leader-elect", "--lease-namespace", ns.as_str()];
    let options = OperatorOptions { resync_seconds: 2 };
    let id_a = format!("{ns}-a");
    let id_b = format!("{ns}-b");
    let holder = || lease_holder(&s.client, &ns);
    let a = s.spawn_operator("a", &options, &args, &[("POD_NAME", &id_a)])?;
    s.wait_until(
        "replica a holds the lease",
        Duration::from_secs(20),
        || async { Ok((holder().await?.as_deref() == Some(id_a.as_str())).then_some(())) },
    )
    .await?;
    let b = s.spawn_operator("b", &options, &args, &[("POD_NAME", &id_b)])?;
    s.wait_until(
        "replica b waits for the lease",
        Duration::from_secs(20),
        || async {
            Ok(b.log()
                .contains("waiting for the leader lease")
                .then_some(()))
        },
    )
    .await?;

    let data = ["/dev/sdb", "/dev/sdc"];
    let Converged { want, .. } = create_osds(&s, &s.hosts(["w1"]), &data, "OSD", json!({})).await?;
    wait_status(&s, "Ready", CONVERGE, |st| st.phase == Some(Phase::Ready)).await?;
    // A few resyncs: only a acts.
    check_only_the_leader_acts(&s, &a, &b, &id_a).await?;

    // SIGTERM the leader: it releases the lease, the standby takes over within seconds.
    let b_reconciles = b.log().matches("reconciled").count();
    let stopped = Instant::now();
    let status = a.terminate(Duration::from_secs(15)).await?;
    anyhow::ensure!(
        status.success(),
        "leader exited with {status}:\n{}",
        a.log()
    );
    anyhow::ensure!(
        a.log().contains("released the leader lease"),
        "the leader did not release the lease:\n{}",
        a.log()
    );
    s.wait_until(
        "replica b holds the lease",
        Duration::from_secs(10),
        || async { Ok((holder().await?.as_deref() == Some(id_b.as_str())).then_some(())) },
    )
    .await?;
    let took = stopped.elapsed();
    anyhow::ensure!(
        took < Duration::from_secs(8),
        "takeover took {took:?} (renew/retry period 3 s)"
    );
    s.wait_until("replica b reconciles", Duration::from_secs(15), || async {
        b.check_alive()?;
        Ok((b.log().matches("reconciled").count() > b_reconciles).then_some(()))
    })
    .await?;
    // The new leader rolls a template edit out.
    let (cr, h2) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    s.wait_converged(CR, &want, &h2, ROLLOUT).await?;
    wait_ready(&s, "Ready on the new template", &cr).await?;
    anyhow::ensure!(
        b.log().contains("deleted pod") && b.log().contains("created pod"),
        "the new leader did not roll:\n{}",
        b.log()
    );
    b.check_alive()?;
    s.assert_one_pod_per_key().await?;
    drop(b);
    s.destroy().await
}

/// A few resyncs with `a` leading (`id_a`) and `b` standing by: both alive, the lease stays
/// `a`'s, `a` reconciles, `b` neither reconciles nor writes, every event is `a`'s.
async fn check_only_the_leader_acts(
    s: &Scenario,
    a: &OperatorProcess,
    b: &OperatorProcess,
    id_a: &str,
) -> anyhow::Result<()> {
    let holder = || lease_holder(&s.client, &s.namespace);
    hold(Duration::from_secs(4), || async {
        a.check_alive()?;
        b.check_alive()?;
        anyhow::ensure!(holder().await?.as_deref() == Some(id_a), "the lease moved");
        Ok(())
    })
    .await?;
    anyhow::ensure!(
        a.log().matches("reconciled").count() >= 2,
        "the leader did not reconcile:\n{}",
        a.log()
    );
    let b_log = b.log();
    anyhow::ensure!(
        !b_log.contains("reconciled")
            && !b_log.contains("created pod")
            && !b_log.contains("acquired"),
        "the standby acted:\n{b_log}"
    );
    let events = s.cr_events(CR).await?;
    anyhow::ensure!(
        !events.is_empty()
            && events
                .iter()
                .all(|e| e.reporting_instance.as_deref() == Some(id_a)),
        "events not all from the leader {id_a}:\n{events:?}"
    );

    Ok(())
}

// 7 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c7_steady_state_makes_zero_writes() -> anyhow::Result<()> {
    let s = Scenario::converge_with("zerowrites", &OperatorOptions { resync_seconds: 2 }).await?;
    let data = ["/dev/sdb", "/dev/sdc"];
    let Converged { cr, hash: h1, .. } =
        create_osds(&s, &s.hosts(["w1", "w2"]), &data, "Host", json!({})).await?;
    let st = wait_status(&s, "Ready", CONVERGE, |st| st.phase == Some(Phase::Ready)).await?;
    check_converged_status(&st, 4, &h1, cr.metadata.generation)?;
    // Let the reconcile triggered by the last status write pass.
    let log_mark = s.operator_log().matches("reconciled").count();
    s.wait_until("one more reconcile", Duration::from_secs(10), || async {
        Ok((s.operator_log().matches("reconciled").count() > log_mark).then_some(()))
    })
    .await?;

    let pods = WatchRecorder::start(
        s.pods.clone(),
        ListParams::default(),
        WatchParams::default(),
    )
    .await?;
    let crs =
        WatchRecorder::start(s.crs.clone(), ListParams::default(), WatchParams::default()).await?;
    let event_api: Api<K8sEvent> = Api::namespaced(s.client.clone(), &s.namespace);
    let events =
        WatchRecorder::start(event_api, ListParams::default(), WatchParams::default()).await?;
    let reconciles_before = s.operator_log().matches("reconciled").count();
    // ~3 resync periods of 2 s.
    let window = Duration::from_secs(7);
    let start = Instant::now();
    while start.elapsed() < window {
        s.check_operator_alive()?;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let log = s.operator_log();
    let window_lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("reconciled"))
        .skip(reconciles_before)
        .collect();
    let reconciles = window_lines.len();
    anyhow::ensure!(
        reconciles >= 3,
        "only {reconciles} reconciles in {window:?} with --resync-seconds 2"
    );
    // Nothing changed: no INFO line (a settled CephOSD's resync is not news).
    anyhow::ensure!(
        window_lines.iter().all(|l| l.contains("DEBUG")),
        "no-op reconciles logged above DEBUG: {window_lines:#?}"
    );
    // Their inputs were those of the last plan, which had nothing to do: not planned again.
    anyhow::ensure!(
        window_lines
            .iter()
            .filter(|l| l.contains("unchanged=true"))
            .count()
            + 1
            >= reconciles,
        "resyncs of unchanged inputs were planned again: {window_lines:#?}"
    );
    let describe =
        |kind: &str, list: Vec<(EventKind, String, Option<String>)>| format!("{kind}: {list:?}");
    let pod_writes: Vec<_> = pods
        .caught_up_events()
        .await?
        .into_iter()
        .map(|e| (e.kind, e.object.name_any(), e.object.resource_version()))
        .collect();
    let cr_writes: Vec<_> = crs
        .caught_up_events()
        .await?
        .into_iter()
        .map(|e| (e.kind, e.object.name_any(), e.object.resource_version()))
        .collect();
    let event_writes: Vec<_> = events
        .caught_up_events()
        .await?
        .into_iter()
        .map(|e| (e.kind, e.object.name_any(), e.object.resource_version()))
        .collect();
    anyhow::ensure!(
        pod_writes.is_empty() && cr_writes.is_empty() && event_writes.is_empty(),
        "writes in steady state ({reconciles} reconciles):\n{}\n{}\n{}",
        describe("pods", pod_writes),
        describe("CephOSDs", cr_writes),
        describe("events", event_writes)
    );
    // And the objects themselves: same resourceVersions as at the start of the window.
    let rvs = |items: Vec<(String, Option<String>)>| items.into_iter().collect::<BTreeMap<_, _>>();
    let before_pods = rvs(pods
        .initial
        .iter()
        .map(|p| (p.name_any(), p.resource_version()))
        .collect());
    let after_pods = rvs(s
        .list_pods()
        .await?
        .iter()
        .map(|p| (p.name_any(), p.resource_version()))
        .collect());
    anyhow::ensure!(
        before_pods == after_pods,
        "{before_pods:?} != {after_pods:?}"
    );
    let before_cr = crs.initial.first().and_then(ResourceExt::resource_version);
    let after_cr = s.crs.get(CR).await?.resource_version();
    anyhow::ensure!(before_cr == after_cr, "CR {before_cr:?} != {after_cr:?}");
    s.destroy().await
}

// 8 ------------------------------------------------------------------------------------------

#[tokio::test]
async fn c8_metrics_and_probes() -> anyhow::Result<()> {
    let mut s = Scenario::create("metrics").await?;
    s.start_recorder().await?;
    let port = free_port()?;
    let address = format!("127.0.0.1:{port}");
    s.start_operator_with_args(
        &OperatorOptions { resync_seconds: 2 },
        // The scrape below sends no token (tests/hardening.rs checks the token check).
        &["--http-address", &address, "--metrics-auth=false"],
    )?;
    let data = ["/dev/sdb", "/dev/sdc"];
    create_osds(&s, &s.hosts(["w1"]), &data, "OSD", json!({})).await?;
    let ns = s.namespace.clone();
    let updated = format!(
        r#"ceph_osd_operator_osd_pods{{namespace="{ns}",cephosd="{CR}",state="updated"}} 2"#
    );
    let ready =
        format!(r#"ceph_osd_operator_osd_pods{{namespace="{ns}",cephosd="{CR}",state="ready"}} 2"#);
    let desired = format!(r#"ceph_osd_operator_osds_desired{{namespace="{ns}",cephosd="{CR}"}} 2"#);
    let text = s
        .wait_until("/metrics shows 2 updated, Ready pods", CONVERGE, || async {
            let Ok((code, body)) = http_get(port, "/metrics").await else {
                return Ok(None);
            };
            let has = |l: &str| body.lines().any(|x| x == l);
            Ok((code == 200 && has(&updated) && has(&ready) && has(&desired)).then_some(body))
        })
        .await?;
    let reconciles: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("ceph_osd_operator_reconciles_total "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no reconciles_total in\n{text}"))?;
    anyhow::ensure!(reconciles > 0, "reconciles_total {reconciles}");
    // Every request the operator sends is counted: at least the two pod creations.
    let pods_created: u64 = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"ceph_osd_operator_api_requests_total{verb="post",resource="pods"} "#)
        })
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no pod POSTs in api_requests_total in\n{text}"))?;
    anyhow::ensure!(pods_created >= 2, "{pods_created} pod POSTs counted");
    anyhow::ensure!(
        text.lines()
            .any(|l| l.starts_with("ceph_osd_operator_reconcile_duration_seconds_count ")),
        "no duration histogram in\n{text}"
    );
    let (code, body) = http_get(port, "/healthz").await?;
    anyhow::ensure!(code == 200, "/healthz {code} {body}");
    let (code, body) = http_get(port, "/readyz").await?;
    anyhow::ensure!(code == 200, "/readyz {code} {body}");
    let (code, _) = http_get(port, "/nope").await?;
    anyhow::ensure!(code == 404, "/nope {code}");
    s.destroy().await
}
