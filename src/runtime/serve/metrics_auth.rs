//! Who may read `/metrics`, decided as Kubernetes components decide it for their own: the
//! request's bearer token is authenticated by the API server (TokenReview) and the user it
//! names must be allowed `get` on the non-resource URL `/metrics` (SubjectAccessReview).
//!
//! Decisions are cached for 10 s (at most 1024 tokens, by digest). When the API server cannot
//! answer, the request gets 503 and nothing is cached: the client's credentials may be fine,
//! so it is told to retry rather than that they are wrong (401), and it is never let in.

use crate::runtime::serve::review_cache::{Digest, ReviewCache};
use hyper::header::HeaderValue;
use hyper::StatusCode;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::Client;
use sha2::Digest as _;
use std::time::Duration;
use tracing::{debug, warn};

/// The path whose reads are checked, as the SubjectAccessReview names it.
pub(crate) const METRICS_PATH: &str = "/metrics";
const CACHE_TTL: Duration = Duration::from_secs(10);
const CACHE_CAPACITY: usize = 1024;
/// Both reviews together; a scrape does not wait longer on an API server that hangs.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(5);

/// The outcome for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Allowed,
    /// No bearer token, or one the API server does not accept: 401.
    Unauthenticated,
    /// A known user without `get` on `/metrics`: 403.
    Forbidden,
    /// The reviews failed or timed out: 503.
    Unavailable,
}

impl Verdict {
    /// The status and text of a refusal; None when allowed.
    pub(crate) fn refusal(self) -> Option<(StatusCode, &'static str)> {
        match self {
            Self::Allowed => None,
            Self::Unauthenticated => Some((StatusCode::UNAUTHORIZED, "unauthorized\n")),
            Self::Forbidden => Some((StatusCode::FORBIDDEN, "forbidden: get /metrics\n")),
            Self::Unavailable => Some((
                StatusCode::SERVICE_UNAVAILABLE,
                "cannot check credentials now; retry\n",
            )),
        }
    }
}

/// Checks `/metrics` requests against the API server of `client`.
pub struct MetricsAuth {
    client: Client,
    cache: ReviewCache<Verdict>,
}

impl MetricsAuth {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            cache: ReviewCache::new(CACHE_TTL, CACHE_CAPACITY),
        }
    }

    /// The verdict for a request with this `Authorization` header.
    pub(crate) async fn check(&self, authorization: Option<&HeaderValue>) -> Verdict {
        let Some(token) = authorization.and_then(bearer_token) else {
            return Verdict::Unauthenticated;
        };
        let key: Digest = sha2::Sha256::digest(token.as_bytes()).into();
        if let Some(verdict) = self.cache.get(&key) {
            return verdict;
        }
        let verdict = match tokio::time::timeout(REVIEW_TIMEOUT, self.review(token)).await {
            Ok(Ok(verdict)) => verdict,
            Ok(Err(error)) => {
                warn!(%error, "cannot check the credentials of a /metrics request");
                return Verdict::Unavailable;
            }
            Err(_) => {
                warn!(timeout = ?REVIEW_TIMEOUT, "cannot check the credentials of a /metrics request: the API server did not answer");
                return Verdict::Unavailable;
            }
        };
        self.cache.insert(key, verdict);
        verdict
    }

    async fn review(&self, token: &str) -> Result<Verdict, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_owned(),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        let (Some(true), Some(user)) = (status.authenticated, status.user) else {
            debug!(
                error = status.error.as_deref().unwrap_or(""),
                "/metrics: token not authenticated"
            );
            return Ok(Verdict::Unauthenticated);
        };
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid,
                groups: user.groups,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(METRICS_PATH.to_owned()),
                    verb: Some("get".to_owned()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let decided = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await?;
        if decided.status.is_some_and(|s| s.allowed) {
            Ok(Verdict::Allowed)
        } else {
            debug!(
                user = user.username.as_deref().unwrap_or(""),
                "/metrics: not allowed"
            );
            Ok(Verdict::Forbidden)
        }
    }
}

/// The token of `Authorization: Bearer <token>` (the scheme in any case).
fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let (scheme, token) = value.to_str().ok()?.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests;
