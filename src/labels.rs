//! Label and annotation keys on OSD pods, and the `pod-state` values. Shared with the
//! reference operator, so existing pods keep meaning what they meant.

/// Label selecting every pod of a CR: value `CephOSD-<cr-name>`.
pub const OWNER: &str = "ceph.elemental.net/owner";
pub const TEMPLATE_HASH: &str = "ceph.elemental.net/pod-template-hash";
pub const HOST: &str = "ceph.elemental.net/host";
pub const DATA: &str = "ceph.elemental.net/data";
pub const DB: &str = "ceph.elemental.net/db";
pub const WAL: &str = "ceph.elemental.net/wal";
pub const POD_STATE: &str = "ceph.elemental.net/pod-state";
/// On a pod, set by an admin: the OSD ids it runs (`3,7`), when Ceph cannot tell.
pub const OSD_IDS: &str = "ceph.elemental.net/osd-ids";
/// Label on the operator's OSD pods naming their update domain (see
/// [`update_domain_label_value`]): the disruption budget selects pods by it.
pub const UPDATE_DOMAIN: &str = "ceph.elemental.net/update-domain";

/// On a CephOSD, set by an admin (`kubectl ceph-osd finalize`): the release the Ceph
/// cluster's `require_osd_release` is to be raised to once every OSD and monitor runs it.
pub const FINALIZE_RELEASE: &str = "ceph.elemental.net/finalize-release";

/// On a CephOSD, set by an admin (`kubectl ceph-osd replace`): the OSDs whose disk is to be
/// replaced keeping their id, and the confirmation that the new disk is in (see
/// `crd::replacement`).
pub const REPLACE: &str = "ceph.elemental.net/replace";
/// On an OSD pod created to prepare a new disk: the OSD id to prepare it with (also in the
/// containers' [`OSD_ID_ENV`]).
pub const PREPARE_OSD_ID: &str = "ceph.elemental.net/prepare-osd-id";
/// The env variable of every container of such a pod: the template's prepare step passes it
/// as `ceph-volume lvm prepare --osd-id "$OSD_ID"`.
pub const OSD_ID_ENV: &str = "OSD_ID";

/// Label on the operator's image pre-pull pods (value `true`): they run no OSD and carry no
/// owner label, so nothing that selects OSD pods selects them; their CephOSD controls them.
pub const PRE_PULL: &str = "ceph.elemental.net/pre-pull";
/// On a pre-pull pod: the node it pulls onto.
pub const PRE_PULL_NODE: &str = "ceph.elemental.net/pre-pull-node";
/// On a pre-pull pod: the template hash whose images it pulls.
pub const PRE_PULL_TEMPLATE_HASH: &str = "ceph.elemental.net/pre-pull-template-hash";

/// Whether `pod` is one of the operator's image pre-pull pods.
pub fn is_pre_pull(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    (pod.metadata.labels.as_ref()).is_some_and(|l| l.get(PRE_PULL).is_some_and(|v| v == "true"))
}

const OWNER_PREFIX: &str = "CephOSD-";

/// The owner label value of the CephOSD named `cr_name`: `CephOSD-<name>`.
pub fn owner_label_value(cr_name: &str) -> String {
    format!("{OWNER_PREFIX}{cr_name}")
}

/// The name of the CephOSD an owner label value names, if it names one.
pub fn owner_named_by(label_value: &str) -> Option<&str> {
    label_value
        .strip_prefix(OWNER_PREFIX)
        .filter(|name| !name.is_empty())
}

/// The [`UPDATE_DOMAIN`] label value of the update domain `domain` (an OSD key or a host):
/// 16 hex digits of its SHA-256, a valid label value whatever the domain's spelling.
pub fn update_domain_label_value(domain: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(domain.as_bytes());
    hex::encode(&digest[..8])
}

/// Rollout state of a pod, kept in its `pod-state` annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PodState {
    /// Runs the current template (or an admin declared it good).
    UpToDate,
    /// Runs an older template; waits for its turn in the rollout.
    OutOfDate,
    /// Created by the operator; gates the rollout until Ready.
    WaitForReady,
}

impl PodState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UpToDate => "up-to-date",
            Self::OutOfDate => "out-of-date",
            Self::WaitForReady => "wait-for-ready",
        }
    }
}

impl std::fmt::Display for PodState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests;
