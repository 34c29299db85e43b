//! `ceph osd df` and the recovery rate of `ceph status`, parsed: what a disk replacement moves
//! (the OSD's data and PGs) and how fast Ceph moves data now. Pure: bytes in, numbers or an
//! error naming the field out.

use super::answers::{parse, ParseError};
use super::osd_id::OsdId;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One OSD's use, as `osd df` says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsdUsage {
    /// Bytes stored (data, omap and metadata).
    pub bytes_used: u64,
    /// PGs mapped to it.
    pub pgs: u64,
    /// `up` or `down` (`destroyed` OSDs are listed too).
    pub status: String,
}

#[derive(Deserialize)]
struct RawOsdDf {
    nodes: Vec<RawNode>,
}

#[derive(Deserialize)]
struct RawNode {
    id: u32,
    #[serde(default)]
    kb_used: u64,
    #[serde(default)]
    pgs: u64,
    #[serde(default)]
    status: String,
}

/// Parses `ceph osd df -f json`.
pub fn parse_osd_df(json: &[u8]) -> Result<BTreeMap<OsdId, OsdUsage>, ParseError> {
    let raw: RawOsdDf = parse(json)?;
    Ok(raw
        .nodes
        .into_iter()
        .map(|n| {
            let usage = OsdUsage {
                bytes_used: n.kb_used.saturating_mul(1024),
                pgs: n.pgs,
                status: n.status,
            };
            (OsdId(n.id), usage)
        })
        .collect())
}

#[derive(Deserialize)]
struct RawStatus {
    pgmap: RawPgMap,
}

#[derive(Deserialize)]
struct RawPgMap {
    /// Present only while Ceph recovers or backfills.
    #[serde(default)]
    recovering_bytes_per_sec: u64,
}

/// The bytes per second Ceph recovers now, from `ceph status -f json` (0: nothing moves).
pub fn parse_recovery_rate(json: &[u8]) -> Result<u64, ParseError> {
    let raw: RawStatus = parse(json)?;
    Ok(raw.pgmap.recovering_bytes_per_sec)
}

#[cfg(test)]
mod tests;
