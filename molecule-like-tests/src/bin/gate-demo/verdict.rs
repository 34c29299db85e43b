//! What the demo must have shown, checked on the records once the rollout is done: every OSD
//! restarted inside a step the operator recorded (`status.cephStep`), after asking Ceph
//! (`osd ok-to-stop`), each with a new daemon booted; in Ceph's own view at most one host down
//! at a time, no PG unavailable, no `noout` left. A demo where the gate did not show fails.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use molecule_like_tests::journeys::gated::GateSample;
use molecule_like_tests::journeys::steps::clean_after;
use molecule_like_tests::recording::ceph::CephRecording;

/// One step as the operator recorded it: its keys and OSD ids, opened and closed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub keys: Vec<String>,
    pub ids: Vec<u32>,
    pub opened: Duration,
    pub closed: Option<Duration>,
}

/// The steps in the gate's status samples from `from` on, in order.
pub(crate) fn steps(samples: &[GateSample], from: Duration) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    for s in samples.iter().filter(|s| s.at >= from) {
        let now = s.step.as_ref();
        let open = out.last_mut().filter(|l| l.closed.is_none());
        match (open, now) {
            (Some(last), Some((keys, ids))) if (&last.keys, &last.ids) == (keys, ids) => {}
            (open, now) => {
                if let Some(last) = open {
                    last.closed = Some(s.at);
                }
                if let Some((keys, ids)) = now {
                    out.push(Step {
                        keys: keys.clone(),
                        ids: ids.clone(),
                        opened: s.at,
                        closed: None,
                    });
                }
            }
        }
    }
    out
}

/// The rollout went through the gate: each of `ids` (id → `up_from` before the change) in a
/// step, booted anew after it opened; at least one `ok-to-stop` asked per step; Ceph's view
/// from `from` on: one host down at most, no PG unavailable, no `noout` at the end.
pub(crate) fn check(
    steps: &[Step],
    before: &BTreeMap<u32, u64>,
    recording: &CephRecording,
    ok_to_stop_asked: usize,
    from: Duration,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        !steps.is_empty(),
        "no Ceph step was recorded in the CephOSD's status: the rollout did not go through \
         the gate"
    );
    for (id, up_from) in before {
        let step = steps.iter().find(|s| s.ids.contains(id)).ok_or_else(|| {
            anyhow::anyhow!("osd.{id} restarted in no recorded Ceph step (steps: {steps:?})")
        })?;
        anyhow::ensure!(
            step.closed.is_some(),
            "the step of osd.{id} never closed: {step:?}"
        );
        anyhow::ensure!(
            recording
                .boots(*id)
                .iter()
                .any(|(at, u)| *u > *up_from && *at >= step.opened),
            "osd.{id}: no new daemon booted (up_from still {up_from}) after its step opened"
        );
    }
    anyhow::ensure!(
        ok_to_stop_asked >= steps.len(),
        "the operator asked `ceph osd ok-to-stop` {ok_to_stop_asked} times for {} steps",
        steps.len()
    );
    recording.check_one_host_at_a_time(from)
}

/// Seconds from `from` to `at`.
fn since(at: Duration, from: Duration) -> f64 {
    at.saturating_sub(from).as_secs_f64()
}

/// One line per step, times from `from`: opened → closed, and in Ceph's view its OSDs down,
/// up with a new daemon, every PG clean again.
pub(crate) fn summary(steps: &[Step], recording: &CephRecording, from: Duration) -> String {
    let down = recording.osd_down_spans(from);
    let mut out = String::new();
    for (i, step) in steps.iter().enumerate() {
        let closed = step.closed.map_or_else(
            || "still open".to_owned(),
            |c| format!("closed {:.1}s", since(c, from)),
        );
        let _ = write!(
            out,
            "  step {}: {} — opened {:.1}s, {closed}",
            i + 1,
            step.keys.join(", "),
            since(step.opened, from)
        );
        let mut booted_last = None;
        for id in &step.ids {
            let name = format!("osd.{id}");
            let span = down
                .get(&name)
                .and_then(|spans| spans.iter().find(|s| s.from >= step.opened));
            let booted = recording
                .boots(*id)
                .into_iter()
                .find(|(at, _)| *at >= step.opened);
            if let Some(span) = span {
                let _ = write!(out, "; {name} down {:.1}s", since(span.from, from));
            }
            if let Some((at, up_from)) = booted {
                let _ = write!(out, ", up (up_from {up_from}) {:.1}s", since(at, from));
                booted_last = booted_last.max(Some(at));
            }
        }
        let clean = booted_last.and_then(|b| clean_after(recording, b));
        if let Some(clean) = clean {
            let _ = write!(out, ", every PG active+clean {:.1}s", since(clean, from));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
