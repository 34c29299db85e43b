//! The gate's conversation with Ceph about one proposal, pure: from one look at the cluster
//! and the keys mapped to their ids, it says which question comes next (`ok-to-stop` for
//! exactly some ids) and, fed Ceph's replies, reaches the `GateAnswer`. The runtime only asks
//! what a `Turn` says and hands back what Ceph replied.

use super::asking::{after_precheck, asked_together, AfterPrecheck, DomainChoice};
use super::io::{GateAnswer, GateSubject, RefusedWhole};
use super::release::{refusal, target_release, ReleaseFacts, ReleaseRefusal};
use super::verdict::{confirm, Blocker, GateDecision};
use crate::ceph::{CephFacts, DaemonReleases, KeyIds, MappedKey, OkToStop, OsdId, Release};
use crate::crd::osd::OsdKey;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// What the runtime does next.
#[derive(Debug)]
pub(crate) enum Turn {
    /// Ask Ceph's `ok-to-stop` about exactly `Asking::ids` (the step's and every other OSD
    /// carrying `noout`: `asked_together`), and hand its reply to `Asking::heard`.
    Ask(Asking),
    /// Nothing more to ask.
    Answered(Box<Answered>),
}

/// The end of a conversation.
#[derive(Debug)]
pub(crate) struct Answered {
    pub answer: GateAnswer,
    /// The sets of several update domains Ceph did not let stop together, in the order they
    /// were asked about (each followed by a question about fewer domains).
    pub refused_together: Vec<RefusedTogether>,
}

/// A set of update domains Ceph did not let stop together.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RefusedTogether {
    pub domains: usize,
    pub decision: GateDecision,
}

/// A conversation waiting for Ceph's `ok-to-stop` about `ids`: the ids to stop (`step`) and
/// those asked about together with them.
#[derive(Debug)]
pub(crate) struct Asking {
    ids: BTreeSet<OsdId>,
    step: BTreeSet<OsdId>,
    talk: Box<Conversation>,
}

impl Asking {
    /// The ids `ok-to-stop` is asked about, no more and no fewer.
    pub(crate) fn ids(&self) -> &BTreeSet<OsdId> {
        &self.ids
    }

    /// Ceph's reply (or why none came: a `Wait` that says so), then the next turn. A yes
    /// covers every id asked about; the step stops only its own.
    pub(crate) fn heard(self, reply: Result<&OkToStop, &dyn fmt::Display>) -> Turn {
        let decision = match reply {
            Ok(reply) => match confirm(&self.ids, reply) {
                GateDecision::Proceed { .. } => GateDecision::Proceed { ids: self.step },
                refused => refused,
            },
            Err(error) => GateDecision::no_answer(&error),
        };
        let mut talk = *self.talk;
        talk.decided(decision);
        talk.next()
    }
}

/// What the conversation knows of Ceph releases: the release the template's image reports
/// (`image`), the keys whose pods run the template (`updated`), the release each OSD ran
/// (`osd metadata`) and `ceph versions` when it was asked.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReleaseInput {
    pub image: Option<Release>,
    pub updated: BTreeSet<OsdKey>,
    pub osds: BTreeMap<OsdId, Release>,
    pub daemons: Option<DaemonReleases>,
}

/// Where a conversation stands between questions.
#[derive(Debug)]
struct Conversation {
    facts: CephFacts,
    mapped: Vec<MappedKey>,
    /// The ids of each key `mapped` knows.
    known: BTreeMap<OsdKey, BTreeSet<OsdId>>,
    /// Every key asked about leaves the spec: a drain, which stops nothing (no `ok-to-stop`).
    draining: bool,
    /// The `noout` of this CephOSD's own step that just ended (`CephStep::noout`).
    own_ended: BTreeSet<OsdId>,
    releases: ReleaseInput,
    choice: DomainChoice,
    /// The set of update domains asked about last.
    asked: Vec<GateSubject>,
    answer: GateAnswer,
    last: Option<GateDecision>,
    refused_together: Vec<RefusedTogether>,
}

/// The answer about `question` before Ceph says anything: its keys without ids, `why` as a
/// `Wait`, and the pods whose `osd-ids` annotation is unreadable (`unreadable_statements`).
pub(crate) fn unanswered(
    question: &[GateSubject],
    unreadable_statements: BTreeMap<String, String>,
    why: &dyn fmt::Display,
) -> GateAnswer {
    let why = Blocker::NoAnswer {
        error: why.to_string(),
    };
    GateAnswer {
        unreadable_statements,
        ..GateAnswer::waiting(question, why)
    }
}

/// The first turn of the conversation about `question` (the keys a plan proposes to take
/// down), on Ceph's look `facts` and every key the operator runs mapped to its ids (`mapped`;
/// `runs`: the keys of the operator's pods). Every proposed update domain is asked about at
/// once, then fewer (`DomainChoice`); each set is prechecked, and confirmed by `ok-to-stop`
/// where the precheck says so.
#[cfg(test)]
pub(crate) fn start(
    question: &[GateSubject],
    runs: &[OsdKey],
    facts: CephFacts,
    mapped: Vec<MappedKey>,
    unreadable_statements: BTreeMap<String, String>,
) -> Turn {
    start_after(
        question,
        runs,
        facts,
        mapped,
        unreadable_statements,
        BTreeSet::new(),
        ReleaseInput::default(),
    )
}

/// `start`, right after this CephOSD's own step ended with `noout` on `own_ended` (its
/// `CephStep::noout`): those are not asked about together with the next step's. A set whose
/// OSDs Ceph's release rules keep from the template's release (`releases`) is refused before
/// anything else is asked about it.
pub(crate) fn start_after(
    question: &[GateSubject],
    runs: &[OsdKey],
    facts: CephFacts,
    mapped: Vec<MappedKey>,
    unreadable_statements: BTreeMap<String, String>,
    own_ended: BTreeSet<OsdId>,
    releases: ReleaseInput,
) -> Turn {
    let mut answer = unanswered(question, unreadable_statements, &"not asked yet");
    let known = known_ids(&mapped, question, runs, &mut answer.learned);
    Conversation {
        facts,
        mapped,
        known,
        draining: !question.is_empty() && question.iter().all(|s| s.leaving),
        own_ended,
        releases,
        choice: DomainChoice::new(question),
        asked: Vec::new(),
        answer,
        last: None,
        refused_together: Vec::new(),
    }
    .next()
}

impl Conversation {
    /// The next set of update domains prechecked, until one needs `ok-to-stop` or none is left.
    fn next(mut self) -> Turn {
        while let Some(subjects) = self.choice.next(self.last.as_ref()) {
            let asked: BTreeSet<String> = subjects.iter().map(|s| s.key.to_string()).collect();
            let domain: Vec<MappedKey> = (self.mapped.iter())
                .filter(|m| asked.contains(&m.key))
                .cloned()
                .collect();
            self.answer.keys = subjects
                .iter()
                .map(|s| {
                    let ids = self.known.get(&s.key).cloned().unwrap_or_default();
                    (s.key.clone(), ids)
                })
                .collect();
            self.asked = subjects;
            let step: BTreeSet<OsdId> = self.answer.keys.values().flatten().copied().collect();
            self.answer.asked_with = asked_together(&self.facts.osds, &step, &self.own_ended);
            if !self.draining {
                if let Some(refusal) = self.release_refusal(&step) {
                    self.decided(GateDecision::Wait {
                        blockers: vec![Blocker::Release { refusal }],
                    });
                    continue;
                }
            }
            let prechecked = after_precheck(&self.facts, &domain, self.draining);
            self.answer.up_from = prechecked.up_from;
            match prechecked.next {
                AfterPrecheck::Decided(decision) => self.decided(decision),
                AfterPrecheck::AskOkToStop(step) => {
                    let beside = asked_together(&self.facts.osds, &step, &self.own_ended);
                    let ids = step.union(&beside).copied().collect();
                    self.answer.asked_with = beside;
                    let talk = Box::new(self);
                    return Turn::Ask(Asking { ids, step, talk });
                }
            }
        }
        Turn::Answered(Box::new(Answered {
            answer: self.answer,
            refused_together: self.refused_together,
        }))
    }

    /// Ceph's release rules on restarting `step` on the template's release.
    fn release_refusal(&self, step: &BTreeSet<OsdId>) -> Option<ReleaseRefusal> {
        let releases = &self.releases;
        let updated: BTreeSet<OsdId> = (releases.updated.iter())
            .filter_map(|k| self.known.get(k))
            .flatten()
            .copied()
            .collect();
        let up: BTreeSet<OsdId> = (self.facts.osds.osds.values())
            .filter(|o| o.up)
            .map(|o| o.id)
            .collect();
        let target = target_release(releases.image, &updated, &up, &releases.osds);
        let facts = ReleaseFacts {
            daemons: releases.daemons.as_ref(),
            require_osd_release: self.facts.osds.require_osd_release,
            osds: &releases.osds,
            up: &up,
            status: &self.facts.status,
        };
        refusal(target, step, &updated, &facts)
    }

    /// Ceph's verdict on the set asked about last: a `Proceed` records which of its ids have
    /// `noout` already and which are out already; a refusal of several domains is remembered.
    fn decided(&mut self, decision: GateDecision) {
        let osds = &self.facts.osds.osds;
        if let GateDecision::Proceed { ids } = &decision {
            self.answer.noout_before = (ids.iter())
                .filter(|id| osds.get(id).is_some_and(|o| o.noout))
                .copied()
                .collect();
            self.answer.out = (self.answer.keys.values().flatten())
                .filter(|id| osds.get(id).is_some_and(|o| !o.is_in))
                .copied()
                .collect();
        } else {
            let domains: BTreeSet<&str> = self.asked.iter().map(|s| s.domain.as_str()).collect();
            let hosts: BTreeSet<&str> = self.asked.iter().map(|s| s.key.host.as_str()).collect();
            if domains.len() > 1 {
                self.refused_together.push(RefusedTogether {
                    domains: domains.len(),
                    decision: decision.clone(),
                });
            } else if hosts.len() > 1 && self.answer.refused_whole.is_none() {
                // The whole first domain: a part of it is asked about next.
                self.answer.refused_whole = (domains.first()).map(|domain| {
                    Box::new(RefusedWhole {
                        domain: (*domain).to_owned(),
                        decision: decision.clone(),
                    })
                });
            }
        }
        self.answer.decision = decision.clone();
        self.last = Some(decision);
    }
}

/// The ids of each key of `question` or of `runs` that `mapped` knows; those learnt from
/// Ceph are added to `learned` too.
fn known_ids(
    mapped: &[MappedKey],
    question: &[GateSubject],
    runs: &[OsdKey],
    learned: &mut BTreeMap<OsdKey, BTreeSet<OsdId>>,
) -> BTreeMap<OsdKey, BTreeSet<OsdId>> {
    let mut known = BTreeMap::new();
    for m in mapped {
        let KeyIds::Known { ids, source } = &m.ids else {
            continue;
        };
        let Some(key) = (question.iter().map(|s| &s.key))
            .chain(runs)
            .find(|k| k.to_string() == m.key)
        else {
            continue;
        };
        if source.learnt() {
            learned.insert(key.clone(), ids.clone());
        }
        known.insert(key.clone(), ids.clone());
    }
    known
}

#[cfg(test)]
mod tests;
