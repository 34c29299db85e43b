//! Where the step lock of a Ceph cluster is taken, pure: one place per Ceph cluster. The step
//! lock is a Lease in one namespace of one Kubernetes cluster; operators of one Ceph that take
//! it in different places (two lock namespaces, two Kubernetes clusters) would each hold a lock
//! of their own and stop OSDs together. So the place is recorded in Ceph itself (a config-key
//! every operator of that Ceph reads): the first operator writes its place, the others find
//! another place there and refuse to step, naming both and the fix. A record not renewed for
//! `STALE_AFTER` is taken over (an install that moved is not refused forever).
//!
//! Two operators that find no record at once both write: the later write wins. Each reads the
//! record back `SETTLE` after its write (Dekker style: write mine, then look for the other's):
//! the one that reads the other's place refuses; the one that reads its own steps. A write is
//! one mon round trip (~1 s), well inside `SETTLE`.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The config-key holding the place (JSON `PlaceRecord`); the operator's Ceph key may get and
/// set keys under `ceph-osd-operator/` only.
pub(crate) const PLACE_KEY: &str = "ceph-osd-operator/step-lock-place";
/// A record not renewed for this long is another install's past: taken over.
pub(crate) const STALE_AFTER: SignedDuration = SignedDuration::from_mins(10);
/// Steps renew the record once it is this old (not every step: a mon write each).
pub(crate) const RENEW_AFTER: SignedDuration = SignedDuration::from_mins(1);
/// After writing a record where none of ours stood, it is read back this much later.
pub(crate) const SETTLE: Duration = Duration::from_secs(3);

/// A place of the step lock: the Kubernetes cluster (its `kube-system` Namespace's uid) and
/// the namespace of the Lease there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LockPlace {
    pub kubernetes: String,
    pub namespace: String,
}

impl fmt::Display for LockPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Lease namespace {} of the Kubernetes cluster whose kube-system uid is {}",
            self.namespace, self.kubernetes
        )
    }
}

/// The record in Ceph: the place, the CephOSD whose step wrote it (`namespace/name`), when
/// (RFC 3339).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlaceRecord {
    pub place: LockPlace,
    pub writer: String,
    pub renewed_at: String,
}

impl PlaceRecord {
    pub(crate) fn new(place: &LockPlace, writer: &str, now: Timestamp) -> Self {
        Self {
            place: place.clone(),
            writer: writer.to_owned(),
            renewed_at: now.to_string(),
        }
    }

    /// The JSON written to Ceph.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Another place holds the Ceph cluster: no step starts here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub mine: LockPlace,
    pub theirs: PlaceRecord,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let theirs = &self.theirs;
        write!(
            f,
            "another operator takes the step lock of this Ceph cluster elsewhere: Ceph's record \
             ({PLACE_KEY}, written by CephOSD {}, renewed {}) names {}; this operator's is {}. \
             Two locks would let two steps stop OSDs at once. ",
            theirs.writer, theirs.renewed_at, theirs.place, self.mine
        )?;
        if theirs.place.kubernetes == self.mine.kubernetes {
            write!(
                f,
                "Fix: --ceph-lock-namespace={} on every operator of this Ceph (Helm: \
                 ceph.lockNamespace), each bound to the step lock's Role there",
                theirs.place.namespace
            )?;
        } else {
            write!(
                f,
                "Operators in two Kubernetes clusters cannot share a Lease: only one Kubernetes \
                 cluster may gate steps on this Ceph. After moving an install, remove the record \
                 (ceph config-key rm {PLACE_KEY})"
            )?;
        }
        write!(
            f,
            "; a record not renewed for {} min is taken over",
            STALE_AFTER.as_secs() / 60
        )
    }
}

/// What to do with the record as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PlaceDecision {
    /// Ours, renewed less than `RENEW_AFTER` ago: step, nothing to write.
    Ours,
    /// Write ours, then step. `claim`: no fresh record of ours stood (none, stale, or
    /// another's stale one): read it back `SETTLE` later before stepping.
    Write { claim: bool },
    /// No step: see `Refused`.
    Refused(Refused),
}

/// Why the record lets no step start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Another place's, fresh.
    Differs(Box<Refusal>),
    /// Not a record this operator understands (fail closed): what it says.
    NotUnderstood(String),
}

/// Pure: what an operator at `mine` does with the record `read` (None: no record) at `now`.
pub(crate) fn decide(read: Option<&str>, mine: &LockPlace, now: Timestamp) -> PlaceDecision {
    let Some(text) = read.filter(|t| !t.trim().is_empty()) else {
        return PlaceDecision::Write { claim: true };
    };
    let record = match parse(text) {
        Ok(record) => record,
        Err(why) => return PlaceDecision::Refused(Refused::NotUnderstood(why)),
    };
    let renewed: Timestamp = match record.renewed_at.parse() {
        Ok(at) => at,
        Err(e) => {
            return PlaceDecision::Refused(Refused::NotUnderstood(format!(
                "its renewedAt {:?} is not a time: {e}",
                record.renewed_at
            )))
        }
    };
    let age = now.duration_since(renewed);
    if age >= STALE_AFTER {
        return PlaceDecision::Write { claim: true };
    }
    if record.place != *mine {
        return PlaceDecision::Refused(Refused::Differs(Box::new(Refusal {
            mine: mine.clone(),
            theirs: record,
        })));
    }
    if age >= RENEW_AFTER {
        PlaceDecision::Write { claim: false }
    } else {
        PlaceDecision::Ours
    }
}

/// Pure: the record read back after a claim. Ours: step. Another place's: its write came
/// later and won, refuse. None or not understood: say why (no step).
pub(crate) fn check_back(read: Option<&str>, mine: &LockPlace) -> Result<(), Refused> {
    let Some(text) = read else {
        return Err(Refused::NotUnderstood(
            "it was gone right after this operator wrote it".to_owned(),
        ));
    };
    let record = parse(text).map_err(Refused::NotUnderstood)?;
    if record.place == *mine {
        Ok(())
    } else {
        Err(Refused::Differs(Box::new(Refusal {
            mine: mine.clone(),
            theirs: record,
        })))
    }
}

fn parse(text: &str) -> Result<PlaceRecord, String> {
    serde_json::from_str(text.trim()).map_err(|e| {
        let shown: String = text.chars().take(200).collect();
        format!("{shown:?} is not a step lock place ({e})")
    })
}

#[cfg(test)]
mod tests;
