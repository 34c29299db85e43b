//! The Ceph gate on clusters as users have them, over real OSD daemons: "complete" only once
//! Ceph agrees (the last step ended, its `noout` cleared, every PG clean), an admin's own
//! `noout` on an OSD the rollout steps kept, and the later steps asked about together with it, and a CephOSD the operator
//! cannot read (stored before the schema bounded `partition`) reported on its own object while
//! a gated step of another CephOSD ends and its rollout completes.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`; the cluster installs them when missing).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use ceph_osd_operator::crd::{custom_resource_definition, CephOsd, UpdateDomain};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::gated::Gated;
use molecule_like_tests::journeys::plugin::kubectl_ceph_osd;
use molecule_like_tests::kubernetes::manifests::{CR, FIELD_MANAGER};
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use molecule_like_tests::recording::ceph::Observed;
use serde_json::{json, Value};

const LONG: Duration = Duration::from_mins(3);

/// Every check of a gated rollout by host from `from` but the `noout` at the end: one host
/// down at most and no PG unavailable in Ceph's view, one pod per disk and host by host in
/// the pod watch.
async fn check_rollout(g: &Gated, from: Duration, report: &str) -> anyhow::Result<()> {
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    let recording = g.ceph.recording();
    recording.check_hosts_down_at_most(1, from).map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    g.bridge.check().map_err(fail)?;
    g.s.assert_one_pod_per_key().await.map_err(fail)?;
    g.s.recorder()?
        .timeline()
        .check_rollout(&g.old_pods(), UpdateDomain::Host)
        .map_err(fail)
}

/// `kubectl ceph-osd status --until complete` returns only once Ceph agrees: at that moment
/// the status has no open step, no OSD has `noout`, every PG is clean. The admin's `noout` on
/// the OSD of the first host the rollout steps is kept by that step (said in an event); every
/// later step is asked about together with it, and waits, naming it, while Ceph refuses both
/// down; the admin clears it, the rollout completes. The operator never clears it: it is in
/// every osdmap until the admin's own clear.
#[tokio::test]
async fn complete_waits_for_ceph_and_an_admins_noout_stays() -> anyhow::Result<()> {
    let g = Gated::up("gateusers-done").await?;
    // The admin's maintenance flag on the OSD of one host the rollout will step.
    let (admin_key, admin_osd) = g.first_in_rollout_order();
    let admin_noout = g.add_admin_noout(admin_osd, LONG).await?;

    let from = g.ceph.elapsed();
    let t_roll = Instant::now();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    let asked_with = format!("asked together with {admin_noout}, which carries noout");
    let until = kubectl_ceph_osd(
        &g.s,
        &["status", "--until", "complete", "--timeout", "300s"],
    );
    // The admin's maintenance ends once a step waits for it, as README advises.
    let admin = async {
        let held =
            g.s.wait_until(
                "a step asked together with the admin's noout",
                LONG,
                || async {
                    let c = g.gate_condition().await?;
                    Ok(c.filter(|(_, _, m)| m.contains(&asked_with)))
                },
            )
            .await?;
        let cleared_at = g.ceph.elapsed();
        g.cluster.cli(&["osd", "rm-noout", &admin_noout]).await?;
        anyhow::Ok((held, cleared_at))
    };
    let (until, admin) = tokio::join!(until, admin);
    let (code, out, err) = until?;
    let (held, cleared_at) = admin?;
    let returned = t_roll.elapsed();
    // Ceph at that moment, asked directly.
    let (map, pgs) = (g.cluster.osd_dump().await?, g.cluster.pg_stat().await?);
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    let report = g.report(from);
    anyhow::ensure!(code == 0, "--until complete: {code} {err}\n{out}\n{report}");
    anyhow::ensure!(out.contains("(Complete)"), "{out}");
    anyhow::ensure!(
        status.ceph_step.is_none(),
        "complete with a step open: {:?}\n{report}",
        status.ceph_step
    );
    anyhow::ensure!(
        map.noout().is_empty(),
        "at completion noout is on {:?}, the admin cleared {admin_noout}\n{report}",
        map.noout()
    );
    anyhow::ensure!(
        pgs.all_clean(),
        "at completion the PGs are {:?}\n{report}",
        pgs.by_state
    );
    let rolled = g.s.wait_converged(CR, &g.want, &hash, LONG).await?;
    check_rollout(&g, from, &report).await?;

    // The admin's noout in every osdmap of the rollout until the admin cleared it, though the
    // rollout stopped that OSD.
    let maps = admin_noout_kept(&g, (from, cleared_at), admin_osd, &report)?;
    let (old_pod, new_pod) = (
        g.converged.pods[&admin_key].name_any(),
        rolled[&admin_key].name_any(),
    );
    let stopped = g.bridge.daemons_of(admin_osd, &[&old_pod, &new_pod])?;
    anyhow::ensure!(
        stopped[0].stopping.is_some(),
        "the rollout never stopped osd.{admin_osd}"
    );
    let events = g.s.cr_events(CR).await?;
    let said = format!("noout on {admin_noout} was set before this step, not by the operator");
    anyhow::ensure!(
        events.iter().any(|e| e.reason.as_deref() == Some("Noout")
            && e.note.as_deref().is_some_and(|n| n.starts_with(&said))),
        "no event says the admin's noout stays\n{}",
        molecule_like_tests::journeys::scenario::describe_events(&events)
    );
    // A step ending or Ceph being asked is progress: never a Halted event.
    let halts: Vec<&str> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Halted"))
        .filter_map(|e| e.note.as_deref())
        .filter(|n| n.contains("has not ended") || n.contains("asking Ceph"))
        .collect();
    anyhow::ensure!(halts.is_empty(), "halts of a healthy rollout: {halts:?}");
    println!(
        "==== --until complete returned {:.1}s after the template change, with every PG clean \
         and no noout; the admin's {admin_noout} in each of {maps} osdmaps until the admin \
         cleared it at {:.1}s, once a step waited for it: {} {}: {}",
        returned.as_secs_f64(),
        cleared_at.as_secs_f64(),
        held.0,
        held.1,
        held.2
    );
    g.down().await
}

/// How many osdmaps were recorded from `from` until `cleared_at`; each must show the admin's
/// `noout` on `admin_osd`.
fn admin_noout_kept(
    g: &Gated,
    (from, cleared_at): (Duration, Duration),
    admin_osd: u32,
    report: &str,
) -> anyhow::Result<usize> {
    let recording = g.ceph.recording();
    let mut maps = 0;
    for e in (recording.events.iter()).filter(|e| e.at >= from && e.at < cleared_at) {
        if let Observed::OsdMap(m) = &e.observed {
            maps += 1;
            anyhow::ensure!(
                m.osd(admin_osd).is_some_and(|o| o.noout),
                "the admin's noout on osd.{admin_osd} was gone at {:.2}s\n{report}",
                e.at.as_secs_f64()
            );
        }
    }
    Ok(maps)
}

/// The CRD with `spec.partition`'s rule removed (as the CRD was before it bounded the value),
/// or restored as the operator generates it.
async fn partition_unbounded(g: &Gated, unbounded: bool) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(g.s.client.clone());
    let mut crd = serde_json::to_value(custom_resource_definition()?)?;
    if unbounded {
        let pointer =
            "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/partition";
        if let Some(Value::Object(partition)) = crd.pointer_mut(pointer) {
            partition.remove("x-kubernetes-validations");
        }
    }
    api.patch(
        crd["metadata"]["name"].as_str().unwrap_or_default(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await?;
    Ok(())
}

/// A CephOSD the operator cannot read, created in the scenario's namespace while the schema
/// let `partition: 2147483648` through (retried until the relaxed schema is in force).
async fn create_unreadable(g: &Gated, name: &str) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        g.s.client.clone(),
        &g.s.namespace,
        &ApiResource::erase::<CephOsd>(&()),
    );
    let body: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ceph.elemental.net/v1alpha1",
        "kind": "CephOSD",
        "metadata": {"name": name, "namespace": g.s.namespace},
        "spec": {
            "storage": [{"hosts": [g.s.host("unread")], "osds": [{"data": "/dev/sdq"}]}],
            "updateDomain": "Host",
            "partition": 2_147_483_648_i64,
            "podTemplate": {"metadata": {"labels": {"a": "b"}},
                            "spec": {"containers": [{"name": "osd", "image": "x"}]}},
        }
    }))?;
    partition_unbounded(g, true).await?;
    let created =
        g.s.wait_until(
            "the relaxed schema in force",
            Duration::from_secs(30),
            || {
                let (api, body) = (api.clone(), body.clone());
                async move {
                    match api.create(&PostParams::default(), &body).await {
                        Ok(_) => Ok(Some(())),
                        Err(kube::Error::Api(e)) if e.code == 422 => Ok(None),
                        Err(other) => Err(other.into()),
                    }
                }
            },
        )
        .await;
    partition_unbounded(g, false).await?;
    created
}

/// A CephOSD the operator cannot read appears while a gated step of another CephOSD is open,
/// and the operator restarts (as a rescheduled pod does): the open step ends, the rollout
/// completes with one host down at most, the unreadable object says why on itself (condition
/// and Warning event), and the log names it once per process. The schema now refuses the
/// value, naming the field.
#[tokio::test]
async fn an_unreadable_cephosd_is_reported_and_stops_no_other() -> anyhow::Result<()> {
    let mut g = Gated::up("gateusers-unread").await?;
    // Refused by the schema as it is now, naming the field.
    check_out_of_bound_refused(&g).await?;

    let from = g.ceph.elapsed();
    let (_, hash) =
        g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
            .await?;
    g.wait_gate("a step open with noout", LONG, |s| {
        s.ceph_step.as_ref().is_some_and(|s| !s.noout.is_empty())
    })
    .await?;
    create_unreadable(&g, "too-big").await?;
    g.s.stop_operator();
    let args = g.operator_args.clone();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    g.s.start_operator_with_args(&OperatorOptions::default(), &args)?;

    g.s.wait_converged(CR, &g.want, &hash, LONG).await?;
    g.wait_gate_idle(LONG).await?;
    let report = g.report(from);
    check_rollout(&g, from, &report).await?;
    g.ceph.recording().check_no_noout_at_end()?;

    // The unreadable object says why, on itself.
    let api: Api<DynamicObject> = Api::namespaced_with(
        g.s.client.clone(),
        &g.s.namespace,
        &ApiResource::erase::<CephOsd>(&()),
    );
    let message = check_reported_on_itself(&g, &api, "too-big").await?;
    // One log line per operator process for the object, not one per retried LIST.
    let log = g.s.operator_log();
    let lines = log
        .lines()
        .filter(|l| l.contains("a CephOSD cannot be read"))
        .count();
    anyhow::ensure!(
        (1..=2).contains(&lines),
        "{lines} log lines about the unreadable CephOSD (two processes)"
    );
    println!(
        "==== an unreadable CephOSD during a gated step: the rollout completed, {lines} log \
         line(s) about it, the operator's log {} bytes; its condition: {message}",
        log.len()
    );
    api.delete("too-big", &kube::api::DeleteParams::default())
        .await?;
    g.down().await
}

/// `partition` and `canary` of 2147483648 are refused by the schema as it is now (the CRD as
/// this build generates it, in force), naming the field.
async fn check_out_of_bound_refused(g: &Gated) -> anyhow::Result<()> {
    let mut manifest = json!({
        "apiVersion": "ceph.elemental.net/v1alpha1",
        "kind": "CephOSD",
        "metadata": {"name": "refused", "namespace": g.s.namespace},
        "spec": {
            "storage": [{"hosts": [g.s.host("unread")], "osds": [{"data": "/dev/sdq"}]}],
            "updateDomain": "Host",
            "podTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
        }
    });
    // The CRD as this build generates it (a schema change takes a moment to be in force).
    partition_unbounded(g, false).await?;
    for field in ["partition", "canary"] {
        manifest["spec"][field] = json!(2_147_483_648_i64);
        let body = serde_json::to_string(&manifest)?;
        let message =
            g.s.wait_until("the bound in force", Duration::from_secs(30), || async {
                if let Err(message) = g.s.create_cr_raw(body.clone()).await? {
                    return Ok(Some(message));
                }
                let api: Api<DynamicObject> = Api::namespaced_with(
                    g.s.client.clone(),
                    &g.s.namespace,
                    &ApiResource::erase::<CephOsd>(&()),
                );
                api.delete("refused", &kube::api::DeleteParams::default())
                    .await?;
                Ok(None)
            })
            .await?;
        anyhow::ensure!(
            message.contains(&format!(
                "spec.{field} must be an integer from 0 to 2147483647"
            )),
            "{field}: 2147483648 not refused by name: {message:?}"
        );
        manifest["spec"].as_object_mut().unwrap().remove(field);
    }

    Ok(())
}

/// The unreadable CephOSD `name` says why on itself: `InvalidSpec` True `Unreadable` naming
/// `spec.partition`, phase `Error`, a Warning event. Returns the condition's message.
async fn check_reported_on_itself(
    g: &Gated,
    api: &Api<DynamicObject>,
    name: &str,
) -> anyhow::Result<String> {
    let reported =
        g.s.wait_until("the unreadable CephOSD's condition", LONG, || async {
            let object = serde_json::to_value(api.get(name).await?)?;
            let condition = object["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "InvalidSpec"))
                .cloned();
            Ok(condition
                .filter(|c| c["reason"] == "Unreadable")
                .map(|c| (object["status"]["phase"].clone(), c)))
        })
        .await?;
    let (phase, condition) = reported;
    let message = condition["message"].as_str().unwrap_or_default();
    anyhow::ensure!(phase == "Error", "phase {phase}");
    anyhow::ensure!(
        condition["status"] == "True"
            && message.starts_with("the operator cannot read this CephOSD (spec.partition:"),
        "{condition}"
    );
    let events = g.s.cr_events(name).await?;
    anyhow::ensure!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("Unreadable")
                && e.type_.as_deref() == Some("Warning")),
        "no Unreadable event\n{}",
        molecule_like_tests::journeys::scenario::describe_events(&events)
    );
    Ok(message.to_owned())
}
