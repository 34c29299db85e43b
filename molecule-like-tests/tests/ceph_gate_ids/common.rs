//! What the gate-by-id journeys share: pods and conditions looked up, the Ceph calls
//! the operator made, reports, and the halt checked before a pod is stopped.

use std::time::Duration;

use ceph_osd_operator::crd::UpdateDomain;
use molecule_like_tests::journeys::gated::Gated;
use molecule_like_tests::journeys::scenario::describe_events;
use molecule_like_tests::kubernetes::manifests::CR;

/// How long a halt is watched for pods going down.
pub(crate) const HALT_HOLD: Duration = Duration::from_secs(8);
/// The `CephGate` condition: (status, reason, message).
pub(crate) type Gate = (String, String, String);

/// Seconds on the recorders' clock.
pub(crate) fn at(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

/// Waits until `CephGate` satisfies `done`; the error shows the gate's record.
pub(crate) async fn wait_condition(
    g: &Gated,
    what: &str,
    timeout: Duration,
    done: impl Fn(&Gate) -> bool,
) -> anyhow::Result<Gate> {
    let r =
        g.s.wait_until(what, timeout, || async {
            Ok(g.gate_condition().await?.filter(|c| done(c)))
        })
        .await;
    r.map_err(|e| anyhow::anyhow!("{e:#}\ngate status:\n{}", g.gate.render()))
}

/// The command of an operator's `ceph call` log line (`osd ok-to-stop 2`).
pub(crate) fn call_command(line: &str) -> Option<&str> {
    let rest = line.split_once("ceph call command=")?.1;
    Some(rest.split_once(" elapsed=").map_or(rest, |(c, _)| c))
}

/// The operator's `ceph` calls (its debug log: time, command, exit code) whose command
/// contains `verb`, from byte `from` of its log on.
pub(crate) fn ceph_calls(g: &Gated, verb: &str, from: usize) -> Vec<String> {
    let log = g.s.operator_log();
    log.get(from..)
        .unwrap_or_default()
        .lines()
        .filter(|l| call_command(l).is_some_and(|c| c.contains(verb)))
        .map(|l| {
            let time = l.split_whitespace().next().unwrap_or_default();
            let exit = l.split_once("exit_code=").map_or("-", |(_, e)| e);
            format!(
                "  {time} ceph {} → exit {exit}",
                call_command(l).unwrap_or_default()
            )
        })
        .collect()
}

/// The CephOSD's events, one line each, with their series (how often the recorder published
/// one of that reason and type: a series keeps its first note).
pub(crate) async fn events_with_series(g: &Gated) -> String {
    let events = g.s.cr_events(CR).await.unwrap_or_default();
    let mut out = String::new();
    for (line, e) in describe_events(&events).lines().zip(&events) {
        out.push_str(line);
        if let Some(series) = &e.series {
            out.push_str(&format!(
                " series: count {}, last {}",
                series.count, series.last_observed_time.0
            ));
        }
        out.push('\n');
    }
    out
}

/// Everything recorded since `from`: Ceph's view, the bridge, the gate, the CephOSD's events.
pub(crate) async fn report(g: &Gated, from: Duration) -> String {
    format!(
        "{}CephOSD events:\n{}",
        g.report(from),
        events_with_series(g).await
    )
}

/// While a rollout halts before `key`: `key`'s pod stays (same uid, not terminating), no step
/// The pod watch since the template change (`from`: its event count then): never two pods
/// for one disk, never more than one host without a Ready pod of each of its OSDs.
pub(crate) async fn check_pod_watch(g: &Gated, from: usize) -> anyhow::Result<()> {
    g.s.assert_one_pod_per_key().await?;
    g.s.recorder()?
        .assert_unavailable_domains_at_most(&g.want, UpdateDomain::Host, 1, from)
}
