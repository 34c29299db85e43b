//! The order of the questions the runtime asks Ceph about a proposal, pure: which update
//! domains are asked about together, and whether a precheck needs Ceph's `ok-to-stop` to
//! confirm it. The runtime asks; these rules say what it asks next.

use super::io::GateSubject;
use super::verdict::{precheck, GateDecision};
use crate::ceph::{CephFacts, MappedKey, OsdId};
use std::collections::{BTreeMap, BTreeSet};

/// The subjects of the first `n` update domains of `proposed` (in the order they come), for
/// each `n` from all of them down to one: the sets Ceph may be asked about, largest first.
pub(crate) fn domain_prefixes(proposed: &[GateSubject]) -> Vec<Vec<GateSubject>> {
    let mut domains: Vec<&str> = Vec::new();
    for s in proposed {
        if !domains.contains(&s.domain.as_str()) {
            domains.push(&s.domain);
        }
    }
    (1..=domains.len())
        .rev()
        .map(|n| {
            let within = &domains[..n];
            proposed
                .iter()
                .filter(|s| within.contains(&s.domain.as_str()))
                .cloned()
                .collect()
        })
        .collect()
}

/// Which update domains go together: every proposed domain is asked about at once, then
/// fewer of them, the first ones, down to the first alone. The first set Ceph lets go is the
/// step; when Ceph lets none go, its answer about the first domain alone stands.
#[derive(Debug)]
pub(crate) struct DomainChoice {
    left: std::vec::IntoIter<Vec<GateSubject>>,
}

impl DomainChoice {
    pub(crate) fn new(proposed: &[GateSubject]) -> Self {
        Self {
            left: domain_prefixes(proposed).into_iter(),
        }
    }

    /// The next set to ask about, given Ceph's verdict on the last one (`None` before the
    /// first): none once Ceph let a set go, or after the first domain alone.
    pub(crate) fn next(&mut self, last: Option<&GateDecision>) -> Option<Vec<GateSubject>> {
        if matches!(last, Some(GateDecision::Proceed { .. })) {
            return None;
        }
        self.left.next()
    }
}

/// What follows the precheck of a set of update domains.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AfterPrecheck {
    /// Ceph's `ok-to-stop` must confirm stopping exactly these ids (`confirm` reads it).
    AskOkToStop(BTreeSet<OsdId>),
    /// The verdict stands without another question.
    Decided(GateDecision),
}

/// The precheck of `domain` and what follows it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Prechecked {
    pub next: AfterPrecheck,
    /// `up_from` of each id to stop, before the stop (empty unless the precheck passed with
    /// something to stop).
    pub up_from: BTreeMap<OsdId, u64>,
}

/// The precheck of `domain` on `facts`, then whether `ok-to-stop` must confirm it: not when
/// the precheck refuses or has nothing to stop, nor when every id is down already (nothing up
/// to stop: `ok-to-stop` has nothing to say), nor for a drain (`drain`), which stops nothing.
pub(crate) fn after_precheck(facts: &CephFacts, domain: &[MappedKey], drain: bool) -> Prechecked {
    match precheck(facts, domain) {
        GateDecision::Proceed { ids } if !ids.is_empty() => {
            let up_from = ids
                .iter()
                .filter_map(|id| Some((*id, facts.osds.osds.get(id)?.up_from)))
                .collect();
            let all_down = ids
                .iter()
                .all(|id| facts.osds.osds.get(id).is_some_and(|o| !o.up));
            let next = if all_down || drain {
                AfterPrecheck::Decided(GateDecision::Proceed { ids })
            } else {
                AfterPrecheck::AskOkToStop(ids)
            };
            Prechecked { next, up_from }
        }
        decision => Prechecked {
            next: AfterPrecheck::Decided(decision),
            up_from: BTreeMap::new(),
        },
    }
}
