//! The order of the questions the runtime asks Ceph about a proposal, pure: which update
//! domains are asked about together, and whether a precheck needs Ceph's `ok-to-stop` to
//! confirm it. The runtime asks; these rules say what it asks next.

use super::io::GateSubject;
use super::verdict::{precheck, GateDecision};
use crate::ceph::{CephFacts, MappedKey, OsdDump, OsdId};
use std::collections::{BTreeMap, BTreeSet};

/// The sets Ceph may be asked about, largest first: the subjects of the first `n` update
/// domains of `proposed` (in the order they come), for each `n` from all of them down to one;
/// then, when the first domain spans several hosts (a failure domain), its first `m` hosts for
/// each `m` from all but one down to one. A set never takes part of a host, and never reaches
/// past the first domain once it is smaller than that domain.
pub(crate) fn step_sets(proposed: &[GateSubject]) -> Vec<Vec<GateSubject>> {
    let domains = first_seen(proposed.iter().map(|s| s.domain.as_str()));
    let whole = (1..=domains.len()).rev().map(|n| {
        let within = &domains[..n];
        proposed
            .iter()
            .filter(|s| within.contains(&s.domain.as_str()))
            .cloned()
            .collect()
    });
    let first: Vec<&GateSubject> = match domains.first() {
        Some(first) => proposed.iter().filter(|s| s.domain == *first).collect(),
        None => Vec::new(),
    };
    let hosts = first_seen(first.iter().map(|s| s.key.host.as_str()));
    let parts = (1..hosts.len()).rev().map(|m| {
        let within = &hosts[..m];
        (first.iter())
            .filter(|s| within.contains(&s.key.host.as_str()))
            .map(|s| (*s).clone())
            .collect()
    });
    whole.chain(parts).collect()
}

/// `items` without repeats, in the order they first come.
fn first_seen<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

/// Whether `set` is a part of one update domain of `proposed` (some of its hosts, not all).
pub(crate) fn is_part_of_a_domain(set: &[GateSubject], proposed: &[GateSubject]) -> bool {
    let Some(first) = set.first() else {
        return false;
    };
    set.iter().all(|s| s.domain == first.domain)
        && proposed.iter().filter(|s| s.domain == first.domain).count() > set.len()
}

/// Which update domains go together: every proposed domain is asked about at once, then
/// fewer of them, the first ones, down to the first alone, then fewer of the first one's
/// hosts (`step_sets`). The first set Ceph lets go is the step; when Ceph lets none go, its
/// answer about the smallest set stands. An answer that PGs are inactive already ends the
/// questions: the cluster is not clean now (PGs peering since it was looked at), and a smaller
/// set would only dodge those PGs; the whole proposal waits and is asked about again.
#[derive(Debug)]
pub(crate) struct DomainChoice {
    left: std::vec::IntoIter<Vec<GateSubject>>,
}

impl DomainChoice {
    pub(crate) fn new(proposed: &[GateSubject]) -> Self {
        Self {
            left: step_sets(proposed).into_iter(),
        }
    }

    /// The next set to ask about, given Ceph's verdict on the last one (`None` before the
    /// first): none once Ceph let a set go or found PGs inactive already, or after the
    /// smallest.
    pub(crate) fn next(&mut self, last: Option<&GateDecision>) -> Option<Vec<GateSubject>> {
        match last {
            Some(GateDecision::Proceed { .. }) => None,
            Some(decision) if decision.finds_pgs_inactive() => None,
            _ => self.left.next(),
        }
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

/// The OSDs a step is asked about together with its own (`step`): every OSD the look `osds`
/// shows with `noout` but the step's and those of this CephOSD's own step that just ended
/// (`own_ended`: booted and clean, its flag cleared once the next step's is set). Every open
/// step on the Ceph cluster carries `noout` on its OSDs from before its pods go until it
/// ends, whichever operator opened it: so `ok-to-stop` answers for the new step's OSDs and
/// every other step's at once, while they may still be up in the osdmap with their daemon
/// already stopping. An admin's `noout` on an up OSD is asked about the same way
/// (conservative: a step waits while Ceph would not let both stop).
pub(crate) fn asked_together(
    osds: &OsdDump,
    step: &BTreeSet<OsdId>,
    own_ended: &BTreeSet<OsdId>,
) -> BTreeSet<OsdId> {
    (osds.osds.values())
        .filter(|o| o.noout && !step.contains(&o.id) && !own_ended.contains(&o.id))
        .map(|o| o.id)
        .collect()
}

#[cfg(test)]
mod tests;
