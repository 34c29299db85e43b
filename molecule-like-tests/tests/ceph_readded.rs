//! OSDs out in Ceph, end to end against a real Ceph (the operator's minimal-caps key, its
//! OSD daemons run by the bridge for KWOK's pods): a host removed from the spec is drained
//! and stopped (down and out), then put back: its new pod's daemon boots `out`, and the
//! operator, which recorded that it marked it out, marks it `in` again; every PG clean, the
//! `OsdsIn` condition True. Then an admin's own `ceph osd out` on a running OSD: never marked
//! in by the operator, named in `OsdsIn` (and the `Progressing` message, and
//! `kubectl ceph-osd status`) until the admin marks it in again. One Ceph cluster throughout.
//!
//! Needs the local control plane and a built operator (as `tests/scenarios/`), and Ceph's
//! daemons (`molecule-like-tests/ceph install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::{CephOsdStatus, MarkedBy};
use ceph_osd_operator::OsdKey;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::plugin::kubectl_ceph_osd;
use molecule_like_tests::journeys::scenario::{hold, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::{storage, CR};
use serde_json::json;

/// The `OsdsIn` condition: (status, reason, message).
fn osds_in(status: &CephOsdStatus) -> Option<(&str, &str, &str)> {
    (status.conditions.iter())
        .find(|c| c.type_ == "OsdsIn")
        .map(|c| (c.status.as_str(), c.reason.as_str(), c.message.as_str()))
}

/// 4 hosts × 1 OSD, pool size 3: the last host removed (drained, down and out, pod gone),
/// then put back: marked in once its new daemon is up, PGs clean, `OsdsIn` True; an admin's
/// `ceph osd out` on another host's running OSD: named, left out, until the admin's `in`.
#[tokio::test]
async fn a_host_put_back_after_its_drain_is_marked_in_and_an_admins_out_is_named(
) -> anyhow::Result<()> {
    let g = Gated::up_with(
        "cephre-four",
        &GatedOptions {
            hosts: &["ceph-a", "ceph-b", "ceph-c", "ceph-d"],
            ..GatedOptions::default()
        },
    )
    .await?;
    let (key, id) = g.last_in_rollout_order();
    let all: Vec<String> = (g.want.iter().map(|k| k.host.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let kept: Vec<String> = all.iter().filter(|h| **h != key.host).cloned().collect();
    let want: BTreeSet<OsdKey> = g.want.iter().filter(|k| **k != key).cloned().collect();

    // Removed: drained, its pod gone, down and out; the operator's record kept.
    let from = g.ceph.elapsed();
    let t_remove = Instant::now();
    g.set_hosts(&kept, &want).await?;
    g.wait_gate_idle(Duration::from_mins(1)).await?;
    let removed = t_remove.elapsed();
    let map = g.cluster.osd_dump().await?;
    let gone = map.osd(id).expect("the OSD stays in the osdmap");
    anyhow::ensure!(!gone.up && !gone.in_, "osd.{id} after its drain: {gone:?}");
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    anyhow::ensure!(
        (status.osds_out.iter())
            .any(|o| o.id == id && o.key == key.to_string() && o.marked_by == MarkedBy::Operator),
        "no record of osd.{id} marked out by the operator: {:?}",
        status.osds_out
    );
    anyhow::ensure!(
        osds_in(&status).is_some_and(|(s, _, _)| s == "True"),
        "a drained OSD of a key no longer listed is not named: {:?}",
        osds_in(&status)
    );

    // Put back: its new pod's daemon boots out; the operator marks it in.
    let from_back = g.ceph.elapsed();
    let t_back = Instant::now();
    g.s.patch_spec(CR, json!({"storage": storage(&all, &["/dev/sdb"])}))
        .await?;
    let mut up_at = None;
    g.ceph
        .wait_until("the OSD put back up and in", Duration::from_mins(2), |v| {
            let osd = v.osdmap.as_ref().and_then(|(_, m)| m.osd(id).cloned());
            if osd.as_ref().is_some_and(|o| o.up) && up_at.is_none() {
                up_at = Some(t_back.elapsed());
            }
            osd.is_some_and(|o| o.up && o.in_)
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}\n{}", g.report(from_back)))?;
    let in_again = t_back.elapsed();
    g.s.wait_converged(CR, &g.want, &g.converged.hash, ROLLOUT)
        .await?;
    g.cluster.wait_clean(Duration::from_mins(2)).await?;
    let clean = t_back.elapsed();
    g.wait_gate(
        "OsdsIn True, no record left",
        Duration::from_mins(1),
        |status| {
            status.osds_out.is_empty()
                && osds_in(status).is_some_and(|(s, _, _)| s == "True")
                && status.phase == Some(ceph_osd_operator::crd::Phase::Ready)
        },
    )
    .await?;
    let recording = g.ceph.recording();
    let report = g.report(from);
    let fail = |e: anyhow::Error| anyhow::anyhow!("{e:#}\n{report}");
    recording.check_hosts_down_at_most(1, from).map_err(fail)?;
    recording.check_pgs_never_unavailable(from).map_err(fail)?;
    recording.check_no_noout_at_end().map_err(fail)?;
    let marked_in = marked_in_events(&g, id).await?;
    g.s.assert_one_pod_per_key().await?;

    let admin = Box::pin(admins_out_is_named(&g, &key)).await?;
    Milestones::new(format!(
        "host {} removed then put back (osd.{id}, 4 hosts, size 3); admin's out of osd.{}",
        key.host, admin.id
    ))
    .span("drained and stopped after the removal", removed)
    .span(
        "new daemon up after the put-back",
        up_at.unwrap_or_default(),
    )
    .span("in again after the put-back", in_again)
    .span("every PG clean after the put-back", clean)
    .span("admin's out named in OsdsIn", admin.named)
    .span("Complete naming it", admin.complete)
    .span("OsdsIn True after the admin's in", admin.cleared)
    .figure("marked in", format!("{marked_in:?}"))
    .figure("OsdsIn", admin.message)
    .section("status", &admin.text)
    .section("records", g.report(from))
    .print();
    Box::pin(g.down()).await
}

/// A running OSD on another host than `not`, with its key.
async fn admins_pick(g: &Gated, not: &OsdKey) -> anyhow::Result<(OsdKey, u32)> {
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    let (key, ids) = (status.osd_ids.iter())
        .find(|(k, ids)| !ids.is_empty() && **k != not.to_string())
        .ok_or_else(|| anyhow::anyhow!("no OSD id known: {:?}", status.osd_ids))?;
    let key = g
        .want
        .iter()
        .find(|k| k.to_string() == *key)
        .cloned()
        .expect("a listed key");
    Ok((key, ids[0]))
}

/// What the admin's `out` came to, and when.
struct AdminsOut {
    id: u32,
    named: Duration,
    complete: Duration,
    cleared: Duration,
    message: String,
    text: String,
}

/// An admin's `out` on a running OSD of another host than `key`'s: named in `OsdsIn`, in
/// `Complete`'s message and `kubectl ceph-osd status`, a Warning, left out; the admin's
/// `in`: `OsdsIn` True again.
async fn admins_out_is_named(g: &Gated, key: &OsdKey) -> anyhow::Result<AdminsOut> {
    // An admin's `out` on a running OSD of another host: named, never marked in.
    let (other_key, other) = admins_pick(g, key).await?;
    let t_out = Instant::now();
    g.cluster.cli(&["osd", "out", &other.to_string()]).await?;
    let osd = format!("osd.{other}");
    g.wait_gate(
        "OsdsIn False naming the admin's out",
        Duration::from_mins(1),
        |status| {
            osds_in(status).is_some_and(|(s, r, m)| {
                s == "False" && r == "OsdsOut" && m.contains(&osd) && m.contains("not marked out")
            })
        },
    )
    .await?;
    let named = t_out.elapsed();
    // Complete once Ceph's PGs settle (its data moves off it meanwhile), and says so.
    g.wait_gate(
        "Progressing Complete naming the admin's out",
        Duration::from_mins(2),
        |status| {
            (status.conditions.iter()).any(|c| {
                c.type_ == "Progressing" && c.reason == "Complete" && c.message.contains(&osd)
            })
        },
    )
    .await?;
    let complete = t_out.elapsed();
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    let (_, _, message) = osds_in(&status).expect("OsdsIn");
    let message = message.to_owned();
    anyhow::ensure!(message.contains(&other_key.to_string()), "{message}");
    let progressing = (status.conditions.iter())
        .find(|c| c.type_ == "Progressing")
        .expect("Progressing");
    anyhow::ensure!(
        progressing.reason == "Complete" && progressing.message.contains(&osd),
        "{progressing:?}"
    );
    let (code, text, err) = kubectl_ceph_osd(&g.s, &["status", "-o", "wide"]).await?;
    anyhow::ensure!(code == 0, "{err}");
    anyhow::ensure!(
        text.contains(&format!("\nout       {osd} ")) && text.contains(&format!("{osd}(out)")),
        "{text}"
    );
    let warned = (g.s.cr_events(CR).await?.into_iter())
        .any(|e| e.reason.as_deref() == Some("OsdsOut") && e.type_.as_deref() == Some("Warning"));
    anyhow::ensure!(warned, "no Warning OsdsOut");
    // Left out: the operator never marks an admin's out in.
    hold(Duration::from_secs(5), || async {
        let map = g.cluster.osd_dump().await?;
        let o = map.osd(other).expect("the OSD");
        anyhow::ensure!(o.up && !o.in_, "osd.{other}: {o:?}");
        Ok(())
    })
    .await?;
    // The admin's `in`: the condition clears.
    let t_in = Instant::now();
    g.cluster.cli(&["osd", "in", &other.to_string()]).await?;
    g.wait_gate("OsdsIn True again", Duration::from_mins(1), |status| {
        status.osds_out.is_empty() && osds_in(status).is_some_and(|(s, _, _)| s == "True")
    })
    .await?;
    let cleared = t_in.elapsed();
    g.cluster.wait_clean(Duration::from_mins(2)).await?;

    Ok(AdminsOut {
        id: other,
        named,
        complete,
        cleared,
        message,
        text,
    })
}

/// The `Drain` events that say an OSD was marked in again; one names `osd.{id}`.
async fn marked_in_events(g: &Gated, id: u32) -> anyhow::Result<Vec<String>> {
    let marked_in: Vec<String> = (g.s.cr_events(CR).await?.into_iter())
        .filter(|e| e.reason.as_deref() == Some("Drain"))
        .filter_map(|e| e.note)
        .filter(|n| n.contains("in again"))
        .collect();
    anyhow::ensure!(
        marked_in.iter().any(|n| n.contains(&format!("osd.{id}"))),
        "{marked_in:?}"
    );
    Ok(marked_in)
}
