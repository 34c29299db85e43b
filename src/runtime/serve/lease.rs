//! Leader election on a `coordination.k8s.io/v1` Lease, so two replicas never act at once.
//!
//! The decision (take, renew, or wait) is a pure function of the observed Lease and the clock;
//! the loop around it uses optimistic concurrency (resourceVersion) so two candidates racing
//! for an expired lease cannot both win.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ObjectMeta, PostParams};
use std::time::Duration;
use tracing::{info, warn};

/// How leadership is held.
#[derive(Clone, Debug)]
pub struct LeaseSettings {
    pub namespace: String,
    pub name: String,
    /// This process's identity (pod name, or host name plus a random part).
    pub identity: String,
    /// How long a lease is valid without renewal.
    pub duration: Duration,
    /// How often the holder renews, and how often a candidate retries.
    pub retry: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("lost the leader lease {0}: another replica holds it now")]
    Lost(String),
    #[error("could not renew the leader lease {name} within {seconds}s: {reason}")]
    RenewFailed {
        name: String,
        seconds: u64,
        reason: String,
    },
}

/// No namespace for the Lease was given and none follows from the settings.
#[derive(Debug, thiserror::Error)]
#[error(
    "leader election needs a namespace for its Lease and none was given: set --lease-namespace \
     (or $POD_NAMESPACE, which deploy/ sets to the operator's namespace); a single process may \
     run without a Lease: --leader-elect=false"
)]
pub struct NoLeaseNamespace;

/// The Lease's namespace: the one given (`--lease-namespace` or `$POD_NAMESPACE`), else the
/// watched one. Never a guess such as `default`: replicas that guessed apart would each hold
/// a Lease of their own, and all act.
pub fn lease_namespace(
    given: Option<&str>,
    watched: Option<&str>,
) -> Result<String, NoLeaseNamespace> {
    [given, watched]
        .into_iter()
        .flatten()
        .find(|ns| !ns.is_empty())
        .map(str::to_owned)
        .ok_or(NoLeaseNamespace)
}

/// What to do with the Lease as observed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// No Lease object yet: create it holding it.
    Create,
    /// Ours, or free/expired: write ourselves in as holder.
    Take { transition: bool },
    /// Someone else holds a valid lease.
    Wait,
}

/// Pure: whether `identity` may take the lease at `now`.
pub(crate) fn decide(lease: Option<&Lease>, identity: &str, now: Timestamp) -> Decision {
    let Some(spec) = lease.and_then(|l| l.spec.as_ref()) else {
        return if lease.is_none() {
            Decision::Create
        } else {
            Decision::Take { transition: true }
        };
    };
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder == identity {
        return Decision::Take { transition: false };
    }
    let expires = spec
        .renew_time
        .as_ref()
        .map(|t| t.0 + SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(0).into()));
    if holder.is_empty() || expires.is_none_or(|e| e <= now) {
        Decision::Take { transition: true }
    } else {
        Decision::Wait
    }
}

/// A Lease this process competes for.
pub(crate) struct LeaderLease {
    api: Api<Lease>,
    settings: LeaseSettings,
}

impl LeaderLease {
    pub(crate) fn new(client: kube::Client, settings: LeaseSettings) -> Self {
        Self {
            api: Api::namespaced(client, &settings.namespace),
            settings,
        }
    }

    fn spec(&self, now: Timestamp, previous: Option<&LeaseSpec>, transition: bool) -> LeaseSpec {
        lease_spec(
            &self.settings.identity,
            self.settings.duration,
            now,
            previous,
            transition,
        )
    }

    /// One attempt: true when we hold the lease afterwards.
    async fn try_acquire(&self) -> Result<bool, kube::Error> {
        let name = &self.settings.name;
        let current = self.api.get_opt(name).await?;
        let now = Timestamp::now();
        match decide(current.as_ref(), &self.settings.identity, now) {
            Decision::Wait => Ok(false),
            Decision::Create => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(now, None, true)),
                };
                match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Decision::Take { transition } => {
                let Some(mut lease) = current else {
                    return Ok(false);
                };
                lease.spec = Some(self.spec(now, lease.spec.as_ref(), transition));
                // resourceVersion is kept: a concurrent writer makes this a 409, not a tie.
                match self.api.replace(name, &PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Waits until this process holds the lease.
    pub(crate) async fn acquire(&self) {
        info!(lease = %self.settings.name, identity = %self.settings.identity, "waiting for the leader lease");
        loop {
            match self.try_acquire().await {
                Ok(true) => {
                    info!(lease = %self.settings.name, "acquired the leader lease");
                    return;
                }
                Ok(false) => {}
                Err(error) => warn!(%error, "leader lease not acquired"),
            }
            tokio::time::sleep(self.settings.retry).await;
        }
    }

    /// Renews forever; returns when the lease is lost or could not be renewed in time.
    pub(crate) async fn hold(&self) -> LeaseError {
        renew_until_lost(&self.settings, || self.try_acquire()).await
    }

    /// Gives the lease up so a standby takes over at once (graceful shutdown).
    pub(crate) async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.settings.name).await else {
            return;
        };
        let ours = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref())
            == Some(self.settings.identity.as_str());
        if !ours {
            return;
        }
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
        }
        match self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => info!(lease = %self.settings.name, "released the leader lease"),
            Err(error) => warn!(%error, "could not release the leader lease"),
        }
    }
}

/// Renews every `retry` through `attempt`. Leadership ends (the error is returned) once the
/// lease is another's, or when no renewal succeeded for `duration - retry`: every attempt is
/// bounded by that deadline, so a holder cut off from the API server stops acting, and stops
/// saying it leads, before a standby may take over.
async fn renew_until_lost<F, Fut>(settings: &LeaseSettings, mut attempt: F) -> LeaseError
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, kube::Error>>,
{
    let renew_within = settings.duration.saturating_sub(settings.retry);
    let failed = |reason: String| LeaseError::RenewFailed {
        name: settings.name.clone(),
        seconds: renew_within.as_secs(),
        reason,
    };
    let mut last_renewed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(settings.retry).await;
        let deadline = last_renewed + renew_within;
        match tokio::time::timeout_at(deadline, attempt()).await {
            Ok(Ok(true)) => last_renewed = tokio::time::Instant::now(),
            Ok(Ok(false)) => return LeaseError::Lost(settings.name.clone()),
            Ok(Err(source)) if tokio::time::Instant::now() + settings.retry < deadline => {
                warn!(error = %source, "leader lease renewal failed; retrying");
            }
            Ok(Err(source)) => return failed(source.to_string()),
            Err(_) => return failed("the API server did not answer".to_owned()),
        }
    }
}

/// A Lease held by `holder` for `duration`, renewed at `now`: taken over from another holder
/// (`transition`: acquired now, one more transition) or kept (`previous`'s acquire time).
pub(crate) fn lease_spec(
    holder: &str,
    duration: std::time::Duration,
    now: Timestamp,
    previous: Option<&LeaseSpec>,
    transition: bool,
) -> LeaseSpec {
    let transitions = previous.and_then(|s| s.lease_transitions).unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(holder.to_owned()),
        lease_duration_seconds: Some(i32::try_from(duration.as_secs()).unwrap_or(i32::MAX)),
        acquire_time: if transition {
            Some(MicroTime(now))
        } else {
            previous.and_then(|s| s.acquire_time.clone())
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions + i32::from(transition)),
        ..LeaseSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, renewed: i64, duration: i32) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: holder.map(Into::into),
                renew_time: Some(MicroTime(Timestamp::from_second(renewed).expect("time"))),
                lease_duration_seconds: Some(duration),
                ..LeaseSpec::default()
            }),
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).expect("time")
    }

    fn settings() -> LeaseSettings {
        LeaseSettings {
            namespace: "ns".into(),
            name: "lease".into(),
            identity: "me".into(),
            duration: Duration::from_secs(15),
            retry: Duration::from_secs(3),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_holder_whose_renewals_hang_gives_up_before_the_lease_expires() {
        let start = tokio::time::Instant::now();
        let mut attempts = 0;
        let error = renew_until_lost(&settings(), || {
            attempts += 1;
            let first = attempts == 1;
            async move {
                if first {
                    Ok(true)
                } else {
                    std::future::pending().await
                }
            }
        })
        .await;
        // Renewed at 3 s; the next attempt (at 6 s) hangs until 3 s + 12 s.
        assert_eq!(start.elapsed(), Duration::from_secs(15));
        assert!(
            error
                .to_string()
                .contains("within 12s: the API server did not answer"),
            "{error}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failed_renewals_are_retried_until_the_deadline() {
        let start = tokio::time::Instant::now();
        let error = renew_until_lost(&settings(), || async {
            Err(kube::Error::LinesCodecMaxLineLengthExceeded)
        })
        .await;
        // Attempts at 3 and 6 s fail and are retried; after the one at 9 s no other fits
        // before 12 s.
        assert_eq!(start.elapsed(), Duration::from_secs(9));
        assert!(matches!(error, LeaseError::RenewFailed { .. }), "{error}");
        let lost = renew_until_lost(&settings(), || async { Ok(false) }).await;
        assert!(matches!(lost, LeaseError::Lost(_)));
    }

    #[test]
    fn the_lease_namespace_is_the_given_one_else_the_watched_one_never_a_guess() {
        assert_eq!(
            lease_namespace(Some("op"), Some("ceph")).ok(),
            Some("op".into())
        );
        assert_eq!(
            lease_namespace(None, Some("ceph")).ok(),
            Some("ceph".into())
        );
        assert_eq!(
            lease_namespace(Some(""), Some("ceph")).ok(),
            Some("ceph".into())
        );
        let error = lease_namespace(None, None).expect_err("no namespace");
        assert!(error.to_string().contains("--lease-namespace"), "{error}");
        assert!(lease_namespace(Some(""), Some("")).is_err());
    }

    #[test]
    fn decisions() {
        assert_eq!(decide(None, "me", at(100)), Decision::Create);
        let theirs = lease(Some("other"), 100, 15);
        assert_eq!(decide(Some(&theirs), "me", at(110)), Decision::Wait);
        assert_eq!(
            decide(Some(&theirs), "me", at(115)),
            Decision::Take { transition: true }
        );
        assert_eq!(
            decide(Some(&lease(Some("me"), 100, 15)), "me", at(105)),
            Decision::Take { transition: false }
        );
        assert_eq!(
            decide(Some(&lease(None, 100, 15)), "me", at(101)),
            Decision::Take { transition: true }
        );
        assert_eq!(
            decide(Some(&lease(Some(""), 100, 15)), "me", at(101)),
            Decision::Take { transition: true }
        );
    }
}
