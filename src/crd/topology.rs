//! `spec.topology` and `spec.prePull`: update domains made of whole failure domains, and the
//! images of the next domains pulled onto their nodes ahead of their step.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// `spec.topology.bucketType` that lets Ceph choose: the widest bucket type every pool's
/// CRUSH rule spreads its replicas across.
pub const AUTO_BUCKET_TYPE: &str = "Auto";

/// A CRUSH bucket type name, or `Auto`.
pub(crate) const BUCKET_TYPE_PATTERN: &str = "^(Auto|[a-z][a-z0-9_-]{0,62})$";

/// The spellings of `Auto` other than `Auto` (`auto` would pass the pattern as a type name):
/// refused by the spec's CEL rule.
pub(crate) const AUTO_MISSPELT_PATTERN: &str = "^[aA][uU][tT][oO]$";

/// Why a misspelt `Auto` is refused.
pub(crate) const AUTO_MISSPELT: &str = "must be spelled Auto (capital A) to let Ceph choose \
                                        the bucket type: no CRUSH bucket type is called auto";

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of up to 63 characters.
pub(crate) const LABEL_KEY_PATTERN: &str = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$";

/// Which failure domains make the update domains of `updateDomain: Topology`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpec {
    /// The CRUSH bucket type whose buckets are the update domains (`rack`, `row`, `room`,
    /// `datacenter`, `zone`, …): the OSDs of this CephOSD under one such bucket are replaced
    /// together. `Auto`: the widest type every pool's CRUSH rule spreads its replicas across
    /// (needs the Ceph gate).
    #[schemars(length(min = 1, max = 63), regex(pattern = BUCKET_TYPE_PATTERN))]
    pub bucket_type: String,
    /// A node label whose value names each host's bucket (like
    /// `topology.kubernetes.io/zone`): the membership while the operator has no Ceph; with
    /// the Ceph gate each host's label must name the bucket CRUSH has it in, or the rollout
    /// halts naming the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 316), regex(pattern = LABEL_KEY_PATTERN))]
    pub topology_key: Option<String>,
}

impl TopologySpec {
    /// Whether Ceph chooses the bucket type.
    pub fn is_auto(&self) -> bool {
        self.bucket_type == AUTO_BUCKET_TYPE
    }
}

/// `auto`, `AUTO`, …: `Auto` in another case (the schema refuses it; a CephOSD stored before
/// may still have it).
pub(crate) fn misspells_auto(bucket_type: &str) -> bool {
    bucket_type != AUTO_BUCKET_TYPE && bucket_type.eq_ignore_ascii_case(AUTO_BUCKET_TYPE)
}

/// Default of `spec.prePull.deadlineSeconds`.
pub const DEFAULT_PRE_PULL_DEADLINE_SECONDS: i32 = 300;

/// Largest `spec.prePull.deadlineSeconds`: an hour pulls the largest image over a slow link; a
/// step held longer for a pull that does not end holds the whole rollout.
pub const MAX_PRE_PULL_DEADLINE_SECONDS: i32 = 3600;

/// Default of `spec.prePull.command`: found on the `PATH` of nearly every image.
pub const DEFAULT_PRE_PULL_COMMAND: &str = "true";

/// Pulling the new template's images onto the nodes of the next update domains before their
/// pods stop: one short-lived pod per node, owned by the CephOSD.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrePullSpec {
    /// The command each image runs in its pre-pull pod (default `["true"]`). Set it to a
    /// preflight such as `["ceph-osd", "--version"]`: a command that fails holds the rollout
    /// before any OSD of that node stops, like an image that cannot be pulled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub command: Option<Vec<String>>,
    /// Seconds an update domain waits for its nodes' pre-pull before its step goes ahead
    /// anyway (said in a Warning event and the status). Default 300, at most 3600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub deadline_seconds: Option<i32>,
    /// How many update domains after the current one are pulled ahead. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub domains_ahead: Option<i32>,
}

impl PrePullSpec {
    /// The command, and whether it was given (a given command is a preflight: its failure
    /// holds the rollout).
    pub fn command(&self) -> (Vec<String>, bool) {
        match &self.command {
            Some(command) if !command.is_empty() => (command.clone(), true),
            _ => (vec![DEFAULT_PRE_PULL_COMMAND.to_owned()], false),
        }
    }

    /// The deadline, within 1 s and [`MAX_PRE_PULL_DEADLINE_SECONDS`] (a larger value stored
    /// before the schema capped it is read as the cap).
    pub fn deadline(&self) -> k8s_openapi::jiff::SignedDuration {
        let seconds = self
            .deadline_seconds
            .unwrap_or(DEFAULT_PRE_PULL_DEADLINE_SECONDS)
            .clamp(1, MAX_PRE_PULL_DEADLINE_SECONDS);
        k8s_openapi::jiff::SignedDuration::from_secs(seconds.into())
    }

    pub fn domains_ahead(&self) -> usize {
        usize::try_from(self.domains_ahead.unwrap_or(1))
            .unwrap_or(1)
            .max(1)
    }
}

/// The spec's CEL rules tying `topology` to `updateDomain: Topology` and refusing a
/// misspelt `Auto`, naming the fields.
pub(crate) fn add_validations(spec_schema: &mut Value) {
    let rules = [
        json!({
            "rule": "(self.updateDomain == 'Topology') == has(self.topology)",
            "message": "spec.topology is required when spec.updateDomain is Topology, and only then",
            "fieldPath": ".topology",
        }),
        json!({
            "rule": format!(
                "!has(self.topology) || self.topology.bucketType == '{AUTO_BUCKET_TYPE}' || \
                 !self.topology.bucketType.matches('{AUTO_MISSPELT_PATTERN}')"
            ),
            "message": format!("spec.topology.bucketType {AUTO_MISSPELT}"),
            "fieldPath": ".topology.bucketType",
        }),
    ];
    match spec_schema["x-kubernetes-validations"].as_array_mut() {
        Some(existing) => existing.extend(rules),
        None => spec_schema["x-kubernetes-validations"] = json!(rules),
    }
}

#[cfg(test)]
mod tests;
