//! The API permissions this process needs, asked of the API server at start
//! (SelfSubjectAccessReview, which every authenticated user may create), so that a missing RBAC
//! rule is named in the log at once instead of surfacing as failing watches and writes.

use crate::runtime::serve::lease::LeaseSettings;
use futures::future::join_all;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::Client;
use std::fmt;
use tracing::{error, info, warn};

/// One permission: `verb` on `group`/`resource`, in `namespace` (None: cluster-wide), limited
/// to the object `name` where given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Permission {
    pub(crate) verb: &'static str,
    pub(crate) group: &'static str,
    pub(crate) resource: &'static str,
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            String::new()
        } else {
            format!(".{}", self.group)
        };
        write!(f, "{} {}{group}", self.verb, self.resource)?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " in namespace {ns}"),
            None => write!(f, " cluster-wide"),
        }
    }
}

/// What `run` calls, for an operator watching `watched` (None: every namespace), with the
/// leader `lease`, the Ceph clusters' step locks in `ceph_lock` (a namespace, with the Ceph
/// gate) and, when `metrics_auth`, reviewing the credentials of `/metrics` readers.
pub(crate) fn needed(
    watched: Option<&str>,
    lease: Option<&LeaseSettings>,
    ceph_lock: Option<&str>,
    metrics_auth: bool,
) -> Vec<Permission> {
    let at = |verb, group, resource, namespace: Option<&str>, name: Option<&str>| Permission {
        verb,
        group,
        resource,
        namespace: namespace.map(str::to_owned),
        name: name.map(str::to_owned),
    };
    let mut needed = Vec::new();
    for verb in ["get", "list", "watch", "create", "delete", "patch"] {
        needed.push(at(verb, "", "pods", watched, None));
    }
    for verb in ["get", "list", "watch", "delete"] {
        needed.push(at(verb, "apps", "replicasets", watched, None));
    }
    // Each CephOSD's PodDisruptionBudget; anyone's is watched (it may select OSD pods).
    for verb in ["get", "list", "watch", "create", "delete", "patch"] {
        needed.push(at(verb, "policy", "poddisruptionbudgets", watched, None));
    }
    // Cordoned nodes: their drains go before the next rollout step.
    for verb in ["list", "watch"] {
        needed.push(at(verb, "", "nodes", None, None));
    }
    // A disk listed by two CephOSDs belongs to the older one, in whatever namespace.
    for verb in ["get", "list", "watch"] {
        needed.push(at(verb, "ceph.elemental.net", "cephosds", None, None));
    }
    needed.push(at(
        "patch",
        "ceph.elemental.net",
        "cephosds/status",
        watched,
        None,
    ));
    // The operator's finalizer on each CephOSD it reconciles; whether a deleted one's
    // namespace is being deleted too.
    needed.push(at("patch", "ceph.elemental.net", "cephosds", watched, None));
    needed.push(at("get", "", "namespaces", watched, watched));
    for verb in ["create", "patch"] {
        needed.push(at(verb, "events.k8s.io", "events", watched, None));
    }
    if let Some(lease) = lease {
        let (ns, name) = (Some(lease.namespace.as_str()), Some(lease.name.as_str()));
        needed.push(at("get", "coordination.k8s.io", "leases", ns, name));
        needed.push(at("update", "coordination.k8s.io", "leases", ns, name));
        needed.push(at("create", "coordination.k8s.io", "leases", ns, None));
    }
    // The step lock's name holds the Ceph cluster's fsid: any Lease of its namespace.
    if let Some(ns) = ceph_lock {
        for verb in ["get", "update", "create"] {
            needed.push(at(verb, "coordination.k8s.io", "leases", Some(ns), None));
        }
        // The Kubernetes cluster's identity, in the lock's place recorded in Ceph.
        needed.push(at("get", "", "namespaces", None, Some("kube-system")));
    }
    if metrics_auth {
        needed.push(at(
            "create",
            "authentication.k8s.io",
            "tokenreviews",
            None,
            None,
        ));
        needed.push(at(
            "create",
            "authorization.k8s.io",
            "subjectaccessreviews",
            None,
            None,
        ));
    }
    needed
}

/// Asks the API server about every permission `run` needs and logs, as an error, each one it
/// denies. Never fails: a review that cannot be made is a warning, and the operator goes on
/// (a rule granted later takes effect without a restart).
pub async fn report_missing_permissions(
    client: Client,
    watched: Option<String>,
    lease: Option<LeaseSettings>,
    ceph_lock: Option<String>,
    metrics_auth: bool,
) {
    let needed = needed(
        watched.as_deref(),
        lease.as_ref(),
        ceph_lock.as_deref(),
        metrics_auth,
    );
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client);
    let answers = join_all(needed.iter().map(|p| allowed(&reviews, p))).await;
    let mut missing = 0;
    for (permission, answer) in needed.iter().zip(answers) {
        match answer {
            Ok(true) => {}
            Ok(false) => {
                missing += 1;
                error!(permission = %permission, "missing permission: the operator's RBAC does not allow {permission}; what needs it will fail until it is granted (see deploy/README.md, RBAC)");
            }
            Err(e) => {
                warn!(error = %e, "cannot check the operator's permissions");
                return;
            }
        }
    }
    if missing == 0 {
        info!(
            checked = needed.len(),
            "the operator's RBAC allows every call it makes"
        );
    }
}

async fn allowed(
    reviews: &Api<SelfSubjectAccessReview>,
    permission: &Permission,
) -> Result<bool, kube::Error> {
    let (resource, subresource) = match permission.resource.split_once('/') {
        Some((resource, sub)) => (resource, Some(sub.to_owned())),
        None => (permission.resource, None),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(permission.verb.to_owned()),
                group: Some(permission.group.to_owned()),
                resource: Some(resource.to_owned()),
                subresource,
                namespace: permission.namespace.clone(),
                name: permission.name.clone(),
                ..ResourceAttributes::default()
            }),
            non_resource_attributes: None,
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = reviews.create(&PostParams::default(), &review).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

#[cfg(test)]
mod tests;
