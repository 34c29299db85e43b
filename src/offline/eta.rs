//! How long the rest of a rollout takes: the remaining steps times the measured duration of
//! an update domain (the median of the last ones; p90 as the band). Before any domain of
//! this template finished: the template's grace period + `minReadySeconds` + the previous
//! rollout's median. Paused time is not counted.

use crate::crd::{CephOsd, RolloutProgress};
use crate::plan::phases::report::progress::median;
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Seconds a pod's termination takes at most when the template says nothing (Kubernetes').
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// The duration of one rollout step, and what it is based on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StepEstimate {
    pub(crate) median_seconds: i64,
    pub p90_seconds: i64,
    /// How many finished update domains of this template it is measured from (0: a guess).
    pub(crate) measured: usize,
}

impl StepEstimate {
    /// The estimate for the rollout of `cr`'s current template.
    pub(crate) fn of(cr: &CephOsd, current_hash: &str) -> Self {
        let record = cr.status.as_ref().and_then(|s| s.rollout.as_ref());
        let recent = record
            .filter(|r| r.template_hash == current_hash)
            .map(|r| r.recent_domain_seconds.as_slice())
            .unwrap_or_default();
        if let Some(median_seconds) = median(recent) {
            return Self {
                median_seconds,
                p90_seconds: p90(recent).unwrap_or(median_seconds),
                measured: recent.len(),
            };
        }
        let previous = record.and_then(|r| previous_median(r, current_hash));
        let grace = cr
            .spec
            .pod_template
            .pointer("/spec/terminationGracePeriodSeconds")
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(DEFAULT_GRACE_SECONDS);
        let guess =
            grace + i64::from(cr.spec.min_ready_seconds.unwrap_or(0)) + previous.unwrap_or(0);
        Self {
            median_seconds: guess,
            p90_seconds: guess,
            measured: 0,
        }
    }

    /// Seconds until `steps` more steps are done: (median, p90).
    pub(crate) fn remaining(&self, steps: usize) -> (i64, i64) {
        let steps = i64::try_from(steps).unwrap_or(i64::MAX);
        (
            self.median_seconds.saturating_mul(steps),
            self.p90_seconds.saturating_mul(steps),
        )
    }
}

/// The median of the rollout before the one of `current_hash`.
fn previous_median(record: &RolloutProgress, current_hash: &str) -> Option<i64> {
    if record.template_hash == current_hash {
        record.previous_median_seconds
    } else {
        median(&record.recent_domain_seconds).or(record.previous_median_seconds)
    }
}

/// The 90th percentile (nearest rank) of `seconds`.
fn p90(seconds: &[i64]) -> Option<i64> {
    let mut sorted = seconds.to_vec();
    sorted.sort_unstable();
    let rank = (sorted.len() * 9).div_ceil(10);
    sorted.get(rank.checked_sub(1)?).copied()
}

/// Seconds the rollout of `record` has been running, paused time left out.
pub(crate) fn elapsed(record: &RolloutProgress, now: Timestamp) -> Option<i64> {
    let started = record.started.as_ref()?.0;
    let paused_now = record
        .paused_since
        .as_ref()
        .map_or(0, |since| now.duration_since(since.0).as_secs());
    Some((now.duration_since(started).as_secs() - record.paused_seconds - paused_now).max(0))
}

/// `1h02m`, `4m05s`, `12s`.
pub(crate) fn human(seconds: i64) -> String {
    let s = seconds.max(0);
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, min, sec) => format!("{min}m{sec:02}s"),
        (h, min, _) => format!("{h}h{min:02}m"),
    }
}

#[cfg(test)]
mod tests;
