//! The step lock's place recorded in Ceph (the rules are `plan::rules::lock_place`): read before a new
//! step takes the Lease, written when absent, stale or due, read back after a claim. This
//! Kubernetes cluster is told by its `kube-system` Namespace's uid, read once.

use crate::ceph::{CephClient, CephError};
use crate::plan::rules::lock_place::{
    check_back, decide, LockPlace, PlaceDecision, PlaceRecord, Refused, PLACE_KEY, SETTLE,
};
use crate::runtime::memory::locked::locked;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::ResourceExt;
use std::sync::Mutex;
use std::time::Duration;
use tracing::{info, warn};

/// The Namespace whose uid tells this Kubernetes cluster from others.
const IDENTITY_NAMESPACE: &str = "kube-system";
/// The mon caps the operator's Ceph key needs for the record.
const CAPS: &str = "allow command \"config-key get\" with key prefix ceph-osd-operator/, allow \
                    command \"config-key set\" with key prefix ceph-osd-operator/";

/// Why no step may start for the place (the lock's `LockState` says it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PlaceRefused {
    /// Another place holds the Ceph cluster: both named, and the fix.
    Differs(String),
    /// The place or the record could not be read or written.
    Failed(String),
}

/// This operator's place and its record in Ceph.
pub(crate) struct LockPlaceRecord {
    namespaces: Api<Namespace>,
    lock_namespace: String,
    /// This Kubernetes cluster's identity, once read.
    kubernetes: Mutex<Option<String>>,
    /// How long a claim settles before it is read back.
    settle: Duration,
}

impl LockPlaceRecord {
    pub(crate) fn new(client: kube::Client, lock_namespace: &str) -> Self {
        Self {
            namespaces: Api::all(client),
            lock_namespace: lock_namespace.to_owned(),
            kubernetes: Mutex::default(),
            settle: SETTLE,
        }
    }

    #[cfg(test)]
    pub(crate) fn settling(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// This operator's place: the Kubernetes cluster's identity and the lock namespace.
    async fn mine(&self) -> Result<LockPlace, PlaceRefused> {
        let cached = locked(&self.kubernetes).clone();
        let kubernetes = if let Some(uid) = cached {
            uid
        } else {
            let unread = |why: String| {
                PlaceRefused::Failed(format!(
                    "the uid of the Namespace {IDENTITY_NAMESPACE} (this Kubernetes cluster's \
                     identity, recorded in Ceph as the step lock's place) cannot be read: {why}; \
                     the operator needs `get` on namespaces/{IDENTITY_NAMESPACE} (the \
                     ClusterRole ceph-osd-operator-lock-place)"
                ))
            };
            let namespace = (self.namespaces.get(IDENTITY_NAMESPACE).await)
                .map_err(|e| unread(e.to_string()))?;
            let uid = namespace
                .uid()
                .ok_or_else(|| unread("it has no uid".to_owned()))?;
            *locked(&self.kubernetes) = Some(uid.clone());
            uid
        };
        Ok(LockPlace {
            kubernetes,
            namespace: self.lock_namespace.clone(),
        })
    }

    /// Whether a new step of `writer` (`namespace/name`) may take the lock here: Ceph records
    /// this place (written now when absent, stale or due), or refuses naming both places.
    pub(crate) async fn check(
        &self,
        ceph: &dyn CephClient,
        writer: &str,
    ) -> Result<(), PlaceRefused> {
        let mine = self.mine().await?;
        let read = ceph
            .config_key_get(PLACE_KEY)
            .await
            .map_err(|e| ceph_failed(&e))?;
        let now = Timestamp::now();
        let claim = match decide(read.as_deref(), &mine, now) {
            PlaceDecision::Ours => return Ok(()),
            PlaceDecision::Write { claim } => claim,
            PlaceDecision::Refused(refused) => return Err(refused_by(refused)),
        };
        let record = PlaceRecord::new(&mine, writer, now);
        ceph.config_key_set(PLACE_KEY, &record.to_json())
            .await
            .map_err(|e| ceph_failed(&e))?;
        if !claim {
            return Ok(());
        }
        // Dekker style: another operator that found no record may have written too; the later
        // write wins. Read back once any write racing this one has landed.
        tokio::time::sleep(self.settle).await;
        let back = ceph
            .config_key_get(PLACE_KEY)
            .await
            .map_err(|e| ceph_failed(&e))?;
        match check_back(back.as_deref(), &mine) {
            Ok(()) => {
                info!(place = %mine, key = PLACE_KEY, "recorded the step lock's place in Ceph");
                Ok(())
            }
            Err(refused) => Err(refused_by(refused)),
        }
    }
}

fn refused_by(refused: Refused) -> PlaceRefused {
    match refused {
        Refused::Differs(refusal) => {
            warn!(mine = %refusal.mine, theirs = %refusal.theirs.place, "refusing to step: Ceph records another place for its step lock");
            PlaceRefused::Differs(refusal.to_string())
        }
        Refused::NotUnderstood(why) => PlaceRefused::Failed(format!(
            "Ceph's record of the step lock's place ({PLACE_KEY}) is not understood: {why}; \
             remove it (ceph config-key rm {PLACE_KEY}) if no other operator uses it"
        )),
    }
}

fn ceph_failed(e: &CephError) -> PlaceRefused {
    let caps = if e.is_access_denied() {
        format!(" (the operator's Ceph key needs mon caps `{CAPS}`)")
    } else {
        String::new()
    };
    PlaceRefused::Failed(format!(
        "Ceph's record of the step lock's place cannot be read or written: {e}{caps}"
    ))
}

#[cfg(test)]
mod tests;
