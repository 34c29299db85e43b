//! An operator key without the needed caps: nothing stopped, the gate says Ceph refused.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::milestones::Milestones;
use molecule_like_tests::journeys::scenario::hold;
use molecule_like_tests::kubernetes::manifests::CR;
use serde_json::json;

use crate::common::{ceph_calls, check_pod_watch, report, wait_condition, HALT_HOLD};

/// The operator's key with `mon 'allow r'` only (`client.nocaps`): a template change takes no
/// pod down (held), `CephGate` False quoting Ceph's refusal (EACCES), a Warning event on the
/// CephOSD says so; the operator keeps running.
#[tokio::test]
async fn an_operator_key_without_the_needed_caps_stops_nothing_and_says_ceph_refused(
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let g = Gated::up_with(
        "ids-nocaps",
        &GatedOptions {
            ceph_user: "client.nocaps",
            expect_idle: false,
            ..GatedOptions::default()
        },
    )
    .await?;
    let setup = t0.elapsed();
    let before = g.gate_condition().await?;
    let from = g.ceph.elapsed();
    let t_roll = Instant::now();
    let watch_from = g.s.pod_watch_mark().await?;
    g.s.patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    let (status, reason, message) = wait_condition(
        &g,
        "CephGate False quoting Ceph's refusal",
        Duration::from_mins(1),
        |(s, _, m)| s == "False" && refused(m),
    )
    .await?;
    let said_after = t_roll.elapsed();
    hold_while_ceph_refuses(&g).await?;
    g.s.check_operator_alive()?;
    check_pod_watch(&g, watch_from).await?;
    let log = g.s.operator_log();
    anyhow::ensure!(!log.contains("panicked"), "the operator panicked:\n{log}");
    let events = g.s.cr_events(CR).await?;
    let warning = events
        .iter()
        .find(|e| e.type_.as_deref() == Some("Warning") && e.note.as_deref().is_some_and(refused));
    let report = report(&g, from).await;
    let warning = warning.ok_or_else(|| {
        anyhow::anyhow!("no Warning event quoting Ceph's refusal on the CephOSD\n{report}")
    })?;
    let recording = g.ceph.recording();
    recording
        .check_no_noout_at_end()
        .map_err(|e| anyhow::anyhow!("{e:#}\n{report}"))?;
    let calls = ceph_calls(&g, "", 0);
    let denied: Vec<&String> = calls
        .iter()
        .filter(|l| l.ends_with("Some(13)"))
        .take(3)
        .collect();
    let ok_to_stop = ceph_calls(&g, "ok-to-stop", 0);
    anyhow::ensure!(
        ok_to_stop.is_empty(),
        "ok-to-stop asked without Ceph's other answers:\n{}",
        ok_to_stop.join("\n")
    );
    Milestones::new("the operator's key without caps")
        .span("set up", setup)
        .figure("CephGate before the change", format!("{before:?}"))
        .span(
            format!("CephGate {status} {reason} after the template change"),
            said_after,
        )
        .figure("its message", message)
        .figure(
            format!("Warning event {}", warning.reason.as_deref().unwrap_or("-")),
            warning.note.as_deref().unwrap_or("-"),
        )
        .figure(
            format!("held {}s", HALT_HOLD.as_secs()),
            "no pod down, no step; operator alive",
        )
        .section(
            "its calls refused (first 3)",
            denied
                .iter()
                .map(|l| l.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )
        .section("records", &report)
        .print();
    g.down().await
}

/// Whether a message quotes Ceph's refusal of the key (EACCES).
fn refused(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("eacces") || m.contains("access denied") || m.contains("permission")
}

/// While Ceph refuses the operator's key ([`HALT_HOLD`]): no pod changes, no step opens,
/// `CephGate` stays False quoting the refusal.
async fn hold_while_ceph_refuses(g: &Gated) -> anyhow::Result<()> {
    let old: BTreeMap<String, Option<String>> = g
        .converged
        .pods
        .values()
        .map(|p| (p.name_any(), p.uid()))
        .collect();
    hold(HALT_HOLD, || async {
        for p in g.s.owned_pods(CR).await? {
            anyhow::ensure!(
                old.get(&p.name_any()) == Some(&p.uid()) && p.metadata.deletion_timestamp.is_none(),
                "pod {} changed without Ceph's answer\ngate status:\n{}",
                p.name_any(),
                g.gate.render()
            );
        }
        let status = g.s.cr_status(CR).await?.unwrap_or_default();
        anyhow::ensure!(status.ceph_step.is_none(), "a step opened: {status:?}");
        let c = g.gate_condition().await?;
        anyhow::ensure!(
            c.as_ref()
                .is_some_and(|(s, _, m)| s == "False" && refused(m)),
            "CephGate is {c:?} while Ceph refuses\ngate status:\n{}",
            g.gate.render()
        );
        Ok(())
    })
    .await?;
    Ok(())
}
