//! The checks replayed on Ceph's recording: hosts and OSDs down, PG spans not active or
//! unavailable, `noout` at the end, boots; and the recording rendered for failure messages.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::bail;

use super::pg_states::{classify, count_classes, PgClass};
use super::samples::{CephEvent, Observed};
use crate::ceph::{OsdMap, PgStat};

/// A time span on the recorder's clock; `to` is None while it lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub from: Duration,
    pub to: Option<Duration>,
}

impl Span {
    /// Its length, an open span counted until `end`.
    pub fn length(&self, end: Duration) -> Duration {
        self.to.unwrap_or(end).saturating_sub(self.from)
    }
}

/// A span during which some PG was inactive or unavailable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgSpan {
    pub span: Span,
    /// The most PGs inactive (unavailable ones included) in one sample.
    pub max_not_active: u64,
    /// The most PGs unavailable in one sample.
    pub max_unavailable: u64,
    /// How long some PG was unavailable in it (from each such sample to the next).
    pub unavailable_for: Duration,
    /// Every state not active seen in it.
    pub states: BTreeSet<String>,
}

/// A recording of Ceph's view (a copy: replay it as often as needed).
#[derive(Clone, Debug, Default)]
pub struct CephRecording {
    pub events: Vec<CephEvent>,
}

impl CephRecording {
    /// The osdmap samples from `from` on, led by the last one before it (timed at `from`).
    pub(super) fn osdmaps_from(&self, from: Duration) -> Vec<(Duration, &OsdMap)> {
        let maps = self.events.iter().filter_map(|e| match &e.observed {
            Observed::OsdMap(m) => Some((e.at, m)),
            _ => None,
        });
        let mut out: Vec<(Duration, &OsdMap)> = Vec::new();
        for (at, map) in maps {
            if at < from {
                out.clear();
                out.push((from, map));
            } else {
                out.push((at, map));
            }
        }
        out
    }

    /// The PG samples from `from` on, led by the last one before it (timed at `from`), each
    /// with the latest osdmap then.
    pub(super) fn pgs_from(&self, from: Duration) -> Vec<(Duration, &PgStat, Option<&OsdMap>)> {
        let mut out: Vec<(Duration, &PgStat, Option<&OsdMap>)> = Vec::new();
        let mut map = None;
        for e in &self.events {
            match &e.observed {
                Observed::OsdMap(m) => map = Some(m),
                Observed::Pgs(p) if e.at < from => {
                    out.clear();
                    out.push((from, p, map));
                }
                Observed::Pgs(p) => out.push((e.at, p, map)),
                Observed::Error(_) => {}
            }
        }
        out
    }

    /// The end of the recording.
    pub fn end(&self) -> Duration {
        self.events.last().map_or(Duration::ZERO, |e| e.at)
    }

    /// Spans during which `down(sample)` named each item, from `from` on.
    fn spans_by<F>(&self, from: Duration, down: F) -> BTreeMap<String, Vec<Span>>
    where
        F: Fn(&OsdMap) -> BTreeSet<String>,
    {
        let mut out: BTreeMap<String, Vec<Span>> = BTreeMap::new();
        let mut open: BTreeMap<String, Duration> = BTreeMap::new();
        for (at, map) in self.osdmaps_from(from) {
            let now = down(map);
            for name in &now {
                open.entry(name.clone()).or_insert(at);
            }
            let ended: Vec<String> = open.keys().filter(|n| !now.contains(*n)).cloned().collect();
            for name in ended {
                if let Some(start) = open.remove(&name) {
                    out.entry(name).or_default().push(Span {
                        from: start,
                        to: Some(at),
                    });
                }
            }
        }
        for (name, start) in open {
            out.entry(name).or_default().push(Span {
                from: start,
                to: None,
            });
        }
        out
    }

    /// Per OSD (`osd.N`), the spans it was down in the osdmap, from `from` on.
    pub fn osd_down_spans(&self, from: Duration) -> BTreeMap<String, Vec<Span>> {
        self.spans_by(from, |map| {
            map.osds
                .iter()
                .filter(|o| !o.up)
                .map(|o| format!("osd.{}", o.id))
                .collect()
        })
    }

    /// Per CRUSH host, the spans it was down (one of its OSDs down), from `from` on.
    pub fn host_down_spans(&self, from: Duration) -> BTreeMap<String, Vec<Span>> {
        self.spans_by(from, hosts_down)
    }

    /// The sample with the most CRUSH hosts down from `from` on: (when, the hosts).
    pub fn most_hosts_down(&self, from: Duration) -> Option<(Duration, BTreeSet<String>)> {
        self.osdmaps_from(from)
            .into_iter()
            .map(|(at, map)| (at, hosts_down(map)))
            .max_by_key(|(at, hosts)| (hosts.len(), std::cmp::Reverse(*at)))
    }

    /// Never more than `max` CRUSH hosts down at once from `from` on.
    pub fn check_hosts_down_at_most(&self, max: usize, from: Duration) -> anyhow::Result<()> {
        if let Some((at, hosts)) = self.most_hosts_down(from) {
            if hosts.len() > max {
                bail!(
                    "{} CRUSH hosts down at once at {:.2}s (at most {max}): {hosts:?}\n{}",
                    hosts.len(),
                    at.as_secs_f64(),
                    self.render(from)
                );
            }
        }
        Ok(())
    }

    /// As [`Self::check_hosts_down_at_most`], counting only the OSDs down and still in: an OSD
    /// marked out holds no PG, its host down takes no copy away.
    pub fn check_in_hosts_down_at_most(&self, max: usize, from: Duration) -> anyhow::Result<()> {
        let most = self
            .osdmaps_from(from)
            .into_iter()
            .map(|(at, map)| {
                let hosts: BTreeSet<String> = map
                    .osds
                    .iter()
                    .filter(|o| !o.up && o.in_)
                    .map(|o| {
                        map.host_of(o.id)
                            .map_or_else(|| format!("osd.{}", o.id), str::to_owned)
                    })
                    .collect();
                (at, hosts)
            })
            .max_by_key(|(at, hosts)| (hosts.len(), std::cmp::Reverse(*at)));
        if let Some((at, hosts)) = most {
            if hosts.len() > max {
                bail!(
                    "{} CRUSH hosts with an OSD down and in at once at {:.2}s (at most {max}): \
                     {hosts:?}\n{}",
                    hosts.len(),
                    at.as_secs_f64(),
                    self.render(from)
                );
            }
        }
        Ok(())
    }

    /// The spans during which some PG was inactive or unavailable, from `from` on.
    pub fn pg_spans(&self, from: Duration) -> Vec<PgSpan> {
        let mut out: Vec<PgSpan> = Vec::new();
        let mut current: Option<PgSpan> = None;
        // Since when some PG has been unavailable, while it lasts.
        let mut unavailable_since: Option<Duration> = None;
        for (at, pgs, map) in self.pgs_from(from) {
            let classes = count_classes(pgs, map);
            let unavailable = classes.get(&PgClass::Unavailable).copied().unwrap_or(0);
            let not_active = unavailable + classes.get(&PgClass::Inactive).copied().unwrap_or(0);
            if let (Some(since), Some(span)) = (unavailable_since.take(), current.as_mut()) {
                span.unavailable_for += at.saturating_sub(since);
            }
            if unavailable > 0 {
                unavailable_since = Some(at);
            }
            if not_active == 0 {
                if let Some(mut span) = current.take() {
                    span.span.to = Some(at);
                    out.push(span);
                }
                continue;
            }
            let span = current.get_or_insert_with(|| PgSpan {
                span: Span { from: at, to: None },
                max_not_active: 0,
                max_unavailable: 0,
                unavailable_for: Duration::ZERO,
                states: BTreeSet::new(),
            });
            span.max_not_active = span.max_not_active.max(not_active);
            span.max_unavailable = span.max_unavailable.max(unavailable);
            span.states.extend(
                pgs.by_state
                    .keys()
                    .filter(|s| classify(s) != PgClass::Active)
                    .cloned(),
            );
        }
        if let (Some(since), Some(span)) = (unavailable_since, current.as_mut()) {
            span.unavailable_for += self.end().saturating_sub(since);
        }
        out.extend(current);
        out
    }

    /// No PG ever unavailable from `from` on (see [`pg_class`]).
    pub fn check_pgs_never_unavailable(&self, from: Duration) -> anyhow::Result<()> {
        if let Some(span) = self
            .pg_spans(from)
            .into_iter()
            .find(|s| s.max_unavailable > 0)
        {
            bail!(
                "{} PGs unavailable from {:.2}s ({:?})\n{}",
                span.max_unavailable,
                span.span.from.as_secs_f64(),
                span.states,
                self.render(from)
            );
        }
        Ok(())
    }

    /// No span of inactive PGs longer than `max` from `from` on.
    pub fn check_pgs_inactive_at_most(&self, max: Duration, from: Duration) -> anyhow::Result<()> {
        let end = self.end();
        if let Some(span) = self
            .pg_spans(from)
            .into_iter()
            .find(|s| s.span.length(end) > max)
        {
            bail!(
                "PGs inactive for {:.2}s from {:.2}s (at most {max:?}; up to {} PGs, {:?})\n{}",
                span.span.length(end).as_secs_f64(),
                span.span.from.as_secs_f64(),
                span.max_not_active,
                span.states,
                self.render(from)
            );
        }
        Ok(())
    }

    /// A gated rollout by host as Ceph saw it from `from` on: never more than one CRUSH host
    /// down, no PG unavailable, no `noout` left at the end.
    pub fn check_one_host_at_a_time(&self, from: Duration) -> anyhow::Result<()> {
        self.check_hosts_down_at_most(1, from)?;
        self.check_pgs_never_unavailable(from)?;
        self.check_no_noout_at_end()
    }

    /// No `noout` anywhere in the last osdmap.
    pub fn check_no_noout_at_end(&self) -> anyhow::Result<()> {
        let last = self.events.iter().rev().find_map(|e| match &e.observed {
            Observed::OsdMap(m) => Some(m),
            _ => None,
        });
        let Some(map) = last else {
            bail!("no osdmap was recorded");
        };
        let noout = map.noout();
        if !noout.is_empty() {
            bail!("noout left at the end on {noout:?}");
        }
        Ok(())
    }

    /// OSD `id`'s `up_from` each time it came up: (when seen, up_from).
    pub fn boots(&self, id: u32) -> Vec<(Duration, u64)> {
        let mut out: Vec<(Duration, u64)> = Vec::new();
        for (at, map) in self.osdmaps_from(Duration::ZERO) {
            if let Some(osd) = map.osd(id).filter(|o| o.up) {
                if out
                    .last()
                    .is_none_or(|(_, up_from)| *up_from != osd.up_from)
                {
                    out.push((at, osd.up_from));
                }
            }
        }
        out
    }

    /// The recording from `from` on, one line per change of the view.
    pub fn render(&self, from: Duration) -> String {
        let mut out = String::from("Ceph's view (changes only):\n");
        let mut last_map = String::new();
        let mut last_pgs = String::new();
        let mut map_line = String::from("-");
        let mut pgs_line = String::from("-");
        let mut latest_map = None;
        for e in &self.events {
            if let Observed::OsdMap(map) = &e.observed {
                latest_map = Some(map);
            }
            if e.at < from {
                continue;
            }
            match &e.observed {
                Observed::OsdMap(map) => map_line = describe_osdmap(map),
                Observed::Pgs(pgs) => pgs_line = describe_pgs(pgs, latest_map),
                Observed::Error(error) => {
                    out.push_str(&format!("  {:>8.2}s error: {error}\n", e.at.as_secs_f64()));
                    continue;
                }
            }
            if map_line != last_map || pgs_line != last_pgs {
                out.push_str(&format!(
                    "  {:>8.2}s {map_line} | {pgs_line}\n",
                    e.at.as_secs_f64()
                ));
                last_map.clone_from(&map_line);
                last_pgs.clone_from(&pgs_line);
            }
        }
        out
    }

    /// A summary from `from` on: how long each host and OSD was down, the most hosts down at
    /// once, the spans of inactive PGs, noout at the end.
    pub fn summary(&self, from: Duration) -> String {
        let end = self.end();
        let mut out = String::new();
        let spans = |title: &str, all: BTreeMap<String, Vec<Span>>, out: &mut String| {
            out.push_str(&format!("{title}:\n"));
            if all.is_empty() {
                out.push_str("  (none)\n");
            }
            for (name, spans) in all {
                let listed: Vec<String> = spans
                    .iter()
                    .map(|s| {
                        format!(
                            "{:.2}s..{} ({:.2}s)",
                            s.from.as_secs_f64(),
                            s.to.map_or_else(
                                || "open".to_owned(),
                                |t| format!("{:.2}s", t.as_secs_f64())
                            ),
                            s.length(end).as_secs_f64()
                        )
                    })
                    .collect();
                out.push_str(&format!("  {name}: {}\n", listed.join(", ")));
            }
        };
        spans(
            "CRUSH hosts down in Ceph's view",
            self.host_down_spans(from),
            &mut out,
        );
        spans(
            "OSDs down in Ceph's view",
            self.osd_down_spans(from),
            &mut out,
        );
        if let Some((at, hosts)) = self.most_hosts_down(from) {
            out.push_str(&format!(
                "most CRUSH hosts down at once: {} at {:.2}s {hosts:?}\n",
                hosts.len(),
                at.as_secs_f64()
            ));
        }
        out.push_str("PGs not active:\n");
        let pg_spans = self.pg_spans(from);
        if pg_spans.is_empty() {
            out.push_str("  (never)\n");
        }
        for s in &pg_spans {
            out.push_str(&format!(
                "  {:.2}s for {:.2}s: up to {} PGs not active; up to {} unavailable for {:.2}s; {:?}\n",
                s.span.from.as_secs_f64(),
                s.span.length(end).as_secs_f64(),
                s.max_not_active,
                s.max_unavailable,
                s.unavailable_for.as_secs_f64(),
                s.states
            ));
        }
        let unavailable: Duration = pg_spans.iter().map(|s| s.unavailable_for).sum();
        out.push_str(&format!(
            "time with PGs unavailable: {:.2}s\n",
            unavailable.as_secs_f64()
        ));
        out.push_str(&format!(
            "noout at the end: {}\n",
            self.check_no_noout_at_end()
                .map_or_else(|e| e.to_string(), |()| "none".to_owned())
        ));
        out
    }
}

/// The CRUSH hosts with an OSD down (an OSD in no host counts as `osd.N`).
pub fn hosts_down(map: &OsdMap) -> BTreeSet<String> {
    map.osds
        .iter()
        .filter(|o| !o.up)
        .map(|o| {
            map.host_of(o.id)
                .map_or_else(|| format!("osd.{}", o.id), str::to_owned)
        })
        .collect()
}

fn describe_osdmap(map: &OsdMap) -> String {
    let osds: Vec<String> = map
        .osds
        .iter()
        .map(|o| {
            format!(
                "osd.{}{}@{}{}",
                o.id,
                if o.up { "↑" } else { "↓" },
                o.up_from,
                if o.noout { "(noout)" } else { "" }
            )
        })
        .collect();
    let noout = map.noout();
    format!(
        "e{} {}{}",
        map.epoch,
        osds.join(" "),
        if noout.is_empty() {
            String::new()
        } else {
            format!(" noout {noout:?}")
        }
    )
}

fn describe_pgs(pgs: &PgStat, map: Option<&OsdMap>) -> String {
    let states: Vec<String> = pgs
        .by_state
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    let unavailable = count_classes(pgs, map)
        .get(&PgClass::Unavailable)
        .copied()
        .unwrap_or(0);
    format!(
        "{}{}{}",
        states.join(", "),
        if unavailable > 0 {
            format!(" [{unavailable} unavailable]")
        } else {
            String::new()
        },
        if pgs.ready { "" } else { " (not ready)" }
    )
}

#[cfg(test)]
mod tests;
