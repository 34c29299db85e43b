//! The checks of a rollout by failure domain, replayed on Ceph's recording: CRUSH buckets of a
//! type down at once, copies of one PG down at once, and each step started on a cluster with
//! every OSD up and every PG clean.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::bail;

use super::checks::CephRecording;
use super::samples::Observed;
use crate::ceph::{OsdMap, PgStat};

/// The CRUSH buckets of `bucket_type` with an OSD down (an OSD under none counts as `osd.N`).
pub fn buckets_down(map: &OsdMap, bucket_type: &str) -> BTreeSet<String> {
    (map.osds.iter())
        .filter(|o| !o.up)
        .map(|o| {
            map.bucket_of(o.id, bucket_type)
                .map_or_else(|| format!("osd.{}", o.id), str::to_owned)
        })
        .collect()
}

/// A PG's copies down: its pool's size less the OSDs of its last reported acting set that are
/// up (an acting set shrunk by peering around a down OSD still counts that copy).
fn copies_down(pgs: &PgStat, map: &OsdMap) -> Option<(String, u64)> {
    (pgs.pgs.iter())
        .filter_map(|pg| {
            let size = map.pools.get(&pg.pool()?)?.size;
            let up = (pg.acting.iter())
                .filter(|id| map.osd(**id).is_some_and(|o| o.up))
                .count() as u64;
            Some((pg.pgid.clone(), size.saturating_sub(up)))
        })
        .max_by_key(|(_, down)| *down)
}

/// Every flag of a clean PG: active and clean, at most scrubbing or trimming besides.
fn is_clean(state: &str) -> bool {
    let flags: BTreeSet<&str> = state.split('+').collect();
    flags.contains("active")
        && flags.contains("clean")
        && (flags.iter()).all(|f| {
            [
                "active",
                "clean",
                "scrubbing",
                "deep",
                "snaptrim",
                "snaptrim_wait",
            ]
            .contains(f)
        })
}

impl CephRecording {
    /// Never more than `max` CRUSH buckets of `bucket_type` with an OSD down, from `from` on.
    pub fn check_buckets_down_at_most(
        &self,
        bucket_type: &str,
        max: usize,
        from: Duration,
    ) -> anyhow::Result<()> {
        let most = (self.osdmaps_from(from).into_iter())
            .map(|(at, map)| (at, buckets_down(map, bucket_type)))
            .max_by_key(|(at, down)| (down.len(), std::cmp::Reverse(*at)));
        if let Some((at, down)) = most.filter(|(_, down)| down.len() > max) {
            bail!(
                "{} CRUSH {bucket_type}s with an OSD down at once at {:.2}s (at most {max}): \
                 {down:?}\n{}",
                down.len(),
                at.as_secs_f64(),
                self.render(from)
            );
        }
        Ok(())
    }

    /// The most copies of one PG down in a sample from `from` on: (when, the PG, how many).
    pub fn most_copies_down(&self, from: Duration) -> Option<(Duration, String, u64)> {
        (self.pgs_from(from).into_iter())
            .filter_map(|(at, pgs, map)| {
                let (pg, down) = copies_down(pgs, map?)?;
                Some((at, pg, down))
            })
            .max_by_key(|(at, _, down)| (*down, std::cmp::Reverse(*at)))
    }

    /// Never more than `max` copies of one PG down at once from `from` on.
    pub fn check_copies_down_at_most(&self, max: u64, from: Duration) -> anyhow::Result<()> {
        if let Some((at, pg, down)) = self.most_copies_down(from).filter(|m| m.2 > max) {
            bail!(
                "{down} copies of PG {pg} down at once at {:.2}s (at most {max})\n{}",
                at.as_secs_f64(),
                self.render(from)
            );
        }
        Ok(())
    }

    /// When a stop asked at `at` shows in Ceph: the first sample from `at` on with an OSD down
    /// or a PG not clean (e.g. `stale` once the stopped OSD stops reporting); `at` when none
    /// does. Samples before it still show the cluster the stop was asked on: the operator and
    /// the recorder each look every 0.25 s, so the operator may see clean PGs and stop an OSD
    /// before the recorder's next sample.
    pub fn stop_seen_at(&self, at: Duration) -> Duration {
        (self.events.iter().filter(|e| e.at >= at))
            .find_map(|e| match &e.observed {
                Observed::OsdMap(m) if m.osds.iter().any(|o| !o.up) => Some(e.at),
                Observed::Pgs(p) if p.by_state.keys().any(|s| !is_clean(s)) => Some(e.at),
                _ => None,
            })
            .unwrap_or(at)
    }

    /// Just before a step started in Ceph (its first stop, at `at`, seen: [`Self::stop_seen_at`]):
    /// every OSD up in the last osdmap sample and every PG clean in the last PG sample, both
    /// taken after `since` (the step before's last boot).
    pub fn check_clean_before(&self, at: Duration, since: Duration) -> anyhow::Result<()> {
        let seen_at = self.stop_seen_at(at);
        let before = self.events.iter().filter(|e| e.at < seen_at);
        let map = (before.clone().rev()).find_map(|e| match &e.observed {
            Observed::OsdMap(m) => Some((e.at, m)),
            _ => None,
        });
        let pgs = before.rev().find_map(|e| match &e.observed {
            Observed::Pgs(p) => Some((e.at, p)),
            _ => None,
        });
        let (Some((map_at, map)), Some((pgs_at, pgs))) = (map, pgs) else {
            bail!("no osdmap or PG sample before {:.2}s", at.as_secs_f64());
        };
        let down: Vec<u32> = (map.osds.iter()).filter(|o| !o.up).map(|o| o.id).collect();
        let unclean: Vec<&String> = (pgs.by_state.keys()).filter(|s| !is_clean(s)).collect();
        if map_at < since || pgs_at < since || !down.is_empty() || !unclean.is_empty() || !pgs.ready
        {
            bail!(
                "a step started at {:.2}s (seen at {:.2}s) on OSDs down {down:?} and PGs \
                 {unclean:?} (ready {}; samples at {:.2}s and {:.2}s, the step before's last \
                 boot {:.2}s)\n{}",
                at.as_secs_f64(),
                seen_at.as_secs_f64(),
                pgs.ready,
                map_at.as_secs_f64(),
                pgs_at.as_secs_f64(),
                since.as_secs_f64(),
                self.render(since)
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
