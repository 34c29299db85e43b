//! One look at the cluster for the gate and the step check: `status`, `osd dump` and `pg stat`
//! asked at once. Without a mgr `pg stat` would hang until its bound: once `status` says no mgr
//! is available, its answer is not waited for (the call is dropped, its child killed).

use super::answers::{ClusterStatus, OsdDump, PgBrief, PgStates};
use super::client::{CephClient, CephError};
use super::osd_id::OsdId;
use std::collections::BTreeMap;
use std::time::Duration;

/// What Ceph said in one look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CephFacts {
    pub status: ClusterStatus,
    pub osds: OsdDump,
    /// `None` when no mgr is available, or the look had no use for them (not waited for).
    pub pgs: Option<PgStates>,
    /// How much longer the PG states may trail a change of the OSD map's placement that was
    /// first seen less than the mgr's stats period ago (None: they cannot, or not known).
    pub pgs_trail_placement: Option<Duration>,
}

/// Asks `status`, `osd dump` and `pg stat` in parallel. Fails with the first error, except that
/// `pg stat` is given up when `status` reports no mgr.
pub async fn gather_facts(client: &dyn CephClient) -> Result<CephFacts, CephError> {
    gather_facts_wanting_pgs(client, &|_| true).await
}

/// [`gather_facts`], where `pg stat` is also given up (`pgs: None`) when `wants_pgs` says the
/// OSD map makes the PG states moot: a mgr gone but not yet known gone would hold the look
/// until its bound.
async fn gather_facts_wanting_pgs(
    client: &dyn CephClient,
    wants_pgs: &(dyn Fn(&OsdDump) -> bool + Sync),
) -> Result<CephFacts, CephError> {
    let mut pgs = client.pg_states();
    let mut pgs_answer = None;
    let mon_answers = futures::future::try_join(client.status(), client.osd_dump());
    tokio::pin!(mon_answers);
    let (status, osds) = loop {
        tokio::select! {
            answers = &mut mon_answers => break answers?,
            answer = &mut pgs, if pgs_answer.is_none() => pgs_answer = Some(answer),
        }
    };
    let pgs = if status.mgr_available && wants_pgs(&osds) {
        Some(match pgs_answer {
            Some(answer) => answer?,
            None => pgs.await?,
        })
    } else {
        None
    };
    Ok(CephFacts {
        status,
        osds,
        pgs,
        pgs_trail_placement: None,
    })
}

/// The PGs on each of `ids` as reported (`pg ls-by-osd`), asked at once; an id whose
/// question failed (down, or the key lacks the cap) is left out.
pub type PgsOnOsds = BTreeMap<OsdId, Vec<PgBrief>>;

/// [`gather_facts`] and, at the same time, the PGs on each of `ids`. Without a mgr (as
/// `status` says) those answers are not waited for: they would hang until their bound.
///
/// `wants_pgs` says from the OSD map whether the PG answers matter for this look (e.g. not while
/// a stopped OSD's new daemon is not up yet); when they do not, neither `pg stat` nor the PGs on
/// `ids` are waited for (`pgs: None`, no PGs on OSDs).
pub async fn gather_step_facts(
    client: &dyn CephClient,
    ids: &[OsdId],
    wants_pgs: &(dyn Fn(&OsdDump) -> bool + Sync),
) -> Result<(CephFacts, PgsOnOsds), CephError> {
    let pgs_on = futures::future::join_all(ids.iter().map(|&id| async move {
        let pgs = client.pgs_on_osd(id).await;
        if let Err(error) = &pgs {
            tracing::debug!(osd = %id, %error, "no PGs by OSD");
        }
        pgs.ok().map(|pgs| (id, pgs))
    }));
    tokio::pin!(pgs_on);
    let facts = gather_facts_wanting_pgs(client, wants_pgs);
    tokio::pin!(facts);
    let mut pgs_on_answer = None;
    let facts = loop {
        tokio::select! {
            facts = &mut facts => break facts?,
            answer = &mut pgs_on, if pgs_on_answer.is_none() => pgs_on_answer = Some(answer),
        }
    };
    if facts.pgs.is_none() {
        return Ok((facts, PgsOnOsds::new()));
    }
    let pgs_on = match pgs_on_answer {
        Some(answer) => answer,
        None => pgs_on.await,
    };
    Ok((facts, pgs_on.into_iter().flatten().collect()))
}

#[cfg(test)]
mod tests;
