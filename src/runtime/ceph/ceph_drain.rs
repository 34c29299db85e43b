//! Looking at an open drain for the planner: one look at the cluster with the PGs still on
//! its OSDs, then `safe-to-destroy` for exactly its ids (not asked without a mgr: it would
//! hang until its bound). Any failure becomes `NoAnswer`: no pod stops on no answer.

use crate::ceph::{gather_step_facts, judge_drain, CephClient, CephFacts, DrainProgress, OsdId};
use crate::crd::CephStep;
use std::collections::BTreeSet;

/// Where the drain `open` stands, with the facts of the look when one was taken.
pub(crate) async fn look_at_drain(
    ceph: &dyn CephClient,
    open: &CephStep,
) -> (DrainProgress, Option<CephFacts>) {
    let ids: Vec<OsdId> = open.osds.iter().map(|o| OsdId(o.id)).collect();
    let (facts, pgs_on) = match gather_step_facts(ceph, &ids).await {
        Ok(looked) => looked,
        Err(error) => {
            let why = format!("Ceph gave no usable answer: {error}");
            return (DrainProgress::NoAnswer { why }, None);
        }
    };
    let answer = if facts.status.mgr_available && !ids.is_empty() {
        Some(ceph.safe_to_destroy(&ids).await)
    } else {
        None
    };
    let asked: BTreeSet<OsdId> = ids.into_iter().collect();
    let progress = judge_drain(&asked, &facts, answer.as_ref(), &pgs_on);
    (progress, Some(facts))
}
