//! The measured progress of a rollout, kept in the status: when it started, how long it was
//! paused, how many update domains it started and finished, and how long the last ones
//! took. A new template starts a new record. Pure.

use crate::crd::{DomainStart, RolloutProgress};
use crate::plan::phases::report::status::count;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeSet;

/// How many finished domain durations the record keeps.
pub(crate) const RECENT_DOMAINS: usize = 10;

/// What one plan knows of the rollout.
pub(crate) struct ProgressInput<'a> {
    pub template_hash: &'a str,
    pub now: Timestamp,
    pub paused: bool,
    /// The update domains under way after this plan.
    pub under_way: &'a [String],
    /// Out-of-date update domains not under way (held ones included).
    pub waiting: usize,
    /// Of those, the ones `partition` or a canary hold.
    pub held: usize,
}

/// The record after this plan, and the seconds each update domain that finished now took.
pub(crate) fn next_progress(
    previous: Option<&RolloutProgress>,
    input: &ProgressInput<'_>,
) -> (Option<RolloutProgress>, Vec<i64>) {
    let rolling = !input.under_way.is_empty() || input.waiting > 0;
    let mut record = match previous {
        Some(p) if p.template_hash == input.template_hash => p.clone(),
        // A new template: a new record; the domains under way go on in it.
        Some(p) if rolling => RolloutProgress {
            template_hash: input.template_hash.to_owned(),
            started: Some(Time(input.now)),
            in_progress: p.in_progress.clone(),
            domains_started: count(p.in_progress.len()),
            previous_median_seconds: median(&p.recent_domain_seconds).or(p.previous_median_seconds),
            ..RolloutProgress::default()
        },
        Some(p) => return (Some(p.clone()), Vec::new()),
        None if rolling => RolloutProgress {
            template_hash: input.template_hash.to_owned(),
            started: Some(Time(input.now)),
            ..RolloutProgress::default()
        },
        None => return (None, Vec::new()),
    };
    let under_way: BTreeSet<&str> = input.under_way.iter().map(String::as_str).collect();
    let mut finished = Vec::new();
    record.in_progress.retain(|d| {
        let going_on = under_way.contains(d.domain.as_str());
        if !going_on {
            finished.push(whole_seconds(input.now.duration_since(d.started.0)));
        }
        going_on
    });
    for domain in &under_way {
        if !record.in_progress.iter().any(|d| d.domain == *domain) {
            record.in_progress.push(DomainStart {
                domain: (*domain).to_owned(),
                started: Time(input.now),
            });
            record.domains_started += 1;
        }
    }
    record.domains_done += count(finished.len());
    record.recent_domain_seconds.extend(&finished);
    let excess = record
        .recent_domain_seconds
        .len()
        .saturating_sub(RECENT_DOMAINS);
    record.recent_domain_seconds.drain(..excess);
    match (&record.paused_since, input.paused && rolling) {
        (None, true) => record.paused_since = Some(Time(input.now)),
        (Some(since), false) => {
            record.paused_seconds += input.now.duration_since(since.0).as_secs().max(0);
            record.paused_since = None;
        }
        _ => {}
    }
    record.domains_held = count(input.held);
    record.domains_eligible = record.domains_done
        + count(record.in_progress.len())
        + count(input.waiting.saturating_sub(input.held));
    (Some(record), finished)
}

/// `duration` in seconds, rounded to the nearest (a domain of 4.6 s counts 5, not 4).
fn whole_seconds(duration: k8s_openapi::jiff::SignedDuration) -> i64 {
    (duration.as_millis() + 500)
        .div_euclid(1000)
        .try_into()
        .unwrap_or(0)
        .max(0)
}

/// The median of `seconds` (the upper one of an even count), if any.
pub(crate) fn median(seconds: &[i64]) -> Option<i64> {
    let mut sorted = seconds.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

#[cfg(test)]
mod tests;
