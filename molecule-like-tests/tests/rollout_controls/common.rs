//! What the rollout-control scenarios share: creating the CephOSDs, reading conditions
//! and counts, waiting for a status, checking a rollout done and pods untouched.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ceph_osd_operator::crd::{CephOsd, CephOsdStatus, Phase};
use ceph_osd_operator::labels;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{Converged, Scenario, CONVERGE, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, CR,
};
use molecule_like_tests::kubernetes::pods::{annotation, pod_key};
use serde_json::Value;

/// Creates CephOSD `CR` (`devices` on each of `hosts`, update domain `domain`, the fast sample
/// template, plus the spec fields of `extra`: rollout controls) and waits until its pods
/// converge.
pub(crate) async fn create_osds(
    s: &Scenario,
    hosts: &[impl AsRef<str>],
    devices: &[&str],
    domain: &str,
    extra: Value,
) -> anyhow::Result<Converged> {
    let mut manifest = cephosd(CR, storage(hosts, devices), domain, fast_sample_template()?);
    if let (Some(spec), Some(extra)) = (manifest["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    s.create_converged(&manifest, keys(hosts, devices)).await
}

pub(crate) fn condition<'a>(status: &'a CephOsdStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// (status, reason) of a condition, or ("-", "-") when missing.
pub(crate) fn cond(status: &CephOsdStatus, type_: &str) -> (String, String) {
    condition(status, type_).map_or_else(
        || ("-".to_owned(), "-".to_owned()),
        |c| (c.status.clone(), c.reason.clone()),
    )
}

pub(crate) fn counts(s: &CephOsdStatus) -> [i64; 7] {
    [
        s.desired,
        s.current,
        s.ready,
        s.updated,
        s.out_of_date,
        s.unready,
        s.invalid,
    ]
}

/// Polls CR `CR`'s status until `pred` holds.
pub(crate) async fn wait_status<F>(
    s: &Scenario,
    what: &str,
    timeout: Duration,
    pred: F,
) -> anyhow::Result<CephOsdStatus>
where
    F: Fn(&CephOsdStatus) -> bool,
{
    let pred = &pred;
    s.wait_until(&format!("status: {what}"), timeout, || async move {
        let status = s.cr_status(CR).await?;
        Ok(status.filter(|st| pred(st)))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Polls CR `CR`'s status until it is phase Ready for `cr`'s generation.
pub(crate) async fn wait_ready(
    s: &Scenario,
    what: &str,
    cr: &CephOsd,
) -> anyhow::Result<CephOsdStatus> {
    wait_status(s, what, CONVERGE, |st| {
        st.phase == Some(Phase::Ready) && st.observed_generation == cr.metadata.generation
    })
    .await
}

/// A rollout to template `hash` completes: the pods of `want` converge on it, then the status
/// turns Ready for `cr`'s generation (`what`) and is the converged status of those OSDs.
pub(crate) async fn check_rolled_out(
    s: &Scenario,
    what: &str,
    want: &BTreeSet<OsdKey>,
    hash: &str,
    cr: &CephOsd,
) -> anyhow::Result<()> {
    s.wait_converged(CR, want, hash, ROLLOUT).await?;
    let st = wait_ready(s, what, cr).await?;
    check_converged_status(
        &st,
        i64::try_from(want.len())?,
        hash,
        cr.metadata.generation,
    )
}

/// The status of a converged CR of `n` OSDs on template `hash` at `generation`.
pub(crate) fn check_converged_status(
    st: &CephOsdStatus,
    n: i64,
    hash: &str,
    generation: Option<i64>,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        counts(st) == [n, n, n, n, 0, 0, 0],
        "counts desired/current/ready/updated/outOfDate/unready/invalid {:?} != {n} ready: {st:?}",
        counts(st)
    );
    anyhow::ensure!(st.phase == Some(Phase::Ready), "phase {:?}", st.phase);
    anyhow::ensure!(st.template_hash.as_deref() == Some(hash), "{st:?}");
    anyhow::ensure!(
        st.observed_generation == generation && generation.is_some(),
        "observedGeneration {:?} != generation {generation:?}",
        st.observed_generation
    );
    anyhow::ensure!(st.current_update.is_empty(), "currentUpdate {st:?}");
    let want = [
        ("Ready", "True", "AllOsdsReady"),
        ("Progressing", "False", "Complete"),
        ("Stalled", "False", "WithinDeadline"),
        ("InvalidSpec", "False", "SpecValid"),
    ];
    for (t, status, reason) in want {
        anyhow::ensure!(
            cond(st, t) == (status.to_owned(), reason.to_owned()),
            "condition {t}: {:?}, want {status}/{reason}; {st:?}",
            cond(st, t)
        );
        let c = condition(st, t).map(|c| c.observed_generation);
        anyhow::ensure!(
            c == Some(generation),
            "condition {t} observedGeneration {c:?}"
        );
    }
    Ok(())
}

/// Fails unless every pod of `uids` (key → uid) still exists and is not terminating.
pub(crate) async fn untouched(s: &Scenario, uids: &BTreeMap<OsdKey, String>) -> anyhow::Result<()> {
    let pods = s.owned_pods(CR).await?;
    for (key, uid) in uids {
        let alive = pods.iter().any(|p| {
            p.uid().as_deref() == Some(uid.as_str()) && p.metadata.deletion_timestamp.is_none()
        });
        anyhow::ensure!(
            alive,
            "the pod of {key} ({uid}) was deleted while the rollout should stand still"
        );
    }
    Ok(())
}

pub(crate) fn uid_map(pods: &BTreeMap<OsdKey, Pod>, of: &[&OsdKey]) -> BTreeMap<OsdKey, String> {
    of.iter()
        .map(|k| ((*k).clone(), pods[*k].uid().unwrap_or_default()))
        .collect()
}

/// The live (not terminating) pod of `key` on template `hash`, if any.
pub(crate) async fn pod_on(s: &Scenario, key: &OsdKey, hash: &str) -> anyhow::Result<Option<Pod>> {
    Ok(s.owned_pods(CR).await?.into_iter().find(|p| {
        pod_key(p).as_ref() == Some(key)
            && annotation(p, labels::TEMPLATE_HASH) == Some(hash)
            && p.metadata.deletion_timestamp.is_none()
    }))
}
