//! Disk replacements keeping the OSD id: what an admin asks for (the CephOSD's
//! `ceph.elemental.net/replace` annotation) and where each replacement stands
//! (`status.replacements`).
//!
//! The annotation lists one entry per line (or comma): `HOST:DATA` asks for the replacement of
//! that OSD's disk; `HOST:DATA=swapped` (or `swapped-<anything>`) also says the new disk is in.
//! A value changed to another `swapped…` after a failed prepare retries it. The annotation is
//! the CephOSD's, not the pod's: the pod is gone while the disk is swapped, and a CephOSD kept
//! in Git carries it like the rest of its spec.

use crate::crd::osd::OsdKey;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One replacement, from its request until the new disk's daemon is up and PGs are clean.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    /// The OSD key (`host:data`).
    pub key: String,
    /// The OSD id kept for the new disk.
    pub id: u32,
    pub phase: ReplacementPhase,
    /// When the replacement was asked for (first seen).
    pub started: Time,
    /// When it entered its phase.
    pub since: Time,
    /// What it waits for, or why it is refused or failed.
    pub message: String,
    /// PGs still to move (degraded, misplaced or backfilling), when Ceph said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgs_remaining: Option<u64>,
    /// The most PGs to move seen in this phase (what the ETA measures progress against).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgs_at_most: Option<u64>,
    /// When the data of this phase should be moved, at the pace since the phase began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta: Option<Time>,
    /// The admin's confirmation of the new disk acted on (the annotation's `swapped…` value): a
    /// prepare that failed is retried only for another one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_swapped: Option<String>,
}

/// Where a replacement stands.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
pub enum ReplacementPhase {
    /// The OSD is out; its data moves to other OSDs until Ceph says none needs it; then its
    /// pod stops (a removal's drain, in its update domain's turn).
    Draining,
    /// The pod is gone: the id is destroyed (CRUSH position and weight stay) once a fresh
    /// `safe-to-destroy` passes at the OSD map's epoch the destroy is made at.
    Destroying,
    /// The id is destroyed; no pod runs on the old disk until the new disk is confirmed.
    AwaitingDisk,
    /// The pod is back with `OSD_ID` set: its template prepares the new disk with that id.
    Preparing,
    /// The prepare ended in error: the id stays destroyed until another confirmation.
    PrepareFailed,
    /// The daemon is up with the same id and in; data moves back until every PG is clean.
    Backfilling,
    /// The new disk serves the OSD and every PG is clean.
    Done,
    /// Not started, and why (nothing was done).
    Refused,
}

impl ReplacementPhase {
    /// Whether the replacement is over (done or refused): it changes nothing any more.
    pub fn is_over(self) -> bool {
        matches!(self, Self::Done | Self::Refused)
    }

    /// Whether the id is destroyed in this phase: the replacement can no longer be called off.
    pub fn id_destroyed(self) -> bool {
        matches!(
            self,
            Self::AwaitingDisk | Self::Preparing | Self::PrepareFailed
        )
    }

    /// Whether the OSD's pod is kept away from the disk in this phase.
    pub fn withholds_pod(self) -> bool {
        matches!(
            self,
            Self::Draining | Self::Destroying | Self::AwaitingDisk | Self::PrepareFailed
        )
    }
}

impl fmt::Display for ReplacementPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One entry of the `replace` annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaceRequest {
    pub key: OsdKey,
    /// The confirmation that the new disk is in (`swapped…`), if given.
    pub swapped: Option<String>,
}

/// The confirmation word of a request: `swapped`, or `swapped-<anything>` to retry.
pub const SWAPPED: &str = "swapped";

/// The entries of a `replace` annotation's `value`, and what cannot be read in it (each
/// named).
pub fn replace_requests(value: &str) -> (Vec<ReplaceRequest>, Vec<String>) {
    let mut requests: Vec<ReplaceRequest> = Vec::new();
    let mut problems = Vec::new();
    for entry in value.split(['\n', ',']).map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        match request_of(entry) {
            Ok(request) => match requests.iter_mut().find(|r| r.key == request.key) {
                Some(known) if known.swapped != request.swapped && request.swapped.is_some() => {
                    known.swapped = request.swapped;
                }
                Some(_) => {}
                None => requests.push(request),
            },
            Err(why) => problems.push(format!("{entry:?}: {why}")),
        }
    }
    (requests, problems)
}

fn request_of(entry: &str) -> Result<ReplaceRequest, String> {
    let (key, swapped) = match entry.rsplit_once('=') {
        Some((key, word)) => {
            let word = word.trim();
            let good = word == SWAPPED
                || word
                    .strip_prefix(SWAPPED)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|token| !token.is_empty());
            if !good {
                return Err(format!(
                    "after '=' only `{SWAPPED}` or `{SWAPPED}-<token>` may follow, found {word:?}"
                ));
            }
            (key.trim(), Some(word.to_owned()))
        }
        None => (entry, None),
    };
    let Some((host, data)) = key.split_once(':') else {
        return Err("not an OSD key (`HOST:DATA`, e.g. `node-a:/dev/sdb`)".to_owned());
    };
    if host.is_empty() || !data.starts_with('/') {
        return Err("not an OSD key (`HOST:DATA`, e.g. `node-a:/dev/sdb`)".to_owned());
    }
    Ok(ReplaceRequest {
        key: OsdKey::new(host, data),
        swapped,
    })
}

/// The annotation value listing `requests`, one per line.
pub fn replace_annotation(requests: &[ReplaceRequest]) -> String {
    requests
        .iter()
        .map(|r| match &r.swapped {
            Some(word) => format!("{}={word}", r.key),
            None => r.key.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
