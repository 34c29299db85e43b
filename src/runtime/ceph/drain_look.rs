//! Looking at an open drain for the planner: one look at the cluster with the PGs still on
//! its OSDs, then `safe-to-destroy` for exactly its ids when the planner's rule asks it
//! (`asks_safe_to_destroy`). What Ceph answered, or why it did not, goes to `judge_drain`.

use crate::ceph::{gather_step_facts, CephClient, CephFacts, OsdId};
use crate::crd::CephStep;
use crate::plan::gate::{asks_safe_to_destroy, judge_drain, DrainProgress};
use crate::runtime::ceph::placement::PlacementClock;
use std::collections::BTreeSet;
use std::time::Instant;

/// Where the drain `open` stands, with the facts of the look when one was taken (stamped by
/// `clock`: PG states that may trail the `out` are not clean yet).
pub(crate) async fn look_at_drain(
    ceph: &dyn CephClient,
    open: &CephStep,
    clock: &PlacementClock<'_>,
) -> (DrainProgress, Option<CephFacts>) {
    let ids: Vec<OsdId> = open.osds.iter().map(|o| OsdId(o.id)).collect();
    let at = Instant::now();
    let (facts, pgs_on) = match gather_step_facts(ceph, &ids, &|_| true).await {
        Ok((facts, pgs_on)) => (clock.stamp(ceph, facts, at).await, pgs_on),
        Err(error) => return (DrainProgress::unanswered(&error), None),
    };
    let answer = if asks_safe_to_destroy(&facts, &ids) {
        Some(ceph.safe_to_destroy(&ids).await)
    } else {
        None
    };
    let asked: BTreeSet<OsdId> = ids.into_iter().collect();
    let progress = judge_drain(&asked, &facts, answer.as_ref(), &pgs_on);
    (progress, Some(facts))
}
