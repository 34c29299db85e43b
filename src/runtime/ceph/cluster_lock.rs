//! The step lock of each Ceph cluster as Leases (the rules are `plan::rules::cluster_lock`): asked
//! before Ceph is asked whether a step may start, kept while the step is open, released once
//! no step stays open. The Ceph cluster is told by its `fsid`, asked once per client.

use crate::ceph::{CephClient, CephError, CephFacts};
use crate::crd::CephOsd;
use crate::plan::gate::GateAnswer;
use crate::plan::rules::cluster_lock::{
    decide, held_by, lock_name, lost, LockDecision, LockHolder, LockLost, LockState, Purpose,
    LOCK_DURATION, NEXT_HOLDER, NEXT_SINCE, STEP_KEYS,
};
use crate::runtime::ceph::gate_questions::{answer, Question};
use crate::runtime::ceph::lock_place::{LockPlaceRecord, PlaceRefused};
use crate::runtime::memory::locked::locked;
use crate::runtime::serve::lease::lease_spec;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::ResourceExt;
use std::sync::Mutex;
use tracing::{info, warn};

/// No namespace for the step locks was given and none follows from the settings.
#[derive(Debug, thiserror::Error)]
#[error(
    "the Ceph gate needs a namespace for the step lock of its Ceph cluster (a Lease per fsid, \
     one namespace for every operator on that Ceph) and none was given: set \
     --ceph-lock-namespace (default: --lease-namespace or $POD_NAMESPACE, else the watched \
     namespace)"
)]
pub struct NoLockNamespace;

/// The step locks' namespace: the one given (`--ceph-lock-namespace`), else the leader
/// Lease's (`--lease-namespace` or `$POD_NAMESPACE`: the operator's own), else the watched
/// one. Never a guess: operators that guessed apart would each lock on their own.
pub fn ceph_lock_namespace(
    given: Option<&str>,
    lease: Option<&str>,
    watched: Option<&str>,
) -> Result<String, NoLockNamespace> {
    [given, lease, watched]
        .into_iter()
        .flatten()
        .find(|ns| !ns.is_empty())
        .map(str::to_owned)
        .ok_or(NoLockNamespace)
}

/// Reads and writes of the Lease one question may take when other writers keep winning.
const WRITE_TRIES: usize = 3;

/// The step locks of the Ceph cluster this operator is configured for, in `namespace`.
pub(crate) struct CephStepLocks {
    leases: Api<Lease>,
    namespace: String,
    /// The cluster's fsid, once Ceph told it.
    fsid: Mutex<Option<String>>,
    /// The lock's place recorded in Ceph, checked before a new step (None: not checked).
    place: Option<LockPlaceRecord>,
}

impl CephStepLocks {
    pub(crate) fn new(client: kube::Client, namespace: &str) -> Self {
        Self {
            leases: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            fsid: Mutex::default(),
            place: None,
        }
    }

    /// Also checks the lock's place recorded in Ceph before each new step.
    pub(crate) fn with_place(mut self, place: LockPlaceRecord) -> Self {
        self.place = Some(place);
        self
    }

    /// The Lease of the Ceph cluster behind `ceph` (`NoFsid` when Ceph does not tell).
    async fn lease_name(&self, ceph: &dyn CephClient) -> Result<String, LockState> {
        let cached = locked(&self.fsid).clone();
        let fsid = if let Some(fsid) = cached {
            fsid
        } else {
            let status = ceph.status().await.map_err(|e: CephError| {
                LockState::NoFsid(format!("the Ceph cluster's fsid is not known: {e}"))
            })?;
            *locked(&self.fsid) = Some(status.fsid.clone());
            status.fsid
        };
        lock_name(&fsid).ok_or_else(|| {
            LockState::NoFsid(format!("`ceph status` gave no usable fsid ({fsid:?})"))
        })
    }

    /// Takes the lock for a step of `cr` on `keys` about to be asked of Ceph (written even
    /// when held, with these keys); busy, it claims the next turn.
    pub(crate) async fn take(
        &self,
        ceph: &dyn CephClient,
        cr: &CephOsd,
        keys: &[String],
    ) -> LockState {
        if let Some(place) = &self.place {
            let writer = format!("{}/{}", cr.namespace().unwrap_or_default(), cr.name_any());
            match place.check(ceph, &writer).await {
                Ok(()) => {}
                Err(PlaceRefused::Differs(message)) => return LockState::PlaceDiffers(message),
                Err(PlaceRefused::Failed(error)) => return LockState::Failed(error),
            }
        }
        self.write(ceph, cr, Some(keys), Purpose::NewStep).await
    }

    /// Keeps the lock while `cr`'s step is open, its Lease read on every look: renewed when
    /// due, taken back when free (created again when deleted). Also how it was found lost,
    /// if it was: deleted, emptied or another's.
    pub(crate) async fn keep(
        &self,
        ceph: &dyn CephClient,
        cr: &CephOsd,
    ) -> (LockState, Option<LockLost>) {
        let Some(me) = holder(cr).map(|h| h.identity()) else {
            return (LockState::Failed("the CephOSD has no uid".to_owned()), None);
        };
        let name = match self.lease_name(ceph).await {
            Ok(name) => name,
            Err(state) => return (state, None),
        };
        let current = match self.leases.get_opt(&name).await {
            Ok(current) => current,
            Err(e) => {
                let shown = format!("{}/{name}", self.namespace);
                return (
                    LockState::Failed(format!("cannot read the Lease {shown}: {e}")),
                    None,
                );
            }
        };
        let lost = lost(current.as_ref(), &me);
        let due = decide(current.as_ref(), &me, Timestamp::now(), Purpose::Renew);
        if lost.is_none() && due == LockDecision::Keep {
            return (LockState::Held, None);
        }
        (self.write(ceph, cr, None, Purpose::Renew).await, lost)
    }

    /// Reads the Lease, decides, writes at the version read; a write that lost a race to
    /// another writer is decided again on a new read.
    async fn write(
        &self,
        ceph: &dyn CephClient,
        cr: &CephOsd,
        keys: Option<&[String]>,
        purpose: Purpose,
    ) -> LockState {
        let Some(me) = holder(cr).map(|h| h.identity()) else {
            return LockState::Failed("the CephOSD has no uid".to_owned());
        };
        let name = match self.lease_name(ceph).await {
            Ok(name) => name,
            Err(state) => return state,
        };
        let shown = format!("{}/{name}", self.namespace);
        let failed =
            |e: &kube::Error| LockState::Failed(format!("cannot write the Lease {shown}: {e}"));
        for _ in 0..WRITE_TRIES {
            let current = match self.leases.get_opt(&name).await {
                Ok(current) => current,
                Err(e) => return failed(&e),
            };
            let now = Timestamp::now();
            let decision = decide(current.as_ref(), &me, now, purpose);
            let (lease, outcome) =
                match to_write(decision.clone(), current, &me, now, &name, &shown) {
                    Ok(write) => write,
                    Err(state) => return state,
                };
            if let LockDecision::Yield(busy) = &decision {
                info!(cephosd = %cr.object_key(), lease = %shown, next = %busy.holder, "let the step lock of the Ceph cluster go: another CephOSD waits for its turn");
            }
            let mut lease = lease;
            if let (Some(keys), LockState::Held) = (keys, &outcome) {
                lease
                    .annotations_mut()
                    .insert(STEP_KEYS.to_owned(), keys.join(", "));
            }
            // Created, or replaced at the resourceVersion read: a concurrent writer makes this
            // a 409, never a tie.
            let written = if decision == LockDecision::Create {
                self.leases.create(&PostParams::default(), &lease).await
            } else {
                self.leases
                    .replace(&name, &PostParams::default(), &lease)
                    .await
            };
            match written {
                Ok(_) => {
                    let taken = matches!(
                        decision,
                        LockDecision::Create | LockDecision::Take { transition: true }
                    );
                    if outcome == LockState::Held && taken {
                        info!(cephosd = %cr.object_key(), lease = %shown, "took the step lock of the Ceph cluster");
                    }
                    return outcome;
                }
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                // A claim on the next turn not written is written on the next question.
                Err(_) if outcome != LockState::Held => return outcome,
                Err(e) => return failed(&e),
            }
        }
        LockState::Failed(format!(
            "the Lease {shown} changed under every one of {WRITE_TRIES} writes"
        ))
    }

    /// Gives the lock up if `cr` holds it (its step ended, or Ceph said wait or halt).
    pub(crate) async fn release(&self, ceph: &dyn CephClient, cr: &CephOsd) {
        let Some(me) = holder(cr).map(|h| h.identity()) else {
            return;
        };
        let Ok(name) = self.lease_name(ceph).await else {
            return;
        };
        let Ok(Some(mut lease)) = self.leases.get_opt(&name).await else {
            return;
        };
        if !held_by(&lease, &me) {
            return;
        }
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = None;
        }
        lease.annotations_mut().remove(STEP_KEYS);
        match self
            .leases
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                info!(cephosd = %cr.object_key(), lease = %format!("{}/{name}", self.namespace), "released the step lock of the Ceph cluster");
            }
            Err(error) => {
                warn!(cephosd = %cr.object_key(), %error, "could not release the step lock (it expires by itself)");
            }
        }
    }
}

/// Ceph's answer about `question` (see `gate_questions::answer`) asked only while `cr`
/// holds the step lock of the Ceph cluster, taken first: no other CephOSD's question and stop
/// race this one. Else wait, saying why. Also whether the lock was taken.
pub(crate) async fn answer_holding_the_lock(
    locks: Option<&CephStepLocks>,
    ceph: &dyn CephClient,
    asked: &Question<'_>,
    looked: Option<CephFacts>,
) -> (GateAnswer, bool) {
    let (cr, question) = (asked.cr, asked.subjects);
    let lock = match locks {
        Some(locks) => {
            let keys: Vec<String> = question.iter().map(|s| s.key.to_string()).collect();
            Box::pin(locks.take(ceph, cr, &keys)).await
        }
        None => LockState::Failed(
            "no namespace is configured for it (--ceph-lock-namespace)".to_owned(),
        ),
    };
    let Some(blocker) = lock.blocker() else {
        return (answer(ceph, asked, looked).await, true);
    };
    (GateAnswer::waiting(question, blocker), false)
}

/// The Lease to write for `decision` on `current` (read at `now`), and what holds once it is
/// written; or what holds without a write.
fn to_write(
    decision: LockDecision,
    current: Option<Lease>,
    me: &str,
    now: Timestamp,
    name: &str,
    shown: &str,
) -> Result<(Lease, LockState), LockState> {
    let busy = |busy| LockState::Busy {
        busy,
        lease: shown.to_owned(),
    };
    match (decision, current) {
        (LockDecision::Keep, _) => Err(LockState::Held),
        (
            LockDecision::Busy {
                busy: b,
                claim: false,
            },
            _,
        ) => Err(busy(b)),
        (
            LockDecision::Busy {
                busy: b,
                claim: true,
            },
            Some(mut lease),
        ) => {
            let annotations = lease.annotations_mut();
            annotations.insert(NEXT_HOLDER.to_owned(), me.to_owned());
            annotations.insert(NEXT_SINCE.to_owned(), now.to_string());
            Ok((lease, busy(b)))
        }
        (LockDecision::Yield(b), Some(mut lease)) => {
            if let Some(spec) = lease.spec.as_mut() {
                spec.holder_identity = None;
            }
            lease.annotations_mut().remove(STEP_KEYS);
            Ok((lease, busy(b)))
        }
        (LockDecision::Create, _) => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    labels: Some(
                        [(
                            "app.kubernetes.io/managed-by".to_owned(),
                            "ceph-osd-operator".to_owned(),
                        )]
                        .into(),
                    ),
                    ..ObjectMeta::default()
                },
                spec: Some(spec(me, now, None, true)),
            };
            Ok((lease, LockState::Held))
        }
        (LockDecision::Take { transition }, Some(mut lease)) => {
            lease.spec = Some(spec(me, now, lease.spec.as_ref(), transition));
            Ok((lease, LockState::Held))
        }
        (LockDecision::SpendClaim, Some(mut lease)) => {
            // Our turn came and our step is open: the claim is spent.
            lease.spec = Some(spec(me, now, lease.spec.as_ref(), false));
            let annotations = lease.annotations_mut();
            annotations.remove(NEXT_HOLDER);
            annotations.remove(NEXT_SINCE);
            Ok((lease, LockState::Held))
        }
        // Decided on a Lease that was read: never without one.
        (_, None) => Err(LockState::Failed(format!("the Lease {shown} vanished"))),
    }
}

/// `cr` as holder of the lock; None without a uid (never stored).
fn holder(cr: &CephOsd) -> Option<LockHolder> {
    Some(LockHolder {
        namespace: cr.namespace().unwrap_or_default(),
        name: cr.name_any(),
        uid: cr.uid()?,
    })
}

fn spec(me: &str, now: Timestamp, previous: Option<&LeaseSpec>, transition: bool) -> LeaseSpec {
    lease_spec(me, LOCK_DURATION.unsigned_abs(), now, previous, transition)
}

#[cfg(test)]
mod glue_tests;

#[cfg(test)]
mod tests;
