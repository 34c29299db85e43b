//! `kubectl ceph-osd plan` as text: the steps the next rollout takes in order, each with its
//! update domains (a failure domain with its hosts) and the cumulative ETA, then the cut and
//! what stays, is skipped or is in no known failure domain, and why.

use crate::offline::eta::{human, StepEstimate};
use crate::offline::rollout_preview::RolloutPreview;
use std::fmt::Write as _;

/// Held update domains listed before the rest are counted.
const HELD_LINES: usize = 5;

/// Update domains listed on one line before the rest are counted.
const DOMAINS_PER_LINE: usize = 6;

/// The text `plan` prints for the CephOSD `name` (`namespace/name`) rolling to `hash`.
pub(crate) fn plan_text(
    name: &str,
    hash: &str,
    preview: &RolloutPreview,
    step: &StepEstimate,
) -> String {
    let mut out = format!("Rollout plan of CephOSD {name} to template {hash}\n");
    let mut steps = 0;
    if !preview.under_way.is_empty() {
        steps += 1;
        let _ = writeln!(
            out,
            "under way  {}  +{}",
            domains(&preview.under_way, preview),
            human(step.median_seconds)
        );
    }
    for batch in &preview.batches {
        steps += 1;
        let (median, _) = step.remaining(steps);
        let _ = writeln!(
            out,
            "step {steps:<4}  {}  +{}",
            domains(batch, preview),
            human(median)
        );
    }
    if steps == 0 && preview.stops.is_none() {
        out.push_str("nothing to replace\n");
    }
    if !preview.held.is_empty() {
        let held = match preview.held.len() {
            1 => "1 update domain stays".to_owned(),
            n => format!("{n} update domains stay"),
        };
        let _ = writeln!(out, "── cut: {held} as before");
        let mut held: Vec<(&String, &String)> = preview.held.iter().collect();
        held.sort_by_key(|(d, _)| (d.to_lowercase(), (*d).clone()));
        for (domain, why) in held.iter().take(HELD_LINES) {
            let _ = writeln!(out, "held       {domain}  ({why})");
        }
        if held.len() > HELD_LINES {
            let _ = writeln!(out, "           … {} more held", held.len() - HELD_LINES);
        }
    }
    for (host, why) in preview.unplaced.iter().take(HELD_LINES) {
        let _ = writeln!(
            out,
            "unplaced   {host}  (in no known failure domain: {why})"
        );
    }
    if preview.unplaced.len() > HELD_LINES {
        let more = preview.unplaced.len() - HELD_LINES;
        let _ = writeln!(
            out,
            "           … {more} more hosts in no known failure domain"
        );
    }
    if let Some(stops) = &preview.stops {
        let _ = writeln!(out, "stops      {stops}");
    }
    for skipped in &preview.skipped {
        let _ = writeln!(out, "skipped    {skipped}");
    }
    if steps > 0 {
        let (median, p90) = step.remaining(steps);
        let basis = if step.measured == 0 {
            "estimated from the template's grace period, minReadySeconds and the last rollout"
                .to_owned()
        } else {
            format!("measured over the last {} update domains", step.measured)
        };
        let _ = writeln!(
            out,
            "ETA {} (up to {}): {steps} steps of {} ({basis})",
            human(median),
            human(p90),
            human(step.median_seconds)
        );
    }
    out
}

/// `a, b, c` or `a, b, … (+12)`; a failure domain with its hosts: `rack1 (h1, h2)`.
fn domains(batch: &[String], preview: &RolloutPreview) -> String {
    let named: Vec<String> = (batch.iter())
        .map(|domain| match preview.failure_domains.get(domain) {
            Some(hosts) => format!("{domain} ({})", listed(hosts)),
            None => domain.clone(),
        })
        .collect();
    listed(&named)
}

/// `a, b, c` or `a, b, … (+12)`.
fn listed(names: &[String]) -> String {
    let mut text = (names.iter().take(DOMAINS_PER_LINE))
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > DOMAINS_PER_LINE {
        let _ = write!(text, ", … (+{})", names.len() - DOMAINS_PER_LINE);
    }
    text
}
