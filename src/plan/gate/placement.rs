//! How long the PG states may trail the placement a look at Ceph shows. The mgr's PG states
//! trail an OSD map change by up to its stats period: right after a CRUSH move, a reweight or
//! an upmap they still say `active+clean` of PGs that are about to remap. A look counts as
//! clean only once that period has passed since a look first showed the placement.
//!
//! CRUSH's version moves with every OSD that starts (its location is set again, unchanged):
//! a new version alone is a change only when the CRUSH tree read then differs.

use crate::ceph::{CrushTree, Placement};
use std::time::{Duration, Instant};

/// A placement and when a look first showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PlacementSeen {
    pub placement: Placement,
    /// The CRUSH tree read when the placement was seen (None: not read, or refused).
    pub crush: Option<CrushTree>,
    pub since: Instant,
}

/// What a look showing `now` (at `at`) does to what was seen before (`seen`), pure: the same
/// placement keeps its time; a new CRUSH version alone keeps it when the tree read then
/// (`crush`, asked for by `needs_crush`) is the one seen before; anything else starts now.
pub(crate) fn seen_again(
    seen: Option<&PlacementSeen>,
    now: &Placement,
    crush: Option<CrushTree>,
    at: Instant,
) -> PlacementSeen {
    let since = match seen {
        Some(s) if s.placement == *now => s.since,
        Some(s)
            if s.placement.differs_only_in_crush_version(now)
                && crush.is_some()
                && crush == s.crush =>
        {
            s.since
        }
        _ => at,
    };
    let crush = match seen {
        Some(s) if s.placement == *now => s.crush.clone(),
        _ => crush,
    };
    PlacementSeen {
        placement: now.clone(),
        crush,
        since,
    }
}

/// Whether a look showing `now` needs the CRUSH tree read to tell whether the placement
/// changed: anything but the placement seen before.
pub(crate) fn needs_crush(seen: Option<&PlacementSeen>, now: &Placement) -> bool {
    seen.is_none_or(|s| s.placement != *now)
}

/// How much longer PG states may trail a placement seen since `since`, at `at` (`lag`: the
/// mgr's stats period and a margin); None once it has passed.
pub(crate) fn trail(since: Instant, at: Instant, lag: Duration) -> Option<Duration> {
    let wait = lag.saturating_sub(at.saturating_duration_since(since));
    (!wait.is_zero()).then_some(wait)
}

#[cfg(test)]
mod tests;
