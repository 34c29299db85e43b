//! What the demo must have shown, checked on the records once the rollout is done: every OSD
//! restarted inside a step the operator recorded (`status.cephStep`), after asking Ceph
//! (`osd ok-to-stop`), each with a new daemon booted; in Ceph's own view at most one host down
//! at a time, no PG unavailable, no `noout` left. A demo where the gate did not show fails.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use molecule_like_tests::ceph_recorder::{CephRecording, Observed};
use molecule_like_tests::gated::GateSample;

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
        let clean = booted_last.and_then(|b| {
            recording.events.iter().find_map(|e| match &e.observed {
                Observed::Pgs(p) if e.at > b && p.all_clean() => Some(e.at),
                _ => None,
            })
        });
        if let Some(clean) = clean {
            let _ = write!(out, ", every PG active+clean {:.1}s", since(clean, from));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: u64, step: Option<(&str, u32)>) -> GateSample {
        GateSample {
            at: Duration::from_secs(at),
            step: step.map(|(k, id)| (vec![k.to_owned()], vec![id])),
            noout: Vec::new(),
            condition: None,
        }
    }

    #[test]
    fn steps_are_read_from_the_status_samples_back_to_back_or_apart() {
        let samples = [
            sample(1, None),
            sample(2, Some(("a:/dev/sdb", 0))),
            sample(3, Some(("a:/dev/sdb", 0))),
            sample(5, Some(("b:/dev/sdb", 1))),
            sample(7, None),
            sample(8, Some(("c:/dev/sdb", 2))),
        ];
        let got = steps(&samples, Duration::ZERO);
        let seen: Vec<(u32, u64, Option<u64>)> = got
            .iter()
            .map(|s| (s.ids[0], s.opened.as_secs(), s.closed.map(|c| c.as_secs())))
            .collect();
        assert_eq!(seen, [(0, 2, Some(5)), (1, 5, Some(7)), (2, 8, None)]);
        assert!(steps(&samples, Duration::from_secs(9)).is_empty());
    }

    #[test]
    fn a_rollout_without_a_recorded_step_fails() {
        let recording = CephRecording::default();
        let before = BTreeMap::from([(0, 5)]);
        let e = check(&[], &before, &recording, 0, Duration::ZERO).unwrap_err();
        assert!(e.to_string().contains("no Ceph step was recorded"), "{e}");
        let other = Step {
            keys: vec!["b:/dev/sdb".into()],
            ids: vec![1],
            opened: Duration::ZERO,
            closed: Some(Duration::from_secs(1)),
        };
        let e = check(&[other], &before, &recording, 1, Duration::ZERO).unwrap_err();
        assert!(
            e.to_string().contains("osd.0 restarted in no recorded"),
            "{e}"
        );
    }
}
