//! The `CephOSD` custom resource: spec and status types, and the CRD generated from them.
//!
//! The CRD is derived from these types and then adjusted as data (CEL rule on the name,
//! descriptions stripped inside the embedded Pod schema, `ports[].protocol` defaulted).
//!
//! Its parts: the rules on storage entries and on the pod template, numbers as the API server
//! treats them, the identity of an OSD (`host:data`) and the OSDs a spec asks for.

pub(crate) mod desired;
pub(crate) mod osd;
pub mod replacement;
pub(crate) mod rollout_controls;
pub(crate) mod server_numbers;
pub(crate) mod storage_rules;
pub(crate) mod template_rules;
pub mod topology;
pub(crate) mod update_domain;

use crate::crd::server_numbers::normalise_numbers;
use crate::crd::storage_rules::{DEVICE_PATH_PATTERN, HOST_PATTERN};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::SignedDuration;
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// API group of the CRD and prefix of every label and annotation key we own.
pub const GROUP: &str = "ceph.elemental.net";
/// Longest CR name whose owner label `CephOSD-<name>` still fits in 63 characters.
pub const MAX_NAME_LEN: usize = 55;

/// Desired state of a set of Ceph OSDs: which devices on which hosts, and the Pod to run for each.
// Several printer columns share `type_ = "integer"`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "ceph.elemental.net",
    version = "v1alpha1",
    kind = "CephOSD",
    root = "CephOsd",
    singular = "cephosd",
    plural = "cephosds",
    namespaced,
    status = "CephOsdStatus",
    shortname = "osds",
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.ready",
        description = "OSD pods Ready"
    ),
    printcolumn(
        name = "Up-to-date",
        type_ = "integer",
        json_path = ".status.updated",
        description = "OSD pods on the current template"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".status.desired",
        description = "OSDs in the spec"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "CephOSD runs one Pod per OSD on explicitly listed hosts and devices and rolls template changes out one update domain at a time."
)]
#[serde(rename_all = "camelCase")]
pub struct CephOsdSpec {
    /// Groups of hosts and the OSD devices each of those hosts carries (hosts × osds).
    pub storage: Vec<StorageEntry>,
    /// What is replaced at once during a rollout: one `OSD`, all OSDs of one `Host`, or all
    /// OSDs under one failure domain (`Topology`: a CRUSH bucket such as a rack, named in
    /// `topology`).
    pub update_domain: UpdateDomain,
    /// With `updateDomain: Topology`, which failure domains are the update domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<topology::TopologySpec>,
    /// When set, the new template's images are pulled onto the nodes of the next update
    /// domains before their pods stop (one short-lived pod per node); a pull that fails holds
    /// the rollout while every OSD still runs. Absent: no pre-pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_pull: Option<topology::PrePullSpec>,
    /// A complete core/v1 Pod (apiVersion, kind, metadata, spec) used for every OSD pod.
    /// Kept as raw JSON: the template hash must be computed over exactly what the API server
    /// returns, never over a typed round-trip that could drop or normalise fields.
    #[schemars(with = "Pod")]
    pub pod_template: Value,
    /// While true no replacement starts; missing OSD pods are still recreated. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Seconds a replacement must have been Ready before it counts as done (soak). Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_ready_seconds: Option<i32>,
    /// Seconds a replacement may take to become Ready before the CephOSD reports `Stalled`
    /// (the rollout stays halted either way). Default 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub progress_deadline_seconds: Option<i32>,
    /// How many update domains (OSDs or hosts) may be unavailable at once during a rollout:
    /// from the deletion of their old pods until their new pods are Ready (and soaked).
    /// Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_unavailable: Option<i32>,
    /// Whether each rollout step asks Ceph first (ok-to-stop, scoped noout, PGs clean before
    /// the next step): `Enabled` (default; off only while the operator has no Ceph
    /// configured, which the `CephGate` condition says) or `Skipped` (this CephOSD opts out;
    /// the condition says so too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceph_gate: Option<CephGate>,
    /// Whether the operator keeps a PodDisruptionBudget that node drains and the rollout
    /// share, counted in update domains: `Managed` (default; none is kept while a
    /// PodDisruptionBudget of someone else selects the OSD pods, which the
    /// `DisruptionBudget` condition says) or `Off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_budget: Option<DisruptionBudgetMode>,
    /// The last N out-of-date update domains in rollout order stay as they are (an integer,
    /// or a percentage of the update domains, rounded up, like `"10%"`): the rollout replaces
    /// domains while more than N are out of date. A recreated pod of a held domain gets the
    /// current template. Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// After each template change at most N update domains are replaced (an integer, or a
    /// percentage of the update domains, rounded up), then the rollout holds until
    /// `promotedTemplateHash` names the current template hash (`kubectl ceph-osd promote`).
    /// 0 (default): no canary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<IntOrString>,
    /// The template hash an admin released from the canary hold: a promotion names the hash,
    /// so it never releases a newer template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted_template_hash: Option<String>,
    /// Opt-in automatic finalize: once this CephOSD's OSDs have all run one release past the
    /// cluster's `require_osd_release` for this many seconds (a soak), the operator raises
    /// `require_osd_release` to it by itself, as `kubectl ceph-osd finalize` asks, and only
    /// when every OSD and monitor of the Ceph cluster runs it. After it no older release
    /// boots. Unset (default): finalize only when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub finalize_after_seconds: Option<i64>,
}

impl CephOsdSpec {
    /// A spec with every optional rollout control left at its default.
    pub fn new(
        storage: Vec<StorageEntry>,
        update_domain: UpdateDomain,
        pod_template: Value,
    ) -> Self {
        Self {
            storage,
            update_domain,
            topology: None,
            pre_pull: None,
            pod_template,
            paused: None,
            min_ready_seconds: None,
            progress_deadline_seconds: None,
            max_unavailable: None,
            ceph_gate: None,
            disruption_budget: None,
            partition: None,
            canary: None,
            promoted_template_hash: None,
            finalize_after_seconds: None,
        }
    }

    /// Whether the operator keeps this CephOSD's disruption budget.
    pub fn manages_disruption_budget(&self) -> bool {
        self.disruption_budget != Some(DisruptionBudgetMode::Off)
    }

    /// Whether this CephOSD opted out of the Ceph gate.
    pub fn skips_ceph_gate(&self) -> bool {
        self.ceph_gate == Some(CephGate::Skipped)
    }

    pub fn is_paused(&self) -> bool {
        self.paused.unwrap_or(false)
    }

    pub fn min_ready(&self) -> SignedDuration {
        SignedDuration::from_secs(self.min_ready_seconds.unwrap_or(0).max(0).into())
    }

    pub fn progress_deadline(&self) -> SignedDuration {
        SignedDuration::from_secs(self.progress_deadline_seconds.unwrap_or(600).max(1).into())
    }

    /// How many of `total` update domains `spec.partition` holds (0 when unset).
    pub fn partition_of(&self, total: usize) -> Result<usize, String> {
        (self.partition.as_ref()).map_or(Ok(0), |v| {
            rollout_controls::domains_of("partition", v, total)
        })
    }

    /// How many of `total` update domains a canary replaces before it holds (0: no canary).
    pub fn canary_of(&self, total: usize) -> Result<usize, String> {
        (self.canary.as_ref()).map_or(Ok(0), |v| rollout_controls::domains_of("canary", v, total))
    }

    pub fn max_unavailable(&self) -> usize {
        usize::try_from(self.max_unavailable.unwrap_or(1))
            .unwrap_or(1)
            .max(1)
    }
}

/// One `storage[]` entry: every host gets every OSD listed here.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct StorageEntry {
    /// Kubernetes node names (matched against the `kubernetes.io/hostname` label): lower-case
    /// DNS names, as Kubernetes requires of node names.
    #[schemars(
        length(min = 1),
        inner(length(min = 1, max = 253), regex(pattern = HOST_PATTERN))
    )]
    pub hosts: Vec<String>,
    /// The OSD devices present on each of the hosts.
    #[schemars(length(min = 1))]
    pub osds: Vec<OsdDevices>,
}

/// The devices of one OSD.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct OsdDevices {
    /// Primary (data) device path, e.g. `/dev/disk/by-path/...`: absolute and normalised (no
    /// `.` or `..` components, no repeated or trailing `/`), so one disk has one spelling.
    /// `host:data` is the OSD's identity.
    #[schemars(length(min = 1, max = 4096), regex(pattern = DEVICE_PATH_PATTERN))]
    pub data: String,
    /// Optional RocksDB device path (absolute and normalised, like `data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096), regex(pattern = DEVICE_PATH_PATTERN))]
    pub db: Option<String>,
    /// Optional write-ahead-log device path (absolute and normalised, like `data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096), regex(pattern = DEVICE_PATH_PATTERN))]
    pub wal: Option<String>,
}

/// The unit of a rolling update.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum UpdateDomain {
    /// Replace one OSD pod at a time.
    #[serde(rename = "OSD")]
    Osd,
    /// Replace all OSD pods of one host at a time.
    Host,
    /// Replace all OSD pods under one failure domain (`spec.topology`) at a time.
    Topology,
}

impl UpdateDomain {
    /// What one domain is called: `host` or `OSD`.
    pub fn noun(self) -> &'static str {
        match self {
            Self::Osd => "OSD",
            Self::Host => "host",
            Self::Topology => "failure domain",
        }
    }

    /// What several are called: `hosts` or `OSDs`.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Osd => "OSDs",
            Self::Host => "hosts",
            Self::Topology => "failure domains",
        }
    }
}

/// Whether rollout steps ask Ceph first.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum CephGate {
    /// Ask Ceph before each step, when the operator has Ceph configured.
    #[default]
    Enabled,
    /// Never ask Ceph for this CephOSD (said by the `CephGate` condition).
    Skipped,
}

/// Whether the operator keeps a disruption budget for a CephOSD.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DisruptionBudgetMode {
    /// A PodDisruptionBudget owned by the CephOSD admits at most `maxUnavailable` update
    /// domains down, drains and rollout together; the rollout waits for cordoned nodes' drains.
    #[default]
    Managed,
    /// No PodDisruptionBudget; drains are not coordinated with the rollout.
    Off,
}

/// The disruption budget as the operator last set it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetStatus {
    /// How many more update domains may go down now (by a drain or the rollout).
    pub allowed_domains: i64,
    /// The update domains down now (or reserved by the rollout), outside the budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable_domains: Vec<String>,
    /// Cordoned hosts whose OSD pods still run: their drains go before the next rollout step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drains_waiting: Vec<String>,
}

/// A rollout step under way as Ceph saw it before the stop: kept in the status so that a
/// restarted or new leader finishes it and clears exactly its own `noout`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CephStep {
    /// The OSD keys (`host:data`) whose pods the step takes down.
    pub keys: Vec<String>,
    /// Each OSD stopped, with its `up_from` epoch before the stop: the step is over when each
    /// is up with a newer one (a new daemon booted) and every PG is clean.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub osds: Vec<StepOsd>,
    /// The OSD ids whose `noout` this step set or took over from the step before it: cleared
    /// when it ends or is held too long.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noout: Vec<u32>,
    /// When the step started.
    pub started: Time,
    /// Set when the step is a removal's drain: its OSDs left the spec, are marked out, and
    /// their pods stop only once Ceph says no PG needs them (no `noout`). Absent: a rollout
    /// step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<StepDrain>,
    /// With `updateDomain: Topology`: each failure domain the step takes down, with its hosts
    /// when the step started. A host that Ceph's CRUSH map (or its label) puts elsewhere while
    /// the step is open halts the rollout, named, until the step ends.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub domains: BTreeMap<String, Vec<String>>,
}

/// The failure domains of `updateDomain: Topology`, as last resolved.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailureDomainsStatus {
    /// The bucket type (`Auto` resolved), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_type: Option<String>,
    /// Each failure domain's hosts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub buckets: BTreeMap<String, Vec<String>>,
    /// Hosts in no known failure domain, each with why (the rollout halts on them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unplaced: BTreeMap<String, String>,
}

/// A removal's drain under way.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepDrain {
    /// Each leaving key's OSD ids.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ids: BTreeMap<String, Vec<u32>>,
    /// The ids the operator marked out (they were in): marked in again when their key
    /// returns to the spec while the step is open; an id an admin had out stays out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marked_out: Vec<u32>,
}

/// An OSD that is `out` in Ceph, and who marked it out.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OsdOut {
    pub id: u32,
    /// Its OSD key (`host:data`).
    pub key: String,
    /// `Operator` (a drain marked it out) or `Other` (an admin, or Ceph's down-out interval).
    pub marked_by: MarkedBy,
    /// Since when the operator knows it out.
    pub since: Time,
}

/// Who marked an OSD out.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum MarkedBy {
    /// The operator, for a removal's drain: it marks the OSD in again once its key is back.
    Operator,
    /// Someone else (an admin's `ceph osd out`, or Ceph's down-out interval): left alone.
    Other,
}

/// One OSD a step stops.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepOsd {
    pub id: u32,
    pub up_from: u64,
}

/// Observed state, written by the operator once per reconcile, and only when it changed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CephOsdStatus {
    /// The `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The current `pod-template-hash` of `spec.podTemplate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_hash: Option<String>,
    /// OSDs the spec asks for.
    #[serde(default)]
    pub desired: i64,
    /// OSDs with a running (not terminating) pod.
    #[serde(default)]
    pub current: i64,
    /// OSD pods whose Ready condition is True.
    #[serde(default)]
    pub ready: i64,
    /// OSD pods on the current template and devices.
    #[serde(default)]
    pub updated: i64,
    /// OSD pods waiting to be replaced.
    #[serde(default)]
    pub out_of_date: i64,
    /// Pods created by the operator and not yet Ready (and soaked).
    #[serde(default)]
    pub unready: i64,
    /// Pods with the owner label that the operator deletes (invalid, duplicate or ended).
    #[serde(default)]
    pub invalid: i64,
    /// Pods with the owner label that another controller controls: never deleted, patched
    /// or counted as OSD pods; no pod is created for a disk such a pod holds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub foreign: i64,
    /// The names of those pods (each is announced by one `ForeignPod` event).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_pods: Vec<String>,
    /// OSDs still run by a ReplicaSet of the Ansible operator (replaced by the rollout).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub migrating: i64,
    /// Pods of OSDs no longer in the spec: removed one update domain at a time, like a
    /// rollout (never while paused).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub superfluous: i64,
    /// Ready | Progressing | Paused | Stalled | Error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// OSDs whose pod the scheduler cannot place, with its reason (each is announced by one
    /// `Unschedulable` event): typically a host without a Node of that name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unschedulable: Vec<String>,
    /// The update domains (OSD keys or hosts) being replaced or recreated now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub current_update: Vec<String>,
    /// Ready, Progressing, Stalled, InvalidSpec, Migrating, CephGate, DisruptionBudget, PrePull
    /// and OsdsIn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The OSD ids each OSD key (`host:data`) runs, learnt from `ceph osd metadata` while those
    /// OSDs were up: a replacement, crash-looping or adopted pod stays mapped.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub osd_ids: BTreeMap<String, Vec<u32>>,
    /// The rollout step under way that Ceph was asked about, until Ceph reports it done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceph_step: Option<CephStep>,
    /// OSDs that are `out` in Ceph: those the operator marked out (a drain), kept after the
    /// drain ends until Ceph has them `in` again or no longer has them (purged or destroyed;
    /// marked in by the operator once their key is back in the spec and their daemon up), and
    /// those of the spec's keys someone else has out (the `OsdsIn` condition names them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub osds_out: Vec<OsdOut>,
    /// With `updateDomain: Topology`: the failure domain each host is in, as the rollout
    /// steps through them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domains: Option<FailureDomainsStatus>,
    /// The disruption budget shared by node drains and the rollout, while the operator keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetStatus>,
    /// The update domains that run the current template once the rollout reaches its cut
    /// (all of them, less those `partition` or a canary hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_updated_domains: Option<i64>,
    /// Measurements of the latest rollout, from which its remaining time is estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutProgress>,
    /// The Ceph releases a release upgrade involves, as Ceph last said them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub releases: Option<ReleasesStatus>,
    /// Disk replacements keeping the OSD id (the `ceph.elemental.net/replace` annotation),
    /// each with its phase; a finished one stays while the annotation still names its key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replacements: Vec<replacement::Replacement>,
}

/// The Ceph releases of this CephOSD's OSDs, of its template's image and of the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleasesStatus {
    /// This CephOSD's OSDs by the release their daemon last reported (`osd metadata`), as
    /// last read (at each rollout step and finalize); `unknown`: never reported one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub running: BTreeMap<String, i64>,
    /// The release the template's image reports (`ceph-osd --version` in its pre-pull pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The template hash `target` was reported for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_template_hash: Option<String>,
    /// The Ceph cluster's `require_osd_release`: no older release boots; it never goes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_osd_release: Option<String>,
    /// Whether the template can go back to the release the OSDs run: true only while an
    /// upgrade to `target` is under way and no OSD of this CephOSD runs a release newer than
    /// `requireOsdRelease` (data a newer release opened, an older one cannot); no release
    /// older than `requireOsdRelease` boots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_possible: Option<bool>,
    /// Since when this CephOSD's OSDs all run one release past `requireOsdRelease` (the soak
    /// of `spec.finalizeAfterSeconds` counts from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgraded_since: Option<Time>,
}

/// The latest rollout as measured: one record per template hash, replaced when the
/// template changes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgress {
    /// The template hash being rolled out.
    pub template_hash: String,
    /// When the first update domain of this template was seen out of date or started.
    pub started: Option<Time>,
    /// Seconds the rollout was paused (`spec.paused`) while domains waited.
    #[serde(default)]
    pub paused_seconds: i64,
    /// Since when it is paused, while it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_since: Option<Time>,
    /// Update domains started under this template (what a canary counts).
    #[serde(default)]
    pub domains_started: i64,
    /// Update domains whose new pods are Ready (and soaked).
    #[serde(default)]
    pub domains_done: i64,
    /// Update domains this rollout replaces in all: done, under way and still waiting.
    #[serde(default)]
    pub domains_eligible: i64,
    /// Out-of-date update domains held by `partition` or a canary hold.
    #[serde(default)]
    pub domains_held: i64,
    /// The update domains under way, each with when it started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_progress: Vec<DomainStart>,
    /// Seconds each of the last (at most 10) finished update domains took, from the deletion
    /// of the old pods to the new pods Ready and soaked; the newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_domain_seconds: Vec<i64>,
    /// The median domain duration of the rollout before this one, if it measured any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_median_seconds: Option<i64>,
}

/// An update domain under way, and when it started.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainStart {
    pub domain: String,
    pub started: Time,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One word for the state of a CephOSD (the `PHASE` column).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    Ready,
    Progressing,
    Paused,
    Stalled,
    Error,
}

/// `namespace/name`: how logs, the retry backoff and the write expectations name a CephOSD.
pub(crate) fn object_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl CephOsd {
    /// This CephOSD's [`object_key`].
    pub(crate) fn object_key(&self) -> String {
        object_key(&self.namespace().unwrap_or_default(), &self.name_any())
    }
}

/// Why the CRD could not be produced from the types.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("cannot convert the derived CRD: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot write the CRD as YAML: {0}")]
    Yaml(String),
    #[error("the derived CRD has no schema at {0}")]
    NoSchema(&'static str),
}

/// The CRD as installed: derived from the types, then adjusted (see module docs).
pub fn custom_resource_definition() -> Result<CustomResourceDefinition, CrdError> {
    let mut crd = serde_json::to_value(CephOsd::crd())?;
    adjust_schema(&mut crd);
    Ok(serde_json::from_value(crd)?)
}

/// The CRD as a YAML document (what `ceph-osd-operator crd` prints).
pub fn custom_resource_definition_yaml() -> Result<String, CrdError> {
    serde_saphyr::to_string(&custom_resource_definition()?)
        .map_err(|e| CrdError::Yaml(e.to_string()))
}

/// The schema at `pointer` of the installed CRD.
fn crd_schema_at(pointer: &'static str) -> Result<Value, CrdError> {
    let crd = serde_json::to_value(custom_resource_definition()?)?;
    crd.pointer(pointer)
        .cloned()
        .ok_or(CrdError::NoSchema(pointer))
}

/// The openAPIV3 schema of a whole CephOSD, as the API server enforces it.
pub fn cephosd_schema() -> Result<Value, CrdError> {
    crd_schema_at(SCHEMA_POINTER)
}

/// The openAPIV3 schema of a full core/v1 Pod as embedded in `spec.podTemplate`
/// (descriptions stripped, `ports[].protocol` defaulted), without the CephOSD's own rules on
/// the template.
pub fn pod_schema() -> Result<Value, CrdError> {
    let mut schema = crd_schema_at(POD_TEMPLATE_POINTER)?;
    if let Some(schema) = schema.as_object_mut() {
        schema.remove("x-kubernetes-validations");
    }
    Ok(schema)
}

/// Makes a pod template look as the API server will store it: fields unknown to the embedded
/// Pod schema pruned, schema defaults (`ports[].protocol: TCP`) applied, numbers written as
/// the server writes them (`cpu: 1.0` stored as `cpu: 1`). An offline preview then hashes
/// exactly what the running operator will hash.
pub fn apply_server_defaults(pod_template: &mut Value) -> Result<(), CrdError> {
    conform_to_schema(pod_template, &pod_schema()?);
    normalise_numbers(pod_template);
    Ok(())
}

/// Structural pruning and defaulting of `value` against an openAPIV3 `schema`.
fn conform_to_schema(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                if schema.get("x-kubernetes-preserve-unknown-fields") != Some(&json!(true)) {
                    map.retain(|key, _| properties.contains_key(key));
                }
                for (key, child) in map.iter_mut() {
                    if let Some(child_schema) = properties.get(key) {
                        conform_to_schema(child, child_schema);
                    }
                }
                for (key, property) in properties {
                    if let Some(default) = property.get("default") {
                        map.entry(key.clone()).or_insert_with(|| default.clone());
                    }
                }
            } else if let Some(values) =
                schema.get("additionalProperties").filter(|s| s.is_object())
            {
                for child in map.values_mut() {
                    conform_to_schema(child, values);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    conform_to_schema(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

const SCHEMA_POINTER: &str = "/spec/versions/0/schema/openAPIV3Schema";
const SPEC_POINTER: &str = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
const POD_TEMPLATE_POINTER: &str =
    "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/podTemplate";

fn adjust_schema(crd: &mut Value) {
    crd["spec"]["names"]["listKind"] = json!("CephOSDList");
    if let Some(root) = crd.pointer_mut(SCHEMA_POINTER) {
        root["x-kubernetes-validations"] = json!([{
            "rule": format!("self.metadata.name.size() <= {MAX_NAME_LEN}"),
            "message": format!(
                "metadata.name must be at most {MAX_NAME_LEN} characters: \
                 the owner label CephOSD-<name> on every OSD pod must fit in 63"
            ),
        }]);
    }
    if let Some(pod) = crd.pointer_mut(POD_TEMPLATE_POINTER) {
        strip_descriptions(pod);
        for containers in ["containers", "initContainers"] {
            let pointer = format!("/properties/spec/properties/{containers}/items/properties/ports/items/properties/protocol");
            if let Some(protocol) = pod.pointer_mut(&pointer) {
                protocol["default"] = json!("TCP");
            }
        }
        pod["description"] = json!(
            "A complete core/v1 Pod (apiVersion, kind, metadata, spec) used for every OSD pod. \
             Changing it rolls the OSD pods one update domain at a time. The operator computes, \
             for each OSD, what the template may therefore not set: the label \
             ceph.elemental.net/owner; the annotations ceph.elemental.net/pod-template-hash, \
             host, data, db, wal and pod-state; finalizers; spec.nodeName; a \
             kubernetes.io/hostname nodeSelector; and a required node affinity (use \
             nodeSelector or a preferred node affinity to constrain nodes further)."
        );
        pod["x-kubernetes-validations"] = template_rules::cel_validations();
    }
    rollout_controls::add_validations(crd);
    if let Some(spec) = crd.pointer_mut(SPEC_POINTER) {
        topology::add_validations(spec);
    }
    if let Some(root) = crd.pointer_mut(SCHEMA_POINTER) {
        server_formats(root);
    }
}

/// Unsigned integer formats (schemars' `uint32`, `uint64`) as formats the API server knows:
/// `int64` bounded to the type's range (it warns about a format it does not know on every
/// apply, and stores integers as int64 anyway).
fn server_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let bound = match map.get("format").and_then(Value::as_str) {
                Some("uint32") => Some(Some(u32::MAX)),
                Some("uint64") => Some(None),
                _ => None,
            };
            if let Some(max) = bound {
                map.insert("format".into(), json!("int64"));
                map.insert("minimum".into(), json!(0));
                if let Some(max) = max {
                    map.insert("maximum".into(), json!(max));
                }
            }
            map.values_mut().for_each(server_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(server_formats),
        _ => {}
    }
}

/// Removes `description` keys from a schema tree (keeps the CRD far below the 256 KiB
/// limit of client-side `kubectl apply`). Property *names* called `description` survive.
fn strip_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("description").is_some_and(Value::is_string) {
                map.remove("description");
            }
            for (key, child) in map.iter_mut() {
                if key == "properties" {
                    if let Value::Object(props) = child {
                        props.values_mut().for_each(strip_descriptions);
                    }
                } else {
                    strip_descriptions(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
