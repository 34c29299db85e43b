//! Asking Ceph for the planner: where the open step stands, and the gate's answer for the
//! keys a plan proposes to take down. Any failure to ask becomes a `Wait` (fail closed): no
//! pod goes down on no answer.

use crate::ceph::{
    confirm, gather_facts, gather_step_facts, map_osd_ids, precheck, Blocker, CephClient,
    CephError, CephFacts, GateDecision, KeyIds, KeyToMap, MappedKey, OsdId, OtherCephOsds, PodRef,
    StepProgress,
};
use crate::crd::osd::OsdKey;
use crate::crd::CephOsd;
use crate::labels;
use crate::plan::ceph_gate::{
    domain_prefixes, CephInput, CephView, GateAnswer, GateOff, GateSubject, DEFAULT_MAX_NOOUT,
    QUICK_LOOKS, SLOW_LOOKS,
};
use crate::plan::ObservedPod;
use crate::runtime::ceph::ceph_drain::look_at_drain;
use crate::runtime::memory::Memory;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::SignedDuration;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};
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
            pg_stats_lag: crate::ceph::DEFAULT_PG_STATS_LAG,
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
    let off = |why| CephView {
        input: CephInput::Off { why },
        step: None,
        max_noout,
        look_every: SLOW_LOOKS,
        pgs_unclean: None,
    };
    let Some(ceph) = ceph else {
        return (off(GateOff::NotConfigured), None);
    };
    let look_every = if ceph.keeps_connected() {
        QUICK_LOOKS
    } else {
        SLOW_LOOKS
    };
    let recent_look = look_every.unsigned_abs() * RECENT_LOOK_PERCENT / 100;
    if cr.spec.skips_ceph_gate() {
        return (off(GateOff::Skipped), None);
    }
    let mut looked = None;
    let open = cr.status.as_ref().and_then(|s| s.ceph_step.as_ref());
    let key = cr.object_key();
    let step = match open {
        None => {
            memory.step_watch(&key, None, settings.pg_stats_lag, |_| ());
            None
        }
        Some(open) if open.drain.is_some() => {
            let (progress, facts) = look_at_drain(ceph, open).await;
            looked = facts;
            tracing::debug!(cephosd = %key, ?progress, "looked at the open drain");
            Some(StepProgress::Draining(progress))
        }
        Some(open) => {
            let at = Instant::now();
            let recent = memory
                .step_watch(&key, Some(open), settings.pg_stats_lag, |watch| {
                    watch.recent(at, recent_look)
                })
                .flatten();
            let ids: Vec<OsdId> = open.osds.iter().map(|o| OsdId(o.id)).collect();
            let progress = match recent {
                Some(progress) => Ok(Some(progress)),
                None => gather_step_facts(ceph, &ids).await.map(|(facts, pgs_on)| {
                    let progress =
                        memory.step_watch(&key, Some(open), settings.pg_stats_lag, |watch| {
                            watch.observe(at, &facts, &pgs_on)
                        });
                    looked = Some(facts);
                    progress
                }),
            };
            let progress = match progress {
                Ok(progress) => progress,
                Err(error) => Some(StepProgress::Recovering {
                    blockers: vec![Blocker::NoAnswer {
                        error: error.to_string(),
                    }],
                }),
            };
            tracing::debug!(cephosd = %key, ?progress, "looked at the open Ceph step");
            progress
        }
    };
    let pgs_unclean = if cr.spec.manages_disruption_budget() {
        let pgs = match &looked {
            Some(facts) => Ok(facts.pgs.clone()),
            None => tokio::time::timeout(PG_LOOK_TIMEOUT, gather_facts(ceph))
                .await
                .unwrap_or_else(|_| {
                    Err(CephError::Timeout {
                        command: "status, osd dump, pg stat".to_owned(),
                        timeout: PG_LOOK_TIMEOUT,
                    })
                })
                .map(|facts| facts.pgs),
        };
        pgs_unclean(pgs)
    } else {
        None
    };
    let view = CephView {
        input: CephInput::NotAsked,
        step,
        max_noout,
        look_every,
        pgs_unclean,
    };
    (view, looked)
}

/// How long a reconcile waits for Ceph's PG states for the disruption budget (a few
/// milliseconds over the session): past it the budget closes and the reconcile goes on.
const PG_LOOK_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the disruption budget closes for Ceph's PGs: some are not clean, no mgr knows, or Ceph
/// could not tell (fail closed).
fn pgs_unclean(pgs: Result<Option<crate::ceph::PgStates>, CephError>) -> Option<String> {
    match pgs {
        Ok(None) => Some("Ceph has no mgr to tell whether its PGs are clean".to_owned()),
        Ok(Some(pgs)) if pgs.all_clean() => None,
        Ok(Some(pgs)) if !pgs.ready => {
            Some("Ceph's mgr does not know the PG states yet".to_owned())
        }
        Ok(Some(pgs)) => Some(format!(
            "Ceph's PGs are not all clean ({})",
            pgs.describe_not_clean()
        )),
        Err(error) => Some(format!(
            "Ceph did not tell whether its PGs are clean: {error}"
        )),
    }
}

/// Ids an admin stated on a pod (`ceph.elemental.net/osd-ids: "3,7"`): none when absent;
/// the value itself when it is not a list of numbers (a typo never maps a pod, and is said).
fn stated_ids(pod: &Pod) -> Option<Result<BTreeSet<OsdId>, String>> {
    let text = pod.annotations().get(labels::OSD_IDS)?;
    let ids: Option<BTreeSet<OsdId>> = text
        .split(',')
        .map(|id| id.trim().parse().map(OsdId).ok())
        .collect();
    Some(ids.ok_or_else(|| text.clone()))
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
}

/// Asks Ceph about `question` (the keys a plan of `observed` proposes to take down): one look at the
/// cluster (`looked`, when one was just taken in this reconcile) and `osd metadata` at once,
/// every key the operator runs mapped to its ids (beside what `others`, the other CephOSDs,
/// hold), the precheck, then `ok-to-stop` for exactly the ids to stop.
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
    } = *asked;
    let keys = keys_to_map(cr, observed, pods, question);
    let mut answer = GateAnswer {
        keys: question
            .iter()
            .map(|s| (s.key.clone(), BTreeSet::new()))
            .collect(),
        decision: GateDecision::no_answer(&"not asked yet"),
        up_from: BTreeMap::new(),
        learned: BTreeMap::new(),
        noout_before: BTreeSet::new(),
        unreadable_statements: keys
            .iter()
            .filter_map(|k| {
                Some((
                    k.pod.as_ref()?.name.clone(),
                    k.unreadable_statement.clone()?,
                ))
            })
            .collect(),
        out: BTreeSet::new(),
    };
    let facts = async {
        match looked {
            Some(facts) => Ok(facts),
            None => gather_facts(ceph).await,
        }
    };
    let looked = futures::future::try_join(facts, ceph.osd_metadata()).await;
    let (facts, metadata) = match looked {
        Ok(looked) => looked,
        Err(error) => {
            answer.decision = GateDecision::no_answer(&error);
            return answer;
        }
    };
    let mapped = map_osd_ids(&keys, &metadata, &facts.osds, others);
    // Leaving keys are drained, not stopped: no `ok-to-stop` (`plan::drain`).
    let draining = !question.is_empty() && question.iter().all(|s| s.leaving);
    let mut known: BTreeMap<OsdKey, BTreeSet<OsdId>> = BTreeMap::new();
    for m in &mapped {
        let KeyIds::Known { ids, source } = &m.ids else {
            continue;
        };
        let Some(key) = question
            .iter()
            .map(|s| &s.key)
            .chain(observed.iter().filter_map(|p| p.key.as_ref()))
            .find(|k| k.to_string() == m.key)
        else {
            continue;
        };
        if source.learnt() {
            answer.learned.insert(key.clone(), ids.clone());
        }
        known.insert(key.clone(), ids.clone());
    }
    // Several update domains proposed together that Ceph does not let go at once: fewer of
    // them, the first ones, down to the first alone (whose answer then stands).
    for subjects in domain_prefixes(question) {
        let asked: BTreeSet<String> = subjects.iter().map(|s| s.key.to_string()).collect();
        let domain: Vec<_> = mapped
            .iter()
            .filter(|m| asked.contains(&m.key))
            .cloned()
            .collect();
        answer.keys = subjects
            .iter()
            .map(|s| {
                (
                    s.key.clone(),
                    known.get(&s.key).cloned().unwrap_or_default(),
                )
            })
            .collect();
        (answer.decision, answer.up_from) = decide(ceph, &facts, &domain, draining).await;
        if let GateDecision::Proceed { ids } = &answer.decision {
            answer.noout_before = ids
                .iter()
                .filter(|id| facts.osds.osds.get(id).is_some_and(|o| o.noout))
                .copied()
                .collect();
            answer.out = (answer.keys.values().flatten())
                .filter(|id| facts.osds.osds.get(id).is_some_and(|o| !o.is_in))
                .copied()
                .collect();
            break;
        }
        let domains: BTreeSet<&str> = subjects.iter().map(|s| s.domain.as_str()).collect();
        if domains.len() > 1 {
            tracing::info!(cephosd = %cr.object_key(), domains = domains.len(), decision = %answer.decision, "Ceph does not let these update domains stop together: asking about fewer");
        }
    }
    answer
}

/// The precheck of `domain` on `facts`, then `ok-to-stop` for its ids (unless all are down
/// already, or it is a drain, which stops nothing), with each id's `up_from` before the stop.
async fn decide(
    ceph: &dyn CephClient,
    facts: &CephFacts,
    domain: &[MappedKey],
    drain: bool,
) -> (GateDecision, BTreeMap<OsdId, u64>) {
    match precheck(facts, domain) {
        GateDecision::Proceed { ids } if !ids.is_empty() => {
            let up_from = ids
                .iter()
                .filter_map(|id| Some((*id, facts.osds.osds.get(id)?.up_from)))
                .collect();
            let all_down = ids
                .iter()
                .all(|id| facts.osds.osds.get(id).is_some_and(|o| !o.up));
            if all_down || drain {
                // Nothing up to stop: ok-to-stop has nothing to say.
                (GateDecision::Proceed { ids }, up_from)
            } else {
                (ask_ok_to_stop(ceph, &ids).await, up_from)
            }
        }
        decision => (decision, BTreeMap::new()),
    }
}

/// `ok-to-stop` for exactly `ids`, confirmed.
async fn ask_ok_to_stop(ceph: &dyn CephClient, ids: &BTreeSet<OsdId>) -> GateDecision {
    let asked: Vec<OsdId> = ids.iter().copied().collect();
    match ceph.ok_to_stop(&asked).await {
        Ok(answer) => confirm(ids, &answer),
        Err(error) => GateDecision::no_answer(&error),
    }
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
