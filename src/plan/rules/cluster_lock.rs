//! The step lock of a Ceph cluster, pure: one rollout step at a time per Ceph cluster, whatever
//! the number of CephOSDs and operator processes. The lock is a `coordination.k8s.io/v1` Lease
//! per `fsid` held by a CephOSD (`namespace/name/uid`, not a process: a new leader of the same
//! operator finishes the step and keeps the lock). It is taken before Ceph is asked
//! `ok-to-stop`, renewed while the step is open, released when no step stays open (also when
//! Ceph said wait or halt, so a waiting CephOSD starves no other), and expires by itself when
//! the holder's operator is gone. Turns: a CephOSD that finds it busy claims the next turn on
//! the Lease; the holder then lets it go after its step instead of starting another, and the
//! free lock waits for the claimant (while its claim is renewed). The claim is spent when the
//! claimant's step opens, not when it takes the lock: Ceph saying wait at its turn (the PGs of
//! the step just ended still peering) leaves the turn its own until the claim lapses.

use crate::plan::gate::Blocker;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use std::fmt;

/// How long the lock holds without renewal: longer than a leader hand-over (the leader Lease's
/// 15 s and a start), short enough that a gone operator holds no other CephOSD up for long.
/// Also the cap: a Lease that says longer (forged, or another tool's) is read as this long.
pub(crate) const LOCK_DURATION: SignedDuration = SignedDuration::from_secs(60);
/// An open step renews the lock once it is this old (steps are looked at every 0.25–1 s).
pub(crate) const RENEW_AFTER: SignedDuration = SignedDuration::from_secs(10);
/// The Lease annotation naming the keys of the holder's step (`h1:/dev/sdb, h2:/dev/sdb`).
pub(crate) const STEP_KEYS: &str = "ceph.elemental.net/step-keys";
/// The Lease annotations of the CephOSD that waits for the next turn: its identity, and when
/// it last said so (RFC 3339).
pub(crate) const NEXT_HOLDER: &str = "ceph.elemental.net/next-holder";
pub(crate) const NEXT_SINCE: &str = "ceph.elemental.net/next-since";
/// A claim on the next turn stands this long after it was last written (a waiting CephOSD
/// asks every 2 s and writes it again once it is `CLAIM_AGAIN_AFTER` old).
pub(crate) const NEXT_TURN_FOR: SignedDuration = SignedDuration::from_secs(15);
const CLAIM_AGAIN_AFTER: SignedDuration = SignedDuration::from_secs(5);

/// The Lease of the Ceph cluster `fsid`: `ceph-osd-step-<fsid>`; None when the fsid is not
/// one Ceph gives (a UUID: hex digits and dashes), which no name is made from.
pub(crate) fn lock_name(fsid: &str) -> Option<String> {
    let fsid = fsid.trim().to_ascii_lowercase();
    let valid = !fsid.is_empty()
        && fsid.len() <= 36
        && fsid.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        && fsid.chars().any(|c| c.is_ascii_hexdigit());
    valid.then(|| format!("ceph-osd-step-{fsid}"))
}

/// A CephOSD as holder of the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LockHolder {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl LockHolder {
    /// The Lease's `holderIdentity`: `namespace/name/uid` (a CephOSD re-created under the
    /// same name is another holder).
    pub(crate) fn identity(&self) -> String {
        format!("{}/{}/{}", self.namespace, self.name, self.uid)
    }
}

/// Who has the lock, as the Lease says: the CephOSD (`namespace/name`) whose step holds it,
/// with its step's keys, or the one whose turn is next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Busy {
    /// `namespace/name` of that CephOSD (the identity as written when it is not one).
    pub holder: String,
    /// The keys of its step, when the Lease names them.
    pub keys: Vec<String>,
    /// It waited for another's step and has the next turn (no step of its own yet).
    pub next: bool,
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.next {
            return write!(
                f,
                "CephOSD {} has the next turn on the Ceph cluster (it waited for another's step)",
                self.holder
            );
        }
        write!(f, "a step of CephOSD {}", self.holder)?;
        if !self.keys.is_empty() {
            write!(f, " (on {})", self.keys.join(", "))?;
        }
        write!(f, " holds the Ceph cluster")
    }
}

/// Where the lock stands for one CephOSD after asking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LockState {
    /// This CephOSD holds it.
    Held,
    /// Another CephOSD's step holds it (`lease`: `namespace/name` of the Lease).
    Busy { busy: Busy, lease: String },
    /// It could not be read or written (fail closed: no step starts).
    Failed(String),
    /// Ceph did not tell its fsid: which lock is not known (no step starts).
    NoFsid(String),
    /// Ceph records another place for its step lock (`plan::rules::lock_place`): no step starts.
    PlaceDiffers(String),
}

impl LockState {
    /// What keeps a step from starting, if anything (fail closed: only a held lock lets one
    /// start).
    pub(crate) fn blocker(&self) -> Option<Blocker> {
        match self {
            Self::Held => None,
            Self::Busy { busy, lease } => Some(Blocker::ClusterBusy {
                holder: busy.to_string(),
                lease: lease.clone(),
            }),
            Self::Failed(error) => Some(Blocker::ClusterLockFailed {
                error: error.clone(),
            }),
            Self::NoFsid(error) => Some(Blocker::NoAnswer {
                error: error.clone(),
            }),
            Self::PlaceDiffers(message) => Some(Blocker::LockPlaceDiffers {
                message: message.clone(),
            }),
        }
    }
}

/// Why the lock is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Before Ceph is asked about a new step: always written (the step's keys, a renewal).
    NewStep,
    /// An open step keeps it: written once `RENEW_AFTER` old.
    Renew,
}

/// What to do with the lock as observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LockDecision {
    /// No Lease yet: create it, held.
    Create,
    /// Free, expired, or ours and due: write ourselves in at the version read.
    Take {
        /// Another holder (or none) before: a new acquisition.
        transition: bool,
    },
    /// Ours, with our own claim on the next turn standing, and our step open: the claim is
    /// spent (written out with a renewal).
    SpendClaim,
    /// Ours, renewed less than `RENEW_AFTER` ago: nothing to write.
    Keep,
    /// Another CephOSD's step holds it, or the next turn is another's; `claim`: write
    /// ourselves in as the next holder (no one else claims it, or our claim is due).
    Busy { busy: Busy, claim: bool },
    /// Ours, and another CephOSD waits for its turn: let it go rather than start a new step.
    Yield(Busy),
}

/// Pure: what `me` (a holder's identity) does with `lease` at `now` for `purpose`.
pub(crate) fn decide(
    lease: Option<&Lease>,
    me: &str,
    now: Timestamp,
    purpose: Purpose,
) -> LockDecision {
    let Some(lease) = lease else {
        return LockDecision::Create;
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    let renewed = spec.renew_time.as_ref().map(|t| t.0);
    let duration = held_for(spec.lease_duration_seconds);
    let expired = renewed.is_none_or(|r| r + duration <= now);
    let next = next_claim(lease, now);
    let next_other = next.filter(|(who, _)| *who != me).map(|(who, _)| Busy {
        holder: holder_name(who),
        keys: Vec::new(),
        next: true,
    });
    if holder == me {
        return match (purpose, next_other) {
            (Purpose::NewStep, Some(waiting)) => LockDecision::Yield(waiting),
            (Purpose::NewStep, None) => LockDecision::Take { transition: false },
            (Purpose::Renew, _) => {
                let recent = renewed.is_some_and(|r| now.duration_since(r) < RENEW_AFTER);
                if next.is_some_and(|(who, _)| who == me) {
                    LockDecision::SpendClaim
                } else if recent && !expired {
                    LockDecision::Keep
                } else {
                    LockDecision::Take { transition: false }
                }
            }
        };
    }
    if holder.is_empty() || expired {
        // A free lock waits for the CephOSD whose turn is next.
        return match next_other {
            Some(waiting) => LockDecision::Busy {
                busy: waiting,
                claim: false,
            },
            None => LockDecision::Take { transition: true },
        };
    }
    let ours_due = next
        .is_some_and(|(who, since)| who == me && now.duration_since(since) >= CLAIM_AGAIN_AFTER);
    LockDecision::Busy {
        busy: Busy {
            holder: holder_name(holder),
            keys: step_keys(lease),
            next: false,
        },
        claim: purpose == Purpose::NewStep && (next.is_none() || ours_due),
    }
}

/// How long a Lease holds after its renewal: what it says, at most `LOCK_DURATION`.
pub(crate) fn held_for(lease_duration_seconds: Option<i32>) -> SignedDuration {
    SignedDuration::from_secs(lease_duration_seconds.unwrap_or(0).into()).min(LOCK_DURATION)
}

/// How an open step found its lock lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LockLost {
    /// No Lease: deleted.
    Deleted,
    /// The Lease names no holder: released by someone else.
    Emptied,
    /// The Lease names another holder (`namespace/name`, or the identity as written).
    TakenBy(String),
}

impl fmt::Display for LockLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Deleted => f.write_str("its Lease was deleted"),
            Self::Emptied => f.write_str("its Lease was emptied of its holder"),
            Self::TakenBy(holder) => write!(f, "its Lease names {holder} as holder"),
        }
    }
}

/// Pure: whether `me`, whose step is open, finds its lock `lease` lost (its own expired lock
/// is not: no one took it).
pub(crate) fn lost(lease: Option<&Lease>, me: &str) -> Option<LockLost> {
    let Some(lease) = lease else {
        return Some(LockLost::Deleted);
    };
    let holder = (lease.spec.as_ref())
        .and_then(|s| s.holder_identity.as_deref())
        .unwrap_or("");
    match holder {
        "" => Some(LockLost::Emptied),
        _ if holder == me => None,
        other => Some(LockLost::TakenBy(holder_name(other))),
    }
}

/// The standing claim on the next turn: (identity, when written).
fn next_claim(lease: &Lease, now: Timestamp) -> Option<(&str, Timestamp)> {
    let annotations = lease.metadata.annotations.as_ref()?;
    let who = annotations.get(NEXT_HOLDER)?.as_str();
    let since: Timestamp = annotations.get(NEXT_SINCE)?.parse().ok()?;
    (!who.is_empty() && since + NEXT_TURN_FOR > now).then_some((who, since))
}

/// Whether `me` holds `lease` (and may release it).
pub(crate) fn held_by(lease: &Lease, me: &str) -> bool {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        == Some(me)
}

/// After a plan was carried out: the lock is released when this CephOSD may hold it (it took
/// or kept it in this reconcile, or had a step open) and no step stays open. A failed plan
/// keeps it: its step may not be recorded as planned (the Lease expires by itself, or the
/// next reconcile decides).
pub(crate) fn releases(may_hold: bool, step_open_after: bool, failed: bool) -> bool {
    may_hold && !step_open_after && !failed
}

/// `namespace/name` of an identity `namespace/name/uid`.
fn holder_name(identity: &str) -> String {
    match identity.rsplit_once('/') {
        Some((name, _uid)) if name.contains('/') => name.to_owned(),
        _ => identity.to_owned(),
    }
}

fn step_keys(lease: &Lease) -> Vec<String> {
    lease
        .annotations()
        .get(STEP_KEYS)
        .map(|keys| {
            keys.split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
