//! The rollout gate's decision, pure: may the OSDs of the update domain(s) about to be stopped
//! go down now? `precheck` reads one look at the cluster and the domain's mapped ids;
//! `confirm` reads Ceph's `ok-to-stop` answer for exactly those ids. Either says `Proceed`,
//! `Wait` (Ceph says not now: it will change by itself) or `Halt` (the operator cannot tell
//! what it would stop: an admin must look), quoting Ceph's own numbers.

use super::release::ReleaseRefusal;
use crate::ceph::{
    osd_list, CephFacts, KeyIds, MappedKey, OkToStop, OsdId, PgStates, PodRef, StatedRefusal,
    UnknownReason,
};
use std::collections::BTreeSet;
use std::fmt;

/// At most this many PG ids are quoted in a message.
const QUOTED_PGS: usize = 5;

/// What keeps the next step from starting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blocker {
    NoQuorum,
    /// `mgrmap.available` is false: PG states and ok-to-stop cannot be asked.
    MgrUnavailable {
        health_check: Option<String>,
    },
    /// `pg_ready` false (the mgr has not heard from the OSDs since it started) or not asked.
    PgStatesNotKnown,
    /// `pg stat` counts other than `num_pgs` PGs by state.
    PgCountsInconsistent {
        counted: u64,
        num_pgs: u64,
    },
    /// Every PG is active+clean by states that may predate a placement change (CRUSH, an
    /// OSD's in or weight, upmaps) first seen less than the mgr's stats period ago.
    PgStatesTrailPlacement {
        wait: std::time::Duration,
    },
    /// Some PGs are not active+clean (Rook's definition).
    PgsNotClean {
        not_clean: u64,
        num_pgs: u64,
        states: String,
    },
    /// An OSD outside the domain is down but still in: its data is not re-replicated.
    OtherOsdDown {
        id: OsdId,
    },
    /// Ceph refutes the ids an admin stated on a pod of the domain (`osd-ids`): nothing is
    /// asked about or stopped on them.
    StatedIdsRefuted {
        key: String,
        refusal: StatedRefusal,
    },
    /// A key of the domain has no known ids.
    IdUnknown {
        key: String,
        pod: Option<PodRef>,
        reason: UnknownReason,
    },
    /// A mapped id is not in the osdmap.
    OsdNotInOsdmap {
        id: OsdId,
        key: String,
    },
    /// A mapped id is down.
    OsdDown {
        id: OsdId,
        key: String,
    },
    /// `ok-to-stop` says no (rc 16).
    NotOkToStop {
        answer: OkToStop,
    },
    /// `ok-to-stop` cannot tell: PG states unknown to the mgr (rc 11).
    OkToStopNotKnown {
        answer: OkToStop,
    },
    /// `ok-to-stop` answered about other OSDs than asked.
    OkToStopIncomplete {
        asked: BTreeSet<OsdId>,
        answered: BTreeSet<OsdId>,
    },
    /// Asking failed (a timeout, Ceph unreachable, an answer not understood): nothing is
    /// stopped on no answer. `error` says what failed.
    NoAnswer {
        error: String,
    },
    /// Another CephOSD's step holds the Ceph cluster's step lock, or the next turn is another
    /// CephOSD's (`holder` says which, with its keys; `lease`: the Lease, `namespace/name`).
    ClusterBusy {
        holder: String,
        lease: String,
    },
    /// The Ceph cluster's step lock could not be read or taken: no step starts.
    ClusterLockFailed {
        error: String,
    },
    /// Ceph records another place (Kubernetes cluster and Lease namespace) for its step lock
    /// than this operator's: no step starts here. `message` names both places and the fix.
    LockPlaceDiffers {
        message: String,
    },
    /// Ceph's release rules keep the step's OSDs from the template's release (the refusal
    /// says which rule): nothing stops until its cause is fixed.
    Release {
        refusal: ReleaseRefusal,
    },
}

/// How a blocker ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Ceph will get there by itself (PGs recover, a mgr comes back): ask again soon.
    Wait,
    /// The operator cannot tell which OSDs it would stop: an admin must look.
    Halt,
}

impl Blocker {
    pub const fn severity(&self) -> Severity {
        match self {
            Self::IdUnknown { .. }
            | Self::StatedIdsRefuted { .. }
            | Self::OsdNotInOsdmap { .. }
            | Self::OkToStopIncomplete { .. } => Severity::Halt,
            Self::NoQuorum
            | Self::MgrUnavailable { .. }
            | Self::PgStatesNotKnown
            | Self::PgCountsInconsistent { .. }
            | Self::PgStatesTrailPlacement { .. }
            | Self::PgsNotClean { .. }
            | Self::OtherOsdDown { .. }
            | Self::OsdDown { .. }
            | Self::NotOkToStop { .. }
            | Self::OkToStopNotKnown { .. }
            | Self::NoAnswer { .. }
            | Self::ClusterBusy { .. }
            | Self::ClusterLockFailed { .. }
            | Self::LockPlaceDiffers { .. }
            | Self::Release { .. } => Severity::Wait,
        }
    }

    /// A short name for the condition reason and the metric label.
    pub const fn category(&self) -> &'static str {
        match self {
            Self::NoQuorum | Self::MgrUnavailable { .. } | Self::NoAnswer { .. } => {
                "CephUnavailable"
            }
            Self::PgStatesNotKnown | Self::PgCountsInconsistent { .. } => "CephPgStatesUnknown",
            Self::PgsNotClean { .. } | Self::PgStatesTrailPlacement { .. } => "CephPgsNotClean",
            Self::OtherOsdDown { .. } | Self::OsdDown { .. } => "CephOsdDown",
            Self::IdUnknown { .. } => "CephOsdIdUnknown",
            Self::StatedIdsRefuted { .. } => "CephOsdIdsRefuted",
            Self::OsdNotInOsdmap { .. } => "CephOsdMissing",
            Self::NotOkToStop { .. } | Self::OkToStopNotKnown { .. } => "CephNotOkToStop",
            Self::OkToStopIncomplete { .. } => "CephAnswerNotUnderstood",
            Self::ClusterBusy { .. } => "CephClusterBusy",
            Self::ClusterLockFailed { .. } => "CephClusterLockFailed",
            Self::LockPlaceDiffers { .. } => "CephLockPlaceDiffers",
            Self::Release { refusal } => refusal.reason(),
        }
    }
}

/// `1.0, 1.3, 1.a, …` (at most `QUOTED_PGS`).
fn quote_pgs(pgs: &[String]) -> String {
    let mut shown: Vec<&str> = pgs.iter().take(QUOTED_PGS).map(String::as_str).collect();
    if pgs.len() > QUOTED_PGS {
        shown.push("…");
    }
    shown.join(", ")
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoQuorum => f.write_str("the mons have no quorum"),
            Self::MgrUnavailable { health_check } => {
                f.write_str("no mgr is available")?;
                if let Some(check) = health_check {
                    write!(f, " ({check})")?;
                }
                f.write_str(": PG states and ok-to-stop cannot be asked")
            }
            Self::PgStatesNotKnown => f.write_str("the mgr does not know the PG states yet"),
            Self::PgCountsInconsistent { counted, num_pgs } => write!(
                f,
                "pg stat counts {counted} PGs by state but {num_pgs} in all"
            ),
            Self::PgStatesTrailPlacement { wait } => write!(
                f,
                "CRUSH, an OSD's in or weight, or the upmaps changed just now: the PG states \
                 may not show the remapping yet (trusted in {}s)",
                wait.as_secs_f64().ceil()
            ),
            Self::PgsNotClean {
                not_clean,
                num_pgs,
                states,
            } => write!(
                f,
                "{not_clean} of {num_pgs} PGs are not active+clean: {states}"
            ),
            Self::OtherOsdDown { id } => write!(f, "{id} is down and still in"),
            Self::IdUnknown { key, pod, reason } => {
                write!(f, "the OSD id of {key}")?;
                if let Some(pod) = pod {
                    write!(f, " (pod {pod})")?;
                }
                write!(f, " is unknown: {reason}")
            }
            // The refusal names the key's pod.
            Self::StatedIdsRefuted { refusal, .. } => refusal.fmt(f),
            Self::OsdNotInOsdmap { id, key } => {
                write!(f, "{id} (of {key}) is not in the osdmap")
            }
            Self::OsdDown { id, key } => write!(f, "{id} (of {key}) is down"),
            Self::NotOkToStop { answer } => {
                write!(
                    f,
                    "Ceph says stopping {} is not safe: {} PGs not ok, {} ok",
                    osd_list(&answer.osds),
                    answer.num_not_ok_pgs,
                    answer.num_ok_pgs
                )?;
                for (pgs, what) in [
                    (&answer.bad_become_inactive, "would become inactive"),
                    (&answer.bad_already_inactive, "are already inactive"),
                    (&answer.bad_no_pool, "have no pool"),
                ] {
                    if !pgs.is_empty() {
                        write!(f, "; {} {what} ({})", pgs.len(), quote_pgs(pgs))?;
                    }
                }
                Ok(())
            }
            Self::OkToStopNotKnown { answer } => write!(
                f,
                "Ceph cannot tell whether stopping {} is safe: {} PGs have an unknown state",
                osd_list(&answer.osds),
                answer.unknown_pgs.len()
            ),
            Self::OkToStopIncomplete { asked, answered } => write!(
                f,
                "ok-to-stop was asked about {} but answered about {}",
                osd_list(asked),
                osd_list(answered)
            ),
            Self::NoAnswer { error } => write!(f, "Ceph gave no usable answer: {error}"),
            Self::ClusterBusy { holder, lease } => write!(
                f,
                "{holder} (Lease {lease}): one step at a time per Ceph cluster"
            ),
            Self::ClusterLockFailed { error } => {
                write!(f, "the Ceph cluster's step lock was not taken: {error}")
            }
            Self::LockPlaceDiffers { message } => f.write_str(message),
            Self::Release { refusal } => refusal.fmt(f),
        }
    }
}

/// The gate's answer. `Wait` and `Halt` carry at least one blocker, halting ones first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateDecision {
    /// Stop exactly these OSDs (after `precheck`: ask `ok-to-stop` about exactly these).
    Proceed {
        ids: BTreeSet<OsdId>,
    },
    Wait {
        blockers: Vec<Blocker>,
    },
    Halt {
        blockers: Vec<Blocker>,
    },
}

impl GateDecision {
    /// Ceph could not be asked: wait (never proceed on no answer).
    pub fn no_answer(error: &impl fmt::Display) -> Self {
        Self::Wait {
            blockers: vec![Blocker::NoAnswer {
                error: error.to_string(),
            }],
        }
    }

    /// `Proceed` without blockers, else `Halt` if any blocker halts, else `Wait`.
    fn from_blockers(ids: BTreeSet<OsdId>, mut blockers: Vec<Blocker>) -> Self {
        if blockers.is_empty() {
            return Self::Proceed { ids };
        }
        blockers.sort_by_key(|b| b.severity() != Severity::Halt);
        if blockers[0].severity() == Severity::Halt {
            Self::Halt { blockers }
        } else {
            Self::Wait { blockers }
        }
    }

    /// Whether Ceph's `ok-to-stop` found PGs of the asked OSDs inactive already: the cluster
    /// is not clean now, whichever of them stop.
    pub fn finds_pgs_inactive(&self) -> bool {
        self.blockers().iter().any(|b| {
            matches!(b, Blocker::NotOkToStop { answer } if !answer.bad_already_inactive.is_empty())
        })
    }

    pub fn blockers(&self) -> &[Blocker] {
        match self {
            Self::Proceed { .. } => &[],
            Self::Wait { blockers } | Self::Halt { blockers } => blockers,
        }
    }
}

impl fmt::Display for GateDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Proceed { ids } if ids.is_empty() => f.write_str("nothing to stop"),
            Self::Proceed { ids } => write!(f, "ok to stop {}", osd_list(ids)),
            Self::Wait { blockers } | Self::Halt { blockers } => f.write_str(
                &blockers
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        }
    }
}

/// What keeps the cluster from being healthy enough for a step: quorum, a mgr, PG states
/// known, consistent and all clean. PG states are not judged without a mgr (the last digest
/// may be stale).
pub(crate) fn cluster_blockers(facts: &CephFacts) -> Vec<Blocker> {
    let mut blockers = Vec::new();
    if facts.status.quorum.is_empty() {
        blockers.push(Blocker::NoQuorum);
    }
    if !facts.status.mgr_available {
        blockers.push(Blocker::MgrUnavailable {
            health_check: facts
                .status
                .health_checks
                .get("MGR_DOWN")
                .map(|message| format!("MGR_DOWN: {message}")),
        });
        return blockers;
    }
    match &facts.pgs {
        Some(pgs) if pgs.ready => blockers.extend(pg_blockers(pgs)),
        _ => blockers.push(Blocker::PgStatesNotKnown),
    }
    if let (true, Some(wait)) = (blockers.is_empty(), facts.pgs_trail_placement) {
        blockers.push(Blocker::PgStatesTrailPlacement { wait });
    }
    blockers
}

fn pg_blockers(pgs: &PgStates) -> Vec<Blocker> {
    let mut blockers = Vec::new();
    let counted = pgs.counted();
    if counted != pgs.num_pgs {
        blockers.push(Blocker::PgCountsInconsistent {
            counted,
            num_pgs: pgs.num_pgs,
        });
    }
    let not_clean = pgs.not_clean_count();
    if not_clean > 0 {
        blockers.push(Blocker::PgsNotClean {
            not_clean,
            num_pgs: pgs.num_pgs,
            states: pgs.describe_not_clean(),
        });
    }
    blockers
}

/// Before asking `ok-to-stop`: quorum, a mgr, every PG clean, every key of `domain` (the
/// domain or domains to stop together) mapped, each of its ids in the osdmap and up, and no
/// other OSD down while still in. `Proceed` names the ids to ask about: all of the domain's.
///
/// A domain whose every OSD is known and already down (a crashed daemon, a pod that never
/// booted) stops nothing more: it needs quorum and a mgr only, not clean PGs (its own down
/// OSDs keep them degraded; waiting for clean would wait for the fix this step brings).
pub fn precheck(facts: &CephFacts, domain: &[MappedKey]) -> GateDecision {
    if let Some(ids) = all_known_and_down(facts, domain) {
        let blockers = cluster_blockers(facts)
            .into_iter()
            .filter(|b| matches!(b, Blocker::NoQuorum | Blocker::MgrUnavailable { .. }))
            .collect();
        return GateDecision::from_blockers(ids, blockers);
    }
    // PGs not clean come last: a down OSD explains them, and the condition names the first.
    let (pgs_not_clean, mut blockers): (Vec<_>, Vec<_>) = cluster_blockers(facts)
        .into_iter()
        .partition(|b| matches!(b, Blocker::PgsNotClean { .. }));
    let mut ids = BTreeSet::new();
    for mapped in domain {
        match &mapped.ids {
            KeyIds::Unknown(UnknownReason::StatedRefuted(refusal)) => {
                blockers.push(Blocker::StatedIdsRefuted {
                    key: mapped.key.clone(),
                    refusal: refusal.clone(),
                });
            }
            KeyIds::Unknown(reason) => blockers.push(Blocker::IdUnknown {
                key: mapped.key.clone(),
                pod: mapped.pod.clone(),
                reason: reason.clone(),
            }),
            KeyIds::Known { ids: known, .. } => {
                for &id in known {
                    ids.insert(id);
                    match facts.osds.osds.get(&id) {
                        None => blockers.push(Blocker::OsdNotInOsdmap {
                            id,
                            key: mapped.key.clone(),
                        }),
                        Some(osd) if !osd.up => blockers.push(Blocker::OsdDown {
                            id,
                            key: mapped.key.clone(),
                        }),
                        Some(_) => {}
                    }
                }
            }
        }
    }
    blockers.extend(others_down(facts, &ids));
    blockers.extend(pgs_not_clean);
    GateDecision::from_blockers(ids, blockers)
}

/// OSDs down and still in, besides `ids`: their PGs are degraded, and stopping more could
/// make them unavailable.
pub(crate) fn others_down(facts: &CephFacts, ids: &BTreeSet<OsdId>) -> Vec<Blocker> {
    facts
        .osds
        .osds
        .values()
        .filter(|o| !o.up && o.is_in && !ids.contains(&o.id))
        .map(|o| Blocker::OtherOsdDown { id: o.id })
        .collect()
}

/// The ids of `domain` when every key is mapped and every id is in the osdmap and down.
fn all_known_and_down(facts: &CephFacts, domain: &[MappedKey]) -> Option<BTreeSet<OsdId>> {
    let mut ids = BTreeSet::new();
    for mapped in domain {
        let KeyIds::Known { ids: known, .. } = &mapped.ids else {
            return None;
        };
        for &id in known {
            if facts.osds.osds.get(&id).is_none_or(|osd| osd.up) {
                return None;
            }
            ids.insert(id);
        }
    }
    (!ids.is_empty()).then_some(ids)
}

/// After `precheck` said `Proceed { ids }`: Ceph's `ok-to-stop` answer for exactly `ids` must
/// be yes and be about all of them.
pub fn confirm(ids: &BTreeSet<OsdId>, answer: &OkToStop) -> GateDecision {
    let mut blockers = Vec::new();
    if !ids.is_subset(&answer.osds) {
        blockers.push(Blocker::OkToStopIncomplete {
            asked: ids.clone(),
            answered: answer.osds.clone(),
        });
    }
    if !answer.ok_to_stop {
        blockers.push(if answer.unknown_pgs.is_empty() {
            Blocker::NotOkToStop {
                answer: answer.clone(),
            }
        } else {
            Blocker::OkToStopNotKnown {
                answer: answer.clone(),
            }
        });
    }
    GateDecision::from_blockers(ids.clone(), blockers)
}

#[cfg(test)]
mod tests;
