//! Looks at Ceph stamped with how long their PG states may trail the placement they show
//! (the rule: `plan::gate::placement`), what each look showed remembered per CephOSD.

use crate::ceph::{CephClient, CephFacts};
use crate::plan::gate::placement::{needs_crush, seen_again, trail};
use crate::runtime::memory::Memory;
use std::time::{Duration, Instant};

/// Stamps looks at Ceph for one CephOSD with how much longer their PG states may trail the
/// placement they show, remembering what each look showed.
#[derive(Clone, Copy)]
pub(crate) struct PlacementClock<'a> {
    pub memory: &'a Memory,
    pub key: &'a str,
    pub lag: Duration,
}

impl PlacementClock<'_> {
    /// `facts`, taken at `at`, stamped (the CRUSH tree read from `ceph` when the placement
    /// is not the one seen before).
    pub(crate) async fn stamp(
        &self,
        ceph: &dyn CephClient,
        mut facts: CephFacts,
        at: Instant,
    ) -> CephFacts {
        let seen = self.memory.placement_seen(self.key);
        let now = &facts.osds.placement;
        let crush = if needs_crush(seen.as_ref(), now) {
            ceph.crush_tree().await.ok()
        } else {
            None
        };
        let again = seen_again(seen.as_ref(), now, crush, at);
        facts.pgs_trail_placement = trail(again.since, at, self.lag);
        self.memory.remember_placement(self.key, again);
        facts
    }
}

#[cfg(test)]
mod tests;
