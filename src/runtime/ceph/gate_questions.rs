//! The gate's questions to Ceph: where the open step or drain stands (`first_view`, a list of
//! named looks), and the answer for the keys a plan proposes to take down (`answer`). Any
//! failure to ask becomes a `Wait` (fail closed): no pod goes down on no answer.

use crate::ceph::{
    gather_facts, gather_step_facts, ids_learnt, map_osd_ids, CephClient, CephError, CephFacts,
    DaemonReleases, KeyToMap, OsdDump, OsdId, OsdMetadata, OtherCephOsds, PgsOnOsds, PodRef,
    Release,
};
use crate::crd::osd::OsdKey;
use crate::crd::{CephOsd, CephStep};
use crate::labels;
use crate::plan::gate::conversation::{self, ReleaseInput, Turn};
use crate::plan::gate::release::{needs_versions, ReleaseLook};
use crate::plan::gate::{
    not_booted, read_stated_ids, Blocker, CephInput, CephView, GateAnswer, GateDecision, GateOff,
    GateSubject, StepProgress, DEFAULT_MAX_NOOUT, DRAIN_CONFIRM_GAP, QUICK_LOOKS, SLOW_LOOKS,
};
use crate::plan::rules::budget::closed_for_pgs;
use crate::plan::rules::finalize::{is_done, requested_release};
use crate::plan::rules::releases::upgrade_under_way;
use crate::plan::ObservedPod;
use crate::runtime::ceph::crash_look::{look_at_crashes, CrashRead};
use crate::runtime::ceph::drain_look::look_at_drain;
use crate::runtime::ceph::placement::PlacementClock;
use crate::runtime::ceph::replacement_looks::{look_at_backfill, look_before_destroy};
use crate::runtime::memory::Memory;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::SignedDuration;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the operator gates rollout steps.
#[derive(Clone, Debug)]
pub struct GateSettings {
    /// How long `noout` may be held.
    pub max_noout: Duration,
    /// How long after every stopped OSD is back PG states are trusted (`StepWatch`).
    pub pg_stats_lag: Duration,
    /// The namespace of the Ceph clusters' step locks (one Lease per fsid), shared by every
    /// operator on the same Ceph; None: no step starts (the condition says why).
    pub lock_namespace: Option<String>,
}

impl Default for GateSettings {
    fn default() -> Self {
        Self {
            max_noout: DEFAULT_MAX_NOOUT.unsigned_abs(),
            pg_stats_lag: crate::plan::gate::DEFAULT_PG_STATS_LAG,
            lock_namespace: None,
        }
    }
}

/// A look at an open step started this recently (this part of the look interval) stands for
/// the next reconcile too (one brought by a pod's event): looks follow each other about that
/// far apart anyway.
const RECENT_LOOK_PERCENT: u32 = 80;

/// The view of Ceph a first plan of `cr` gets: off (no Ceph, or the CephOSD skips it), else
/// not asked, with where its open step stands (one look at Ceph fed to the step's watch, or
/// the last one when recent); with the facts of that look when one was taken (an answer
/// asked in the same reconcile starts from them).
pub(crate) async fn first_view(
    ceph: Option<&dyn CephClient>,
    memory: &Memory,
    cr: &CephOsd,
    settings: &GateSettings,
) -> (CephView, Option<CephFacts>) {
    let max_noout = SignedDuration::try_from(settings.max_noout).unwrap_or(SignedDuration::MAX);
    let Some(ceph) = ceph else {
        return (view_off(GateOff::NotConfigured, max_noout), None);
    };
    let look_every = look_every(ceph);
    if cr.spec.skips_ceph_gate() {
        return (view_off(GateOff::Skipped, max_noout), None);
    }
    let (step, looked) = look_at_open_step(ceph, memory, cr, settings, look_every).await;
    let key = cr.object_key();
    let clock = PlacementClock {
        memory,
        key: &key,
        lag: settings.pg_stats_lag,
    };
    let at = Instant::now();
    let fresh = match osd_map_and_pgs(ceph, looked.as_ref()).await {
        Ok(facts) => Ok(clock.stamp(ceph, facts, at).await),
        Err(error) => Err(error),
    };
    // The same look, when one was taken for the open step.
    let looked = looked.map(|mut facts| {
        facts.pgs_trail_placement = fresh.as_ref().ok().and_then(|f| f.pgs_trail_placement);
        facts
    });
    let requested = requested_release(cr, k8s_openapi::jiff::Timestamp::now());
    let release_look = match requested.as_deref() {
        Some(requested) => {
            let done = fresh
                .as_ref()
                .is_ok_and(|f| is_done(requested, f.osds.require_osd_release));
            Some(look_at_releases(ceph, done, fresh.as_ref()).await)
        }
        // An upgrade under way: read as a step ends (its OSDs booted), and now and then.
        None if upgrade_under_way(cr.status.as_ref().and_then(|s| s.releases.as_ref()))
            && (matches!(step, Some(StepProgress::Done))
                || memory.releases_read_due(&key, Instant::now(), RELEASES_READ_EVERY)) =>
        {
            Some(look_at_releases(ceph, false, fresh.as_ref()).await)
        }
        None => None,
    };
    let mgr_available = fresh.as_ref().is_ok_and(|f| f.status.mgr_available);
    let crashes = look_at_crashes(ceph, memory, cr, CrashRead::Recent, mgr_available).await;
    let osd_map = fresh.as_ref().ok().map(|facts| &facts.osds);
    let destroy_look = look_before_destroy(ceph, cr, osd_map).await;
    let backfill_look = look_at_backfill(ceph, cr, osd_map).await;
    // PG states that may still trail a placement change (an OSD just marked in) are not read.
    let pgs = (fresh.as_ref().ok())
        .filter(|facts| facts.pgs_trail_placement.is_none())
        .and_then(|facts| facts.pgs.clone());
    let view = CephView {
        input: CephInput::NotAsked,
        step,
        max_noout,
        look_every,
        pgs_unclean: pgs_unclean(cr, &fresh),
        noout_now: looked.as_ref().map(noout_now),
        lock_lost: None,
        osds: fresh.ok().map(|facts| facts.osds),
        release_look,
        crashes,
        pgs,
        destroy_look,
        backfill_look,
        learned_ids: None,
    };
    (view, looked)
}

/// How often the OSDs' releases are read for the status while an upgrade is under way (its
/// steps' questions and finalize read them besides).
const RELEASES_READ_EVERY: Duration = Duration::from_secs(30);

/// The releases of every monitor and OSD (`versions`, `osd metadata`) beside the OSD map of
/// `fresh`, for a finalize request or the status of an upgrade under way; only the OSD map
/// once the finalize is `done`. Err: what Ceph did not answer.
async fn look_at_releases(
    ceph: &dyn CephClient,
    done: bool,
    fresh: Result<&CephFacts, &CephError>,
) -> Result<ReleaseLook, String> {
    let facts = fresh.map_err(ToString::to_string)?;
    let require_osd_release = facts.osds.require_osd_release;
    if done {
        return Ok(ReleaseLook {
            daemons: DaemonReleases::default(),
            osds: BTreeMap::new(),
            require_osd_release,
        });
    }
    let (daemons, metadata) = futures::future::try_join(ceph.versions(), ceph.osd_metadata())
        .await
        .map_err(|e| e.to_string())?;
    Ok(ReleaseLook {
        daemons,
        osds: (facts.osds.osds.keys())
            .map(|id| (*id, metadata.get(id).and_then(OsdMetadata::release)))
            .collect(),
        require_osd_release: facts.osds.require_osd_release,
    })
}

/// The gate off, for `why`.
fn view_off(why: GateOff, max_noout: SignedDuration) -> CephView {
    CephView {
        input: CephInput::Off { why },
        max_noout,
        ..CephView::default()
    }
}

/// How often an open step is looked at: more often over a long-lived connection.
fn look_every(ceph: &dyn CephClient) -> SignedDuration {
    if ceph.keeps_connected() {
        QUICK_LOOKS
    } else {
        SLOW_LOOKS
    }
}

/// Where the open step of `cr` stands (a drain's or a rollout step's), with the look at Ceph
/// taken for it; no step open: its watch is dropped.
async fn look_at_open_step(
    ceph: &dyn CephClient,
    memory: &Memory,
    cr: &CephOsd,
    settings: &GateSettings,
    look_every: SignedDuration,
) -> (Option<StepProgress>, Option<CephFacts>) {
    let key = cr.object_key();
    match cr.status.as_ref().and_then(|s| s.ceph_step.as_ref()) {
        None => {
            memory.step_watch(&key, None, settings.pg_stats_lag, |_| ());
            (None, None)
        }
        Some(open) if open.drain.is_some() => {
            let clock = PlacementClock {
                memory,
                key: &key,
                lag: settings.pg_stats_lag,
            };
            let (progress, facts) = look_at_drain(ceph, open, &clock).await;
            let progress =
                memory.drain_confirmed(&key, open, progress, Instant::now(), DRAIN_CONFIRM_GAP);
            tracing::debug!(cephosd = %key, ?progress, "looked at the open drain");
            (Some(StepProgress::Draining(progress)), facts)
        }
        Some(open) => {
            let recent_look = look_every.unsigned_abs() * RECENT_LOOK_PERCENT / 100;
            let watch = StepWatchAt {
                memory,
                key: &key,
                open,
                pg_stats_lag: settings.pg_stats_lag,
                at: Instant::now(),
            };
            look_at_rollout_step(ceph, &watch, recent_look).await
        }
    }
}

/// The watch of the open rollout step `open` of the CephOSD `key`, fed at `at`.
struct StepWatchAt<'a> {
    memory: &'a Memory,
    key: &'a str,
    open: &'a CephStep,
    pg_stats_lag: Duration,
    at: Instant,
}

/// Where the open rollout step stands: the step watch's last look when it is more recent than
/// `recent_look`, else a new look fed to it (kept for reuse when it holds the PG states).
async fn look_at_rollout_step(
    ceph: &dyn CephClient,
    watch: &StepWatchAt<'_>,
    recent_look: Duration,
) -> (Option<StepProgress>, Option<CephFacts>) {
    let StepWatchAt {
        memory,
        key,
        open,
        pg_stats_lag,
        at,
    } = *watch;
    let recent = memory
        .step_watch(key, Some(open), pg_stats_lag, |w| w.recent(at, recent_look))
        .flatten();
    let mut looked = None;
    let clock = PlacementClock {
        memory,
        key,
        lag: pg_stats_lag,
    };
    let progress = match recent {
        Some(progress) => Ok(Some(progress)),
        None => match look_at_step_osds(ceph, open).await {
            Ok((facts, pgs_on)) => Ok((clock.stamp(ceph, facts, at).await, pgs_on)),
            Err(error) => Err(error),
        }
        .map(|(facts, pgs_on)| {
            let progress = memory.step_watch(key, Some(open), pg_stats_lag, |w| {
                w.observe(at, &facts, &pgs_on)
            });
            looked = reusable(facts);
            progress
        }),
    };
    let progress = progress.unwrap_or_else(|error| Some(StepProgress::unanswered(&error)));
    tracing::debug!(cephosd = %key, ?progress, "looked at the open Ceph step");
    (progress, looked)
}

/// One look at the cluster and the PGs on the OSDs `open` stopped. While a new daemon is not
/// up, the PG answers are moot: not waited for (a mgr gone but not yet known gone would hold
/// this look, and the creation of the step's pods with it, until the call's bound).
async fn look_at_step_osds(
    ceph: &dyn CephClient,
    open: &CephStep,
) -> Result<(CephFacts, PgsOnOsds), CephError> {
    let ids: Vec<OsdId> = open.osds.iter().map(|o| OsdId(o.id)).collect();
    let up_from_before: BTreeMap<OsdId, u64> =
        open.osds.iter().map(|o| (OsdId(o.id), o.up_from)).collect();
    let wants_pgs = |osds: &OsdDump| not_booted(&up_from_before, osds).is_empty();
    gather_step_facts(ceph, &ids, &wants_pgs).await
}

/// A look without the PG states it skipped is not reused for the budget or the gate's
/// question.
fn reusable(facts: CephFacts) -> Option<CephFacts> {
    let skipped_pgs = facts.status.mgr_available && facts.pgs.is_none();
    Some(facts).filter(|_| !skipped_pgs)
}

/// Every plan reads the OSD map (who is in or out), the PG states too for the budget: from
/// the look just taken, else from a new one, bounded by `PG_LOOK_TIMEOUT`.
async fn osd_map_and_pgs(
    ceph: &dyn CephClient,
    looked: Option<&CephFacts>,
) -> Result<CephFacts, CephError> {
    match looked {
        Some(facts) => Ok(facts.clone()),
        None => tokio::time::timeout(PG_LOOK_TIMEOUT, gather_facts(ceph))
            .await
            .unwrap_or_else(|_| {
                Err(CephError::Timeout {
                    command: "status, osd dump, pg stat".to_owned(),
                    timeout: PG_LOOK_TIMEOUT,
                })
            }),
    }
}

/// Why the disruption budget closes for Ceph's PGs, when the CephOSD manages one.
fn pgs_unclean(cr: &CephOsd, fresh: &Result<CephFacts, CephError>) -> Option<String> {
    if !cr.spec.manages_disruption_budget() {
        return None;
    }
    closed_for_pgs(
        fresh
            .as_ref()
            .map(|facts| facts.pgs.as_ref())
            .map_err(|e| e as &dyn fmt::Display),
    )
}

/// The OSDs a look showed carrying `noout`.
fn noout_now(facts: &CephFacts) -> BTreeSet<OsdId> {
    facts
        .osds
        .with_noout(facts.osds.osds.keys())
        .into_iter()
        .collect()
}

/// How long a reconcile waits for Ceph's PG states for the disruption budget (a few
/// milliseconds over the session): past it the budget closes and the reconcile goes on.
const PG_LOOK_TIMEOUT: Duration = Duration::from_secs(2);

/// Ids an admin stated on a pod (`ceph.elemental.net/osd-ids: "3,7"`, read by the planner's
/// `read_stated_ids`): none when absent.
fn stated_ids(pod: &Pod) -> Option<Result<BTreeSet<OsdId>, String>> {
    let text = pod.annotations().get(labels::OSD_IDS)?;
    Some(read_stated_ids(text))
}

/// What the operator knows of each key it runs before asking Ceph: its pod (as its daemon
/// reports it), the ids the status recorded and the ids an admin stated; the question's
/// keys first.
fn keys_to_map(
    cr: &CephOsd,
    observed: &[ObservedPod],
    pods: &[Arc<Pod>],
    question: &[GateSubject],
) -> Vec<KeyToMap> {
    let by_name: BTreeMap<&str, &Pod> = pods
        .iter()
        .filter_map(|p| Some((p.metadata.name.as_deref()?, &**p)))
        .collect();
    let namespace = cr.namespace().unwrap_or_default();
    let recorded = cr
        .status
        .as_ref()
        .map(|s| s.osd_ids.clone())
        .unwrap_or_default();
    let key_to_map = |key: &OsdKey, pod: Option<&str>, step_domain: Option<&str>| {
        let found = pod.and_then(|name| by_name.get(name).copied());
        let stated = found.and_then(stated_ids);
        KeyToMap {
            key: key.to_string(),
            pod: pod.map(|name| PodRef {
                namespace: namespace.clone(),
                name: name.to_owned(),
                node: found
                    .and_then(|p| p.spec.as_ref()?.node_name.clone())
                    .unwrap_or_else(|| key.host.clone()),
            }),
            recorded: recorded
                .get(&key.to_string())
                .map(|ids| ids.iter().copied().map(OsdId).collect())
                .unwrap_or_default(),
            stated: stated.clone().and_then(Result::ok),
            unreadable_statement: stated.and_then(Result::err),
            step_domain: step_domain.map(str::to_owned),
        }
    };
    // Every key the operator runs, the question's own pods first.
    let mut keys: Vec<KeyToMap> = question
        .iter()
        .map(|s| key_to_map(&s.key, s.pod.as_deref(), Some(&s.domain)))
        .collect();
    for pod in observed.iter().filter(|p| p.is_live()) {
        if let Some(key) = &pod.key {
            if keys.iter().all(|k| k.key != key.to_string()) {
                keys.push(key_to_map(key, Some(&pod.name), None));
            }
        }
    }
    keys
}

/// What a plan asks Ceph about: the keys it proposes to take down (`subjects`), and what
/// the operator knows of them and of the other CephOSDs.
#[derive(Clone, Copy)]
pub(crate) struct Question<'a> {
    pub cr: &'a CephOsd,
    pub observed: &'a [ObservedPod],
    pub pods: &'a [Arc<Pod>],
    pub subjects: &'a [GateSubject],
    pub others: &'a OtherCephOsds,
    /// The release the template's image reported (its pre-pull pods), when one did.
    pub image_release: Option<Release>,
    /// Stamps a look the answer takes itself (None: left unstamped).
    pub placement: Option<PlacementClock<'a>>,
}

/// Asks Ceph about `question` (the keys a plan of `observed` proposes to take down): one look at the
/// cluster (`looked`, when one was just taken in this reconcile) and `osd metadata` at once,
/// every key the operator runs mapped to its ids (beside what `others`, the other CephOSDs,
/// hold), then the questions the planner's conversation asks (`ok-to-stop` for exactly the
/// ids to stop), each reply handed back to it.
pub(crate) async fn answer(
    ceph: &dyn CephClient,
    asked: &Question<'_>,
    looked: Option<CephFacts>,
) -> GateAnswer {
    let Question {
        cr,
        observed,
        pods,
        subjects: question,
        others,
        image_release,
        placement,
    } = *asked;
    let keys = keys_to_map(cr, observed, pods, question);
    let unreadable_statements = keys
        .iter()
        .filter_map(|k| {
            Some((
                k.pod.as_ref()?.name.clone(),
                k.unreadable_statement.clone()?,
            ))
        })
        .collect();
    let facts = async {
        if let Some(facts) = looked {
            return Ok(facts);
        }
        let at = Instant::now();
        let facts = gather_facts(ceph).await?;
        Ok(match placement {
            Some(clock) => clock.stamp(ceph, facts, at).await,
            None => facts,
        })
    };
    let (facts, metadata) = match futures::future::try_join(facts, ceph.osd_metadata()).await {
        Ok(looked) => looked,
        Err(error) => return conversation::unanswered(question, unreadable_statements, &error),
    };
    let osd_releases: BTreeMap<OsdId, Release> = (metadata.values())
        .filter_map(|m| Some((m.id, m.release()?)))
        .collect();
    // Asked only when releases differ: a failed answer refuses a release change, nothing else.
    let daemons = if needs_versions(image_release, &osd_releases) {
        ceph.versions().await.ok()
    } else {
        None
    };
    let releases = ReleaseInput {
        image: image_release,
        updated: (observed.iter())
            .filter(|p| p.runs_the_template())
            .filter_map(|p| p.key.clone())
            .collect(),
        osds: osd_releases.clone(),
        daemons,
    };
    let mapped = map_osd_ids(&keys, &metadata, &facts.osds, others);
    let runs: Vec<OsdKey> = observed.iter().filter_map(|p| p.key.clone()).collect();
    // The step of this CephOSD that just ended (a question is asked only once it has).
    let own_ended = (cr.status.as_ref())
        .and_then(|s| s.ceph_step.as_ref())
        .map(|step| step.noout.iter().copied().map(OsdId).collect())
        .unwrap_or_default();
    let mut turn = conversation::start_after(
        question,
        &runs,
        facts,
        mapped,
        unreadable_statements,
        own_ended,
        releases,
    );
    loop {
        match turn {
            Turn::Ask(asking) => {
                let ids: Vec<OsdId> = asking.ids().iter().copied().collect();
                let reply = ceph.ok_to_stop(&ids).await;
                turn = asking.heard(reply.as_ref().map_err(|e| e as &dyn fmt::Display));
            }
            Turn::Answered(answered) => {
                for refused in &answered.refused_together {
                    tracing::info!(cephosd = %cr.object_key(), domains = refused.domains, decision = %refused.decision, "Ceph does not let these update domains stop together: asking about fewer");
                }
                return GateAnswer {
                    releases: Some(osd_releases),
                    ..answered.answer
                };
            }
        }
    }
}

/// The ids Ceph's `osd metadata` shows for each key the operator runs (as a question maps
/// them, asking nothing else): for a disk replacement whose key's id was never learnt (no
/// rollout step asked Ceph since). Empty when Ceph does not answer.
pub(crate) async fn ids_in_metadata(
    ceph: &dyn CephClient,
    asked: &Question<'_>,
) -> BTreeMap<OsdKey, BTreeSet<OsdId>> {
    let keys = keys_to_map(asked.cr, asked.observed, asked.pods, &[]);
    let Ok((dump, metadata)) =
        futures::future::try_join(ceph.osd_dump(), ceph.osd_metadata()).await
    else {
        return BTreeMap::new();
    };
    let runs: BTreeMap<String, &OsdKey> = (asked.observed.iter())
        .filter_map(|p| p.key.as_ref())
        .map(|k| (k.to_string(), k))
        .collect();
    let mapped = map_osd_ids(&keys, &metadata, &dump, asked.others);
    (ids_learnt(&keys, mapped, &metadata, &dump).into_iter())
        .filter_map(|(key, ids)| Some(((*runs.get(&key)?).clone(), ids)))
        .collect()
}

/// The metric label of a decision: `Proceed`, or its first blocker's category.
pub(crate) fn decision_label(decision: &GateDecision) -> &'static str {
    decision
        .blockers()
        .first()
        .map_or("Proceed", Blocker::category)
}

#[cfg(test)]
mod tests;
